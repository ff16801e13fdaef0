/* A sleeper wakes at its deadline while other UTs keep the processor busy
 * switching and time slicing is off: the VP never idles, so only the
 * switch path's look at the timers can wake it (the scheduler asks the
 * coarse clock first and the precise one only when a deadline may have
 * passed: runtime/timer.c).  Never early; 40 sleeps of 2 ms each wake
 * with a median lateness under 1 ms (a gate that trusted the coarse
 * clock alone would be up to a jiffy, 4 ms, late); and a pending far
 * timer (a sleeper of 1 min) does not stop near ones from firing. */
#include "check.h"
#include <stdatomic.h>

enum { SLEEPS = 40, SLEEP_NS = 2000000 };

static atomic_int stop;
static int64_t late[SLEEPS];

static void *yielder(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		sched_yield();
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
		int64_t due = test_now_ns() + SLEEP_NS;
		struct timespec ts = { .tv_sec = due / 1000000000, .tv_nsec = due % 1000000000 };
		CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));
		late[i] = test_now_ns() - due;
	}
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
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

	for (int i = 0; i < SLEEPS; i++)
		CHECK(late[i] >= 0);
	qsort(late, SLEEPS, sizeof late[0], cmp64);
	if (late[SLEEPS / 2] >= 1000000)
		fprintf(stderr, "median lateness %lld ns (max %lld)\n", (long long)late[SLEEPS / 2],
			(long long)late[SLEEPS - 1]);
	CHECK(late[SLEEPS / 2] < 1000000);
	return 0;
}
