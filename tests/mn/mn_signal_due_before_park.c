/*
 * mn_signal_due_before_park — a UT that has a handler due when it starts an
 * interruptible wait is not left waiting: the wait ends at once with the
 * handler run, as a wait in the kernel ends with a signal pending.
 *
 * Under two VPs a signal sent to a UT that runs on the other VP can only
 * be taken at that UT's next safe point.  If the UT is in libc's code when
 * the kick arrives, the safe point is the end of its next Weft call; if
 * that call is a wait, the UT used to park with the handler due and
 * nothing to wake it for the signal: the handler ran only when the wait
 * ended by itself (the signal storm's hang: main parked in pthread_join
 * with 776 SIGRTMIN due, docs/mn.md).
 *
 * Each round: A runs libc's code (memset of 4 MiB at a time, no Weft call)
 * until B, on the other VP, has sent it SIGUSR1 with pthread_kill and set
 * a flag; A then waits in sem_timedwait (1 s) on a semaphore nobody posts.
 * The handler (no SA_RESTART) runs exactly once a round, in A, and never
 * at the wait's end: either before the wait (a tick found A between two
 * memsets) or at its start, which then ends with EINTR.  Before the fix
 * every round under two VPs ran the handler at the timeout.  With two VPs
 * the rounds that end with EINTR must be most of them (the case is
 * exercised); with one VP, B runs only when A is preempted (in its own
 * short spin between memsets), and A takes the signal at its switch-in,
 * before the wait (3 rounds).
 */
#include "mn_test.h"

#include <errno.h>
#include <stdbool.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>

enum { BUF = 4 << 20 };

static sem_t never;
static volatile pthread_t handler_ran_in;
static volatile int64_t handler_at;
static long handled;
static char *buf;
static volatile int in_libc, sent, round_no;

static void on_usr1(int sig)
{
	(void)sig;
	handler_ran_in = pthread_self();
	handler_at = test_now_ns();
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
}

static int rounds, eintr_rounds;

static void *waiter(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		long before = __atomic_load_n(&handled, __ATOMIC_RELAXED);
		in_libc = 1;
		while (!sent) {
			memset(buf, r, BUF);
			/* a few µs of the program's own code between memsets:
			 * with one VP the tick must find A there to let B run,
			 * and a call and a loop test alone are a window of
			 * nanoseconds against 100-odd µs of memset (on an AVX-512
			 * machine the retries never met it: B never ran) */
			for (volatile int i = 0; i < 2000; i++) {
			}
		}
		in_libc = 0;
		sent = 0;
		int64_t t0 = test_now_ns();
		struct timespec ts;
		CHECK_OK(clock_gettime(CLOCK_REALTIME, &ts));
		ts.tv_sec += 1;
		int ret = sem_timedwait(&never, &ts);
		int e = errno;
		CHECK_EQ(ret, -1);
		CHECK(e == EINTR || e == ETIMEDOUT);
		CHECK_EQ(__atomic_load_n(&handled, __ATOMIC_RELAXED), before + 1);
		CHECK(pthread_equal(handler_ran_in, pthread_self()));
		/* never at the wait's end: before it, or at its start */
		if (handler_at - t0 >= 500000000) {
			fprintf(stderr, "round %d: the handler ran %.3f s into the wait (%s)\n", r,
				(double)(handler_at - t0) / 1e9, e == EINTR ? "EINTR" : "ETIMEDOUT");
			CHECK(handler_at - t0 < 500000000);
		}
		if (e == EINTR)
			eintr_rounds++;
		round_no = r + 1;
	}
	return NULL;
}

static void *sender(void *arg)
{
	pthread_t a = *(pthread_t *)arg;
	for (int r = 0; r < rounds; r++) {
		while (!in_libc)
			sched_yield();
		CHECK_OK(pthread_kill(a, SIGUSR1));
		sent = 1;
		while (round_no < r + 1)
			sched_yield();
	}
	return NULL;
}

int main(void)
{
	struct weft_stats st = test_stats();
	bool several = st.vps > 1;
	rounds = several ? 40 : 3;
	buf = malloc(BUF);
	CHECK(buf != NULL);
	CHECK_OK(sem_init(&never, 0, 0));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;             /* no SA_RESTART: the wait ends */
	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, waiter, NULL));
	CHECK_OK(pthread_create(&b, NULL, sender, &a));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK_EQ(handled, rounds);
	printf("%d rounds, %d ended with EINTR at the wait's start\n", rounds, eintr_rounds);
	if (several)
		CHECK(eintr_rounds >= rounds / 2);
	free(buf);
	return 0;
}
