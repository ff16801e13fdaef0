/* Two CPU-bound SCHED_RR UTs of equal priority, neither ever calling Weft,
 * each get 30-70% of 2 s; and a UT alone arms no tick. */
#include "preempt_test.h"
#include <errno.h>
#include <sched.h>

static volatile int stop;
static volatile uint64_t work[2];

static void *spin(void *arg)
{
	int i = (int)(intptr_t)arg;
	while (!stop)
		work[i]++;
	return NULL;
}

int main(void)
{
	preempt_test_slice(10 * 1000 * 1000);
	struct timespec rr;
	CHECK_OK(sched_rr_get_interval(0, &rr));
	CHECK_EQ(rr.tv_sec, 0);
	CHECK_EQ(rr.tv_nsec, 10 * 1000 * 1000);

	/* alone: nothing else can run, so no tick may arrive */
	struct weft_stats a = preempt_test_stats();
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < 200 * 1000 * 1000)
		;
	struct weft_stats b = preempt_test_stats();
	CHECK_EQ(b.ticks - a.ticks, 0);

	/* main outranks both, so both are created before either runs */
	struct sched_param sp = { .sched_priority = 50 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		t[i] = test_spawn_sched(SCHED_RR, 10, spin, (void *)(intptr_t)i);
	struct timespec two = { 2, 0 };
	CHECK_OK(nanosleep(&two, NULL));   /* main sleeps; its wake-up preempts them */
	stop = 1;
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	double share = (double)work[0] / (double)(work[0] + work[1]);
	struct weft_stats c = preempt_test_stats();
	if (share < 0.30 || share > 0.70) {
		fprintf(stderr, "share %.3f (work %llu / %llu)\n", share,
			(unsigned long long)work[0], (unsigned long long)work[1]);
		CHECK(!"each RR UT gets 30-70%");
	}
	CHECK(c.preemptions - b.preemptions >= 50);   /* ~200 slices in 2 s */
	return 0;
}
