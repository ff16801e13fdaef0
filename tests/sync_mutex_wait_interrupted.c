/*
 * sync_mutex_wait_interrupted — a default mutex's wait and hand-over, the
 * one-VP paths of their own (sync/mutex.c, m1_wait and m1_hand_over) and
 * M:N's alike: what POSIX and glibc promise around them.
 *
 * Asserted:
 *   1. 200 SIGUSR1s to a UT waiting in pthread_mutex_lock each run its
 *      handler once, and the lock does not return meanwhile (a mutex wait is
 *      not interrupted: POSIX); main's unlock then hands it over: the lock
 *      returns 0, the waiter holds it (main's trylock is EBUSY until the
 *      waiter unlocks).
 *   2. A handler that itself locks and unlocks another mutex, and yields,
 *      while its UT waits for the first: the wait goes on, and ends with the
 *      hand-over as in 1.
 *   3. A NORMAL mutex held by main and unlocked by another UT while a third
 *      waits for it: released all the same, as glibc does, and handed to the
 *      waiter, whose lock returns 0 with the mutex held.
 *   4. An asynchronously cancelled UT waiting for it ends (its join gives
 *      PTHREAD_CANCELED) and leaves the mutex's queue: main, its holder,
 *      unlocks, and a later lock and trylock find it free.
 *   5. Three waiters of one priority get it in the order they came
 *      (FIFO), each from the previous one's unlock, 1,000 rounds: with one
 *      VP under the POSIX policy and slicing off (tests/CMakeLists.txt sets
 *      WEFT_TIMESLICE=0: a tick between an unlock and the next lock lets
 *      the next two go round without the unlocker queued).  Otherwise the
 *      count only.
 */
#include "check.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
static atomic_int handled, locked, in_wait;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* A handler that makes Weft calls of its own while its UT waits. */
static void on_usr1_locks(int sig)
{
	(void)sig;
	CHECK_OK(pthread_mutex_lock(&other));
	sched_yield();
	CHECK_OK(pthread_mutex_unlock(&other));
	atomic_fetch_add(&handled, 1);
}

static void set_handler(void (*h)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
}

static void wait_until(atomic_int *v, int n)
{
	for (int64_t end = test_now_ns() + 10000000000ll; atomic_load(v) < n; sched_yield())
		CHECK(test_now_ns() < end);
}

/* Until n more parks are counted (the waiters are queued). */
static void wait_parked(uint64_t parks_before, uint64_t n)
{
	for (int64_t end = test_now_ns() + 10000000000ll; test_stats().parks < parks_before + n; sched_yield())
		CHECK(test_now_ns() < end);
}

static void *locker(void *arg)
{
	(void)arg;
	atomic_fetch_add(&in_wait, 1);
	CHECK_OK(pthread_mutex_lock(&m));
	atomic_fetch_add(&locked, 1);
	/* held: nobody else's trylock gets it until this unlock */
	while (atomic_load(&locked) != 2)
		sched_yield();
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void interrupted(void (*h)(int), int signals)
{
	set_handler(h);
	atomic_store(&handled, 0);
	atomic_store(&locked, 0);
	atomic_store(&in_wait, 0);
	CHECK_OK(pthread_mutex_lock(&m));
	uint64_t parks = test_stats().parks;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, locker, NULL));
	wait_parked(parks, 1);
	for (int i = 0; i < signals; i++) {
		int before = atomic_load(&handled);
		CHECK_OK(pthread_kill(t, SIGUSR1));
		wait_until(&handled, before + 1);
		CHECK_EQ(atomic_load(&locked), 0);
	}
	CHECK_EQ(atomic_load(&handled), signals);
	CHECK_OK(pthread_mutex_unlock(&m));
	wait_until(&locked, 1);
	CHECK_EQ(pthread_mutex_trylock(&m), EBUSY);      /* the waiter holds it */
	atomic_store(&locked, 2);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_mutex_trylock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
}

static void *unlock_for_main(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_unlock(&m));          /* NORMAL: not checked */
	return NULL;
}

static void released_by_another(void)
{
	atomic_store(&locked, 0);
	CHECK_OK(pthread_mutex_lock(&m));
	uint64_t parks = test_stats().parks;
	pthread_t w, u;
	CHECK_OK(pthread_create(&w, NULL, locker, NULL));
	wait_parked(parks, 1);
	CHECK_OK(pthread_create(&u, NULL, unlock_for_main, NULL));
	CHECK_OK(pthread_join(u, NULL));
	wait_until(&locked, 1);
	CHECK_EQ(pthread_mutex_trylock(&m), EBUSY);
	atomic_store(&locked, 2);
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_mutex_trylock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
}

static void *async_locker(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	pthread_mutex_lock(&m);
	CHECK(!"the cancelled lock returned");
	return NULL;
}

static void cancelled_while_waiting(void)
{
	CHECK_OK(pthread_mutex_lock(&m));
	uint64_t parks = test_stats().parks;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, async_locker, NULL));
	wait_parked(parks, 1);
	CHECK_OK(pthread_cancel(t));
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_trylock(&m));             /* free, nobody queued */
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
}

#define ROUNDS 1000
static atomic_int turn_log[3 * ROUNDS + 3];
static atomic_int nlog;
static atomic_int go;

static void *fifo_waiter(void *arg)
{
	int me = (int)(intptr_t)arg;
	wait_until(&go, me + 1);                         /* come in order 0, 1, 2 */
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		turn_log[atomic_fetch_add(&nlog, 1)] = me;
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	return NULL;
}

static int fifo_expected(void)
{
	const char *sched = getenv("WEFT_SCHED"), *slice = getenv("WEFT_TIMESLICE");
	return test_stats().vps == 1 && (!sched || !strcmp(sched, "posix")) && slice && !strcmp(slice, "0");
}

/* With one VP: each unlock hands the mutex to the waiter queued longest,
 * and the unlocker's next lock queues it behind the other two, so the
 * turns go 0, 1, 2, 0, 1, 2, ...  With several VPs the order is the
 * processors' and only the count is asserted. */
static void fifo_order(void)
{
	atomic_store(&nlog, 0);
	atomic_store(&go, 1);
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t t[3];
	uint64_t parks = test_stats().parks;
	for (int i = 0; i < 3; i++) {
		CHECK_OK(pthread_create(&t[i], NULL, fifo_waiter, (void *)(intptr_t)i));
		if (test_stats().vps == 1) {
			wait_parked(parks, (uint64_t)i + 1);
			atomic_store(&go, i + 2);
		}
	}
	if (test_stats().vps != 1)
		atomic_store(&go, 4);
	CHECK_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(atomic_load(&nlog), 3 * ROUNDS);
	if (fifo_expected())
		for (int i = 0; i < 3 * ROUNDS; i++)
			CHECK_EQ(turn_log[i], i % 3);
}

int main(void)
{
	interrupted(on_usr1, 200);
	interrupted(on_usr1_locks, 50);
	released_by_another();
	cancelled_while_waiting();
	fifo_order();
	return 0;
}
