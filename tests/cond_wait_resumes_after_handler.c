/*
 * cond_wait_resumes_after_handler — a condition wait that a signal's
 * handler interrupts goes on waiting after the handler, as POSIX asks ("as
 * if it was not interrupted") and glibc does (its tst-eintr5), and a
 * wake-up sent while the waiter runs its handler is not lost (cond.c,
 * "Signals").
 *
 * Asserted:
 *   1. 200 SIGUSR1s to a UT in pthread_cond_wait each run its handler, and
 *      the wait does not return; a pthread_cond_signal then ends it with 0,
 *      the mutex held (an error-checking mutex unlocks with 0).
 *   2. A pthread_cond_signal sent while the waiter is inside its handler
 *      (the handler yields until main has signalled) ends the wait with 0
 *      once the handler returns; the same for a pthread_cond_broadcast,
 *      with two waiters, both inside their handlers.
 *   3. A timed wait interrupted every 5 ms keeps its deadline: ETIMEDOUT,
 *      not before 150 ms, within a generous bound.
 */
#include "check.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int handled, in_handler, released;
static volatile int woke;            /* waiters back from the wait */
static int entered;                  /* waiters past their lock, under m */

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

/* The handler of part 2: stays until main has sent its wake-up. */
static void on_usr1_waits(int sig)
{
	(void)sig;
	/* atomic: the two waiters' handlers may run at once on different VPs
	 * (WEFT_VPS=2), and a lost increment leaves main waiting for 2 */
	__atomic_fetch_add(&in_handler, 1, __ATOMIC_RELAXED);
	while (!released)
		sched_yield();
}

static void *waiter(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&m));
	entered++;
	int r = pthread_cond_wait(&c, &m);
	CHECK_EQ(r, 0);
	woke++;
	CHECK_EQ(pthread_mutex_unlock(&m), 0);    /* error-checking: held */
	return NULL;
}

static void set_handler(void (*h)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
}

/* Wait (generously bounded) until *v reaches n, yielding. */
static void wait_for(volatile int *v, int n)
{
	int64_t end = test_now_ns() + 10000000000ll;
	for (; __atomic_load_n(v, __ATOMIC_RELAXED) < n; sched_yield())
		CHECK(test_now_ns() < end);
}

/* Until n waiters are inside their pthread_cond_wait, m let go: each
 * counts itself under m before it waits, so once main holds m and reads n,
 * every one has let m go in its wait (M:1: and parked, as the wait lets go
 * and parks with no switch between; M:N: parked, or about to, when a
 * signal then sent ends the park at once, park.c).  Counting parks was not
 * enough: a waiter that found m held by the other (a tick between the
 * other's lock and its wait) parked on m, which counted; it was then handed
 * m, and ran part 2's handler holding it, and main waited for m for good
 * (the ASan build with fake stacks, about one run in 30). */
static void wait_entered(int n)
{
	for (int64_t end = test_now_ns() + 10000000000ll;; sched_yield()) {
		CHECK_OK(pthread_mutex_lock(&m));
		int e = entered;
		CHECK_OK(pthread_mutex_unlock(&m));
		if (e >= n)
			return;
		CHECK(test_now_ns() < end);
	}
}

static void interrupted_many_times(void)
{
	set_handler(on_usr1);
	woke = 0;
	handled = 0;
	entered = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, waiter, NULL));
	wait_entered(1);
	for (int i = 0; i < 200; i++) {
		int before = handled;
		CHECK_OK(pthread_kill(t, SIGUSR1));
		wait_for(&handled, before + 1);
		CHECK_EQ(woke, 0);
	}
	/* and it is back on the queue: a signal ends the wait */
	struct timespec ms = { 0, 2000000 };
	nanosleep(&ms, NULL);
	CHECK_EQ(woke, 0);
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_cond_signal(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(woke, 1);
	CHECK_EQ(handled, 200);
}

static void wakeup_during_handler(int waiters, bool broadcast)
{
	set_handler(on_usr1_waits);
	woke = 0;
	in_handler = 0;
	released = 0;
	entered = 0;
	pthread_t t[2];
	for (int i = 0; i < waiters; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, NULL));
	wait_entered(waiters);
	for (int i = 0; i < waiters; i++)
		CHECK_OK(pthread_kill(t[i], SIGUSR1));
	wait_for(&in_handler, waiters);
	/* every waiter is inside its handler, off the condition's queue */
	CHECK_OK(pthread_mutex_lock(&m));
	if (broadcast) {
		CHECK_OK(pthread_cond_broadcast(&c));
	} else {
		for (int i = 0; i < waiters; i++)
			CHECK_OK(pthread_cond_signal(&c));
	}
	CHECK_OK(pthread_mutex_unlock(&m));
	released = 1;
	for (int i = 0; i < waiters; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(woke, waiters);
}

static void *timed_waiter(void *arg)
{
	int64_t *took = arg;
	CHECK_OK(pthread_mutex_lock(&m));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 150000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	int64_t t0 = test_now_ns();
	int r = pthread_cond_timedwait(&c, &m, &ts);
	*took = test_now_ns() - t0;
	CHECK_EQ(r, ETIMEDOUT);
	woke++;
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	return NULL;
}

static void timed_wait_keeps_deadline(void)
{
	set_handler(on_usr1);
	woke = 0;
	handled = 0;
	int64_t took = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, timed_waiter, &took));
	struct timespec gap = { 0, 5000000 };
	while (!woke) {
		nanosleep(&gap, NULL);
		if (!woke)
			pthread_kill(t, SIGUSR1);
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK(handled > 5);
	CHECK(took >= 149000000);
	CHECK(took < 1500000000);
}

int main(void)
{
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutex_init(&m, &ma));
	interrupted_many_times();
	wakeup_during_handler(1, false);
	wakeup_during_handler(2, false);
	wakeup_during_handler(2, true);
	timed_wait_keeps_deadline();
	return 0;
}
