/*
 * sig_waits_park_only_caller — the calls that wait for a signal park only
 * their caller.
 *
 * Invariant: while one thread waits in sigwait, sigwaitinfo, sigtimedwait,
 * sigsuspend or pause (and sigtimedwait with nothing coming), a counting
 * thread keeps counting; each wait ends with the right result: sigwait and
 * sigwaitinfo return the signal a third thread sent with kill(getpid())
 * after 100 ms (si_code SI_USER, si_pid ours), sigwaitinfo/sigtimedwait a
 * queued one with its value, sigtimedwait with nothing sent fails with
 * EAGAIN after its 100 ms timeout (not before; well within 1 s),
 * sigsuspend and pause return -1/EINTR after the handler ran on the
 * waiting thread.
 */
#include "sig_test.h"

enum kind { K_SIGWAIT, K_SIGWAITINFO, K_SIGTIMEDWAIT, K_TIMEOUT, K_SIGSUSPEND, K_PAUSE, NKIND };
static const char *const kinds[] = { "sigwait", "sigwaitinfo", "sigtimedwait", "sigtimedwait-timeout",
				     "sigsuspend", "pause" };

struct sender { int kind; pthread_t target; };

static void *send_later(void *arg)
{
	struct sender *s = arg;
	sig_sleep_ms(100);
	switch (s->kind) {
	case K_SIGWAIT:
	case K_SIGWAITINFO:
		CHECK_OK(kill(getpid(), SIGUSR1));
		break;
	case K_SIGTIMEDWAIT: {
		union sigval v = { .sival_int = 99 };
		CHECK_OK(sigqueue(getpid(), SIGRTMIN, v));
		break;
	}
	case K_SIGSUSPEND:
	case K_PAUSE:
		CHECK_OK(pthread_kill(s->target, SIGUSR2));
		break;
	}
	return NULL;
}

static volatile int waiter_ok;

static void *waiter(void *arg)
{
	int kind = (int)(intptr_t)arg;
	sigset_t w;
	sigemptyset(&w);
	sigaddset(&w, SIGUSR1);
	sigaddset(&w, SIGRTMIN);
	siginfo_t si;
	int64_t t0 = test_now_ns();
	switch (kind) {
	case K_SIGWAIT: {
		int sig = 0;
		CHECK_OK(sigwait(&w, &sig));
		CHECK_EQ(sig, SIGUSR1);
		break;
	}
	case K_SIGWAITINFO:
		CHECK_EQ(sigwaitinfo(&w, &si), SIGUSR1);
		CHECK_EQ(si.si_code, SI_USER);
		CHECK_EQ(si.si_pid, getpid());
		break;
	case K_SIGTIMEDWAIT: {
		struct timespec ts = { 5, 0 };
		CHECK_EQ(sigtimedwait(&w, &si, &ts), SIGRTMIN);
		CHECK_EQ(si.si_code, SI_QUEUE);
		CHECK_EQ(si.si_value.sival_int, 99);
		break;
	}
	case K_TIMEOUT: {
		struct timespec ts = { 0, 100 * SIG_MS };
		CHECK_EQ(sigtimedwait(&w, &si, &ts), -1);
		CHECK_EQ(errno, EAGAIN);
		int64_t took = test_now_ns() - t0;
		CHECK(took >= 95 * SIG_MS);
		CHECK(took < 1000 * SIG_MS);
		break;
	}
	case K_SIGSUSPEND: {
		sigset_t m;
		CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &m));
		sigdelset(&m, SIGUSR2);
		int before = hits;
		CHECK_EQ(sigsuspend(&m), -1);
		CHECK_EQ(errno, EINTR);
		CHECK_EQ(hits, before + 1);
		CHECK(pthread_equal(hit_self, pthread_self()));
		CHECK(sig_blocked(SIGUSR2));      /* the old mask is back */
		break;
	}
	case K_PAUSE: {
		int before = hits;
		sig_mask1(SIG_UNBLOCK, SIGUSR2);
		CHECK_EQ(pause(), -1);
		CHECK_EQ(errno, EINTR);
		CHECK_EQ(hits, before + 1);
		CHECK(pthread_equal(hit_self, pthread_self()));
		break;
	}
	}
	waiter_ok = 1;
	return NULL;
}

int main(void)
{
	sig_on(SIGUSR1, on_record, 0, 0);
	sig_on(SIGUSR2, on_record, 0, 0);
	sig_on(SIGRTMIN, on_record, 0, 0);
	sig_mask_list(SIG_BLOCK, (const int[]){ SIGUSR1, SIGUSR2, SIGRTMIN, 0 });    /* every thread inherits it */
	for (int kind = 0; kind < NKIND; kind++) {
		struct test_counter ctr = { 1, 0 };
		pthread_t c, w, s = 0;
		waiter_ok = 0;
		CHECK_OK(pthread_create(&c, NULL, test_counting, &ctr));
		CHECK_OK(pthread_create(&w, NULL, waiter, (void *)(intptr_t)kind));
		struct sender snd = { kind, w };
		if (kind != K_TIMEOUT)
			CHECK_OK(pthread_create(&s, NULL, send_later, &snd));
		/* Main waits in a join: the counter must count meanwhile. */
		CHECK_OK(pthread_join(w, NULL));
		unsigned long during = ctr.count;
		if (s)
			CHECK_OK(pthread_join(s, NULL));
		ctr.on = 0;
		CHECK_OK(pthread_join(c, NULL));
		CHECK_EQ(waiter_ok, 1);
		if (during < 10) {   /* any progress: a blocked process counts 0; a loaded machine gives a counter few turns */
			fprintf(stderr, "%s: the counter counted only %lu while it waited\n", kinds[kind], during);
			exit(1);
		}
	}
	CHECK_EQ(hits, 2);     /* sigsuspend's and pause's handlers; none other */
	return 0;
}
