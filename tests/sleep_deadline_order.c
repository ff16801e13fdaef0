/* 1,000 sleepers with random absolute deadlines wake in deadline order and
 * never early; while every UT sleeps the process sleeps in the kernel, so
 * its CPU time stays under 5% of the wall time that passes. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <weft.h>

enum { N = 1000, STEP_NS = 200000 };      /* deadlines 0.2 ms apart: 200 ms */

static int64_t deadline[N];
static int woke[N];
static int nwoke;
static volatile int64_t late_max;

static int64_t cpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
	return ts;
}

static void *sleeper(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct timespec ts = ts_of(deadline[i]);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));
	int64_t late = test_now_ns() - deadline[i];
	CHECK(late >= 0);
	if (late > late_max)
		late_max = late;
	woke[__atomic_fetch_add(&nwoke, 1, __ATOMIC_RELAXED)] = i;   /* the tick may preempt anywhere */
	return NULL;
}

int main(void)
{
	/* the order of wake-ups is what is checked: no time slicing between a
	 * sleeper's wake-up and its note of it */
	weft_timeslice_set(0);
	/* a random permutation of the slots 0..N-1, so creation order and
	 * deadline order differ */
	static int perm[N];
	for (int i = 0; i < N; i++)
		perm[i] = i;
	srand(12345);
	for (int i = N - 1; i > 0; i--) {
		int j = rand() % (i + 1);
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	int64_t base = test_now_ns() + 300000000;   /* room for creating them all */
	for (int i = 0; i < N; i++)
		deadline[i] = base + (int64_t)perm[i] * STEP_NS;

	static pthread_t t[N];
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], NULL, sleeper, (void *)(intptr_t)i));
	CHECK_OK(sched_yield());            /* every sleeper runs and parks */
	CHECK_EQ(nwoke, 0);

	/* All N sleep; main sleeps too, until just before the first deadline. */
	struct weft_stats s0, s1;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	int64_t cpu0 = cpu_now_ns(), wall0 = test_now_ns();
	if (wall0 + 20000000 > base)
		SKIP("creating the sleepers took longer than the 300 ms margin");
	struct timespec until = ts_of(base - 1000000);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL));
	int64_t cpu = cpu_now_ns() - cpu0, wall = test_now_ns() - wall0;
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(nwoke, 0);
	CHECK(s1.idle_sleeps > s0.idle_sleeps);
	if (cpu * 20 >= wall) {
		fprintf(stderr, "cpu %lld ns over wall %lld ns while all slept\n", (long long)cpu,
			(long long)wall);
		CHECK(cpu * 20 < wall);
	}

	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(nwoke, N);
	for (int k = 1; k < N; k++)
		if (deadline[woke[k]] < deadline[woke[k - 1]]) {
			fprintf(stderr, "wake %d (deadline +%lld ns) before %d (+%lld ns)\n",
				woke[k - 1], (long long)(deadline[woke[k - 1]] - base), woke[k],
				(long long)(deadline[woke[k]] - base));
			CHECK(deadline[woke[k]] >= deadline[woke[k - 1]]);
		}
	/* generous: a wake-up 10x later than the whole spread is a bug */
	CHECK(late_max < 10LL * N * STEP_NS);
	return 0;
}
