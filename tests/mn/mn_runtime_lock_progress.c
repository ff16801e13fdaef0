/*
 * mn_runtime_lock_progress — when the UT of every VP calls into Weft
 * without a pause, each still gets the runtime lock, again and again: a
 * waiter that backs off (mn.c, __weft_rtl_lock_slow) leaves the holder a
 * stretch of calls, and the hand-over to a waiter that has waited 100 µs
 * bounds every wait, so no VP starves.
 *
 * One UT per VP (and one more) locks and unlocks a PRIO_INHERIT mutex of
 * its own in a loop: calls that take the runtime lock under M:N (only a
 * default mutex has a path without it), and never wait.  They start together and run for 500 ms of wall time,
 * while main sleeps; each counts its calls.  Every UT must have made at
 * least 100 pairs (one per 5 ms: the hand-over gives a waiter the lock within a
 * few hundred µs, so even a kernel thread descheduled for most of the run
 * by a loaded machine gets there many times over), and together well over
 * 10,000.  With one VP they share it by time slicing (10 ms), and the
 * same bounds hold.  With libweft.a (the sanitizer builds) there is no
 * slicing: then only one UT per VP, each running on its own.
 */
#include "preempt_test.h"

#include <stdatomic.h>

enum { RUN_MS = 500, MIN_EACH = 100, MIN_ALL = 10000, MAX_UTS = 16 };

static atomic_int go, stop;
static long calls[MAX_UTS];
static pthread_mutex_t own[MAX_UTS];

static void *caller(void *arg)
{
	int i = (int)(intptr_t)arg;
	while (!atomic_load(&go))
		sched_yield();
	long k = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		CHECK_OK(pthread_mutex_lock(&own[i]));
		CHECK_OK(pthread_mutex_unlock(&own[i]));
		k++;
	}
	calls[i] = k;
	return NULL;
}

int main(void)
{
	unsigned vps = test_stats().vps;
	int e = weft_timeslice_set(10 * 1000 * 1000);
	if (e != ENOTSUP)
		CHECK_OK(e);
	int n = (int)vps + (e == 0);
	if (n > MAX_UTS)
		n = MAX_UTS;
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	pthread_t t[MAX_UTS];
	for (int i = 0; i < n; i++) {
		CHECK_OK(pthread_mutex_init(&own[i], &a));
		CHECK_OK(pthread_create(&t[i], NULL, caller, (void *)(intptr_t)i));
	}
	atomic_store(&go, 1);
	struct timespec run = { 0, RUN_MS * 1000000L };
	CHECK_OK(nanosleep(&run, NULL));
	atomic_store(&stop, 1);
	long all = 0, least = -1;
	for (int i = 0; i < n; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		all += calls[i];
		if (least < 0 || calls[i] < least)
			least = calls[i];
	}
	printf("mn_runtime_lock_progress: %u VPs, %d UTs: %ld lock + unlock pairs in %d ms, the fewest %ld\n",
	       vps, n, all, RUN_MS, least);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_mutex_destroy(&own[i]));
	CHECK(least >= MIN_EACH);
	CHECK(all >= MIN_ALL);
	return 0;
}
