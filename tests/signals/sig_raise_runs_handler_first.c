/*
 * sig_raise_runs_handler_first — raise() returns only after the handler of
 * the signal it sent has run (POSIX: raise(sig) is pthread_kill(
 * pthread_self(), sig), and a signal sent to the calling thread and not
 * blocked is delivered before the call returns), however busy the other
 * threads keep the process.
 *
 * Invariant:
 *   - 20,000 raises of SIGUSR1 from one thread while four others yield
 *     in a loop (under Weft on two VPs where the program may have them:
 *     the runtime's lock is then held by the other VP most of the time):
 *     after each raise the handler's count went up by exactly one;
 *   - raise of a signal the thread blocks returns 0 and runs nothing; the
 *     handler runs before the pthread_sigmask that unblocks it returns;
 *   - raise(0) is 0; raise(-1) and raise(NSIG) are -1 with EINVAL.
 * (Under two VPs, glibc's raise — a tgkill to the kernel thread — let
 * 98 % of such raises return first: the dispatcher deferred the signal,
 * over libc's code, while the other VP held the runtime's lock.)
 */
#include "sig_test.h"

static volatile int hits, stop;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	hits = hits + 1;
}

static void *hammer(void *arg)
{
	while (!stop)
		sched_yield();
	return NULL;
}

static void *raiser(void *arg)
{
	for (int i = 0; i < 20000 / TEST_SCALE; i++) {
		int before = hits;
		CHECK_OK(raise(SIGUSR1));
		if (hits != before + 1) {
			fprintf(stderr, "raise %d returned with the handler's count at %d, not %d\n", i,
				hits, before + 1);
			exit(1);
		}
	}
	/* blocked: pending, then delivered as the unblocking call returns */
	sig_mask1(SIG_BLOCK, SIGUSR1);
	int before = hits;
	CHECK_OK(raise(SIGUSR1));
	CHECK_EQ(hits, before);
	sigset_t pend;
	CHECK_OK(sigpending(&pend));
	CHECK_EQ(sigismember(&pend, SIGUSR1), 1);
	sig_mask1(SIG_UNBLOCK, SIGUSR1);
	CHECK_EQ(hits, before + 1);
	CHECK_OK(raise(0));
	errno = 0;
	CHECK_EQ(raise(-1), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(raise(NSIG), -1);
	CHECK_EQ(errno, EINVAL);
	return NULL;
}

int main(void)
{
#ifndef SIG_NPTL
	int e = weft_vps_set(2);
	CHECK(e == 0 || e == ENOTSUP);
#endif
	sig_on(SIGUSR1, on_usr1, 0, 0);
	pthread_t h[4], r;
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&h[i], NULL, hammer, NULL));
	CHECK_OK(pthread_create(&r, NULL, raiser, NULL));
	CHECK_OK(pthread_join(r, NULL));
	stop = 1;
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_join(h[i], NULL));
	return 0;
}
