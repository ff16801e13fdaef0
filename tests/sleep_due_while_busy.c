/* A sleeper wakes at its deadline while other UTs keep the processor busy
 * switching and time slicing is off: the VP never idles, so only the
 * switch path's look at the timers can wake it (the scheduler asks the
 * cycle counter first and reads the clock only when a deadline may have
 * passed: runtime/timer.c).  A pending far timer (a sleeper of 1 min)
 * stays in the heap throughout.  40 sleeps of 2 ms: none wakes early, and
 * each is counted late in the yielders' switches, not in time — the
 * yielders note how many yields had been made when they first saw the
 * deadline pass, the sleeper how many when it ran again — so a loaded
 * machine that stops the whole process for milliseconds changes nothing.
 * Woken at the first switch after the deadline, the sleeper runs a few
 * yields later (it queues behind the yielders); the median must be under
 * 100 (a gate that trusted the coarse clock alone, a jiffy behind, let
 * tens of thousands pass). */
#include "check.h"
#include <stdatomic.h>

enum { SLEEPS = 40, SLEEP_NS = 2000000 };

static atomic_int stop;
static atomic_long yields;
static _Atomic int64_t due = INT64_MAX;   /* the current sleep's deadline */
static atomic_long yields_at_due = -1;    /* yields when one was first seen past it */
static long late_yields[SLEEPS];

static void *yielder(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		sched_yield();
		long y = atomic_fetch_add(&yields, 1) + 1;
		if (atomic_load(&yields_at_due) < 0 && test_now_ns() >= atomic_load(&due)) {
			long none = -1;
			atomic_compare_exchange_strong(&yields_at_due, &none, y);
		}
	}
	return NULL;
}

static void *far_sleeper(void *arg)
{
	(void)arg;
	struct timespec ts = { .tv_sec = 60 };
	/* ended by cancellation: clock_nanosleep is a cancellation point */
	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (int i = 0; i < SLEEPS; i++) {
		int64_t d = test_now_ns() + SLEEP_NS;
		atomic_store(&yields_at_due, -1);
		atomic_store(&due, d);
		struct timespec ts = { .tv_sec = d / 1000000000, .tv_nsec = d % 1000000000 };
		CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));
		long now_yields = atomic_load(&yields);
		CHECK(test_now_ns() >= d);                     /* never early */
		atomic_store(&due, INT64_MAX);
		long at = atomic_load(&yields_at_due);
		/* no yielder saw the deadline pass before this ran: woken at once */
		late_yields[i] = at < 0 ? 0 : now_yields - at;
	}
	return NULL;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	CHECK_OK(weft_timeslice_set(0));
	pthread_t far, s, y[2];
	CHECK_OK(pthread_create(&far, NULL, far_sleeper, NULL));
	CHECK_OK(pthread_create(&s, NULL, sleeper, NULL));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&y[i], NULL, yielder, NULL));
	CHECK_OK(pthread_join(s, NULL));
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(y[i], NULL));
	CHECK_OK(pthread_cancel(far));
	void *r;
	CHECK_OK(pthread_join(far, &r));
	CHECK(r == PTHREAD_CANCELED);

	qsort(late_yields, SLEEPS, sizeof late_yields[0], cmp_long);
	if (late_yields[SLEEPS / 2] >= 100)
		fprintf(stderr, "median lateness %ld yields (max %ld)\n", late_yields[SLEEPS / 2],
			late_yields[SLEEPS - 1]);
	CHECK(late_yields[SLEEPS / 2] < 100);
	return 0;
}
