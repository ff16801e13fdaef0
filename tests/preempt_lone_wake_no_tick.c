/*
 * preempt_lone_wake_no_tick — a UT woken while the VP idles, with no
 * other UT ready, runs alone and arms no tick (sched.c, rq_link_as:
 * __weft_preempt_arm_ready); one woken beside another still does.
 *
 * Before, every wake-up armed the periodic tick, which the lone UT's first
 * tick stopped again (two timer_settime calls a wake-up, ~5 us each on a
 * VM).  Here W sleeps 100 us (the VP idles: main waits in pthread_join),
 * then spins 3 ms in its own code under a 1 ms slice, 30 times: before,
 * about 2.7 ticks a round (81 in 30); now a few in all (up to 6 seen:
 * the tick armed while main ran beside W, which W's first tick stops,
 * and the like), and under ROUNDS / 3 allowed.  Then
 * two spinners that sleep to one deadline, woken together while the VP
 * idles (main in pthread_join), must still be sliced: each spins until
 * the other has started, which only a tick lets happen.
 */
#include "preempt_test.h"

#include <stdatomic.h>
#include <time.h>

#define ROUNDS 30

static void spin_ms(int ms)
{
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < (int64_t)ms * 1000000)
		;
}

static void *lone(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		struct timespec ts = { 0, 100000 };
		CHECK_OK(nanosleep(&ts, NULL));
		spin_ms(3);
	}
	return NULL;
}

static struct timespec together;
static atomic_int spinning, finished;

/* each spins until the other has spun too: only slicing lets both */
static void *pair(void *arg)
{
	(void)arg;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &together, NULL) != 0)
		;
	atomic_fetch_add(&spinning, 1);
	int64_t t0 = test_now_ns();
	while (atomic_load(&spinning) < 2)
		CHECK(test_now_ns() - t0 < 10ll * 1000 * 1000 * 1000);
	atomic_fetch_add(&finished, 1);
	return NULL;
}

int main(void)
{
	preempt_test_slice(1000 * 1000);
	struct weft_stats a = preempt_test_stats();
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, lone, NULL));
	CHECK_OK(pthread_join(t, NULL));
	struct weft_stats b = preempt_test_stats();
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "lone: %llu ticks in %d wake-ups\n",
			(unsigned long long)(b.ticks - a.ticks), ROUNDS);
	CHECK(b.ticks - a.ticks < ROUNDS / 3);

	CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &together));
	together.tv_nsec += 5000000;
	if (together.tv_nsec >= 1000000000) {
		together.tv_sec++;
		together.tv_nsec -= 1000000000;
	}
	pthread_t p[2];
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&p[i], NULL, pair, NULL));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	CHECK_EQ(atomic_load(&finished), 2);
	return 0;
}
