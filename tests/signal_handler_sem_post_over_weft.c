/*
 * signal_handler_sem_post_over_weft — sem_post, pthread_kill and raise,
 * async-signal-safe in POSIX, are safe from a handler whatever the handler
 * interrupted.  A 20 µs
 * interval timer's handler posts a semaphore eight UTs wait on, while main
 * and three more UTs do nothing but sched_yield: nearly every signal lands
 * in the middle of a ready-queue change.  Before the signal contract this
 * corrupted the ready queues in every run (SIGSEGV, or a UT lost from its
 * queue and a hang).  Now a handler that interrupts Weft's own code runs at
 * the next point where Weft's state is whole, and every post is taken
 * exactly once.
 */
#include "check.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/time.h>

enum { WAITERS = 8, YIELDERS = 3 };

static sem_t s;
static volatile long posted, taken, usr2;
static volatile int done;
static pthread_t main_ut;

static void on_usr2(int sig)
{
	(void)sig;
	__atomic_add_fetch(&usr2, 1, __ATOMIC_SEQ_CST);
}

static void on_alarm(int sig)
{
	(void)sig;
	int e = errno;
	/* atomic: with several VPs (M:N) two carriers may run this at once,
	 * as two NPTL threads may */
	long n = __atomic_add_fetch(&posted, 1, __ATOMIC_SEQ_CST);
	CHECK_OK(sem_post(&s));
	if (n % 16 == 0)
		CHECK_OK(pthread_kill(main_ut, SIGUSR2));
	else if (n % 16 == 8)
		CHECK_OK(raise(SIGUSR2));
	errno = e;
}

static void *waiter(void *arg)
{
	for (;;) {
		while (sem_wait(&s) != 0)
			CHECK_EQ(errno, EINTR);
		if (done)
			return arg;
		__atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED);
	}
}

static void *yielder(void *arg)
{
	while (!done)
		sched_yield();
	return arg;
}

int main(void)
{
	CHECK_OK(sem_init(&s, 0, 0));
	main_ut = pthread_self();
	CHECK(signal(SIGUSR2, on_usr2) != SIG_ERR);
	CHECK(signal(SIGALRM, on_alarm) != SIG_ERR);
	pthread_t w[WAITERS], y[YIELDERS];
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_create(&w[i], NULL, waiter, NULL));
	for (int i = 0; i < YIELDERS; i++)
		CHECK_OK(pthread_create(&y[i], NULL, yielder, NULL));
	struct itimerval on = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
	CHECK_OK(setitimer(ITIMER_REAL, &on, NULL));
	/* At least 500 ms (a tenth in sanitizer builds) and at least 200
	 * signals, whichever is later, but never past 20 s: where each
	 * delivery costs a millisecond (a sanitizer build on a slow guest,
	 * beside another test) 50 ms gave fewer than 100.  The clock every 10
	 * yields: where a switch is a system call and the timer's handling
	 * outruns its interval, 1000 yields took tens of seconds. */
	int64_t t0 = test_now_ns(), end = t0 + 500000000 / TEST_SCALE, cap = t0 + 20000000000ll;
	for (int64_t now = t0; (now < end || posted <= 200) && now < cap; now = test_now_ns())
		for (int i = 0; i < 10; i++)
			sched_yield();
	CHECK_OK(setitimer(ITIMER_REAL, &off, NULL));
	/* every post is taken, exactly once: wait (generously) for the last */
	int64_t limit = test_now_ns() + 10000000000ll;
	while (taken < posted && test_now_ns() < limit)
		sched_yield();
	CHECK(posted > 100);
	CHECK_EQ(taken, posted);
	CHECK(usr2 >= 1);           /* standard signals may merge, never vanish */
	int v;
	CHECK_OK(sem_getvalue(&s, &v));
	CHECK_EQ(v, 0);
	done = 1;
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(sem_post(&s));
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_join(w[i], NULL));
	for (int i = 0; i < YIELDERS; i++)
		CHECK_OK(pthread_join(y[i], NULL));
	return 0;
}
