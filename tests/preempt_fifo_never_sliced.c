/* A SCHED_FIFO UT is never sliced, even with an equal-priority UT ready and
 * the tick running; a sleeping higher-priority UT preempts a spinning lower
 * one when its deadline passes. */
#include "preempt_test.h"

static volatile int b_ran, a_done;
static volatile int high_woke, low_saw_high;

static void *fifo_a(void *arg)
{
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < 300 * 1000 * 1000)
		CHECK(!b_ran);          /* B is ready at our priority, yet never runs */
	a_done = 1;
	return NULL;
}

static void *fifo_b(void *arg)
{
	CHECK(a_done);
	b_ran = 1;
	return NULL;
}

static void *high_sleeper(void *arg)
{
	struct timespec d = { 0, 50 * 1000 * 1000 };
	CHECK_OK(nanosleep(&d, NULL));
	high_woke = 1;
	return NULL;
}

static void *low_spinner(void *arg)
{
	int64_t t0 = test_now_ns();
	while (!high_woke)
		CHECK(test_now_ns() - t0 < 10LL * 1000 * 1000 * 1000);   /* 10 s: it never came */
	low_saw_high = 1;
	return NULL;
}

int main(void)
{
	preempt_test_slice(1000 * 1000);
	struct sched_param sp = { .sched_priority = 50 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));

	struct weft_stats s0 = preempt_test_stats();
	pthread_t a = test_spawn_sched(SCHED_FIFO, 10, fifo_a, NULL);
	pthread_t b = test_spawn_sched(SCHED_FIFO, 10, fifo_b, NULL);
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	struct weft_stats s1 = preempt_test_stats();
	CHECK(b_ran);
	CHECK(s1.ticks - s0.ticks > 0);          /* the tick ran, and changed nothing */
	CHECK_EQ(s1.preemptions - s0.preemptions, 0);

	pthread_t h = test_spawn_sched(SCHED_FIFO, 20, high_sleeper, NULL);
	pthread_t l = test_spawn_sched(SCHED_RR, 5, low_spinner, NULL);
	CHECK_OK(pthread_join(l, NULL));
	CHECK_OK(pthread_join(h, NULL));
	CHECK(high_woke && low_saw_high);
	return 0;
}
