/* A higher-priority UT sleeping while a lower one spins without calling
 * Weft takes the processor at its deadline, not at the next slice boundary:
 * with a 100 ms slice and 2 ms sleeps, the median lateness stays far below
 * the slice (the tick is brought forward to the sleeper's deadline). */
#include "preempt_test.h"

#define SAMPLES 21
#define SLEEP_NS (2 * 1000 * 1000)
#define SLICE_NS (100 * 1000 * 1000)

static int64_t late[SAMPLES];
static volatile int done;

static void *sleeper(void *arg)
{
	for (int i = 0; i < SAMPLES; i++) {
		int64_t due = test_now_ns() + SLEEP_NS;
		struct timespec ts = { due / 1000000000, due % 1000000000 };
		CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));
		late[i] = test_now_ns() - due;
	}
	done = 1;
	return arg;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	preempt_test_slice(SLICE_NS);
	pthread_t t = test_spawn_sched(SCHED_FIFO, 10, sleeper, NULL);
	/* spin in our own text; read the clock rarely, only as a safety net */
	uint64_t x = 1;
	int64_t t0 = test_now_ns();
	while (!done) {
		for (int i = 0; i < 100000; i++) {
			x = x * 6364136223846793005ull + 1;
			__asm__ volatile("" : : "r"(x));
		}
		CHECK(test_now_ns() - t0 < 60LL * 1000 * 1000 * 1000);
	}
	CHECK_OK(pthread_join(t, NULL));
	qsort(late, SAMPLES, sizeof late[0], cmp_i64);
	CHECK(late[0] >= 0);
	/* a slice-bound wake-up would be late by ~50 ms on average: allow a
	 * tenth of the slice, far above the tens of microseconds expected */
	if (late[SAMPLES / 2] >= SLICE_NS / 10) {
		fprintf(stderr, "median lateness %lld ns with a %d ns slice\n", (long long)late[SAMPLES / 2], SLICE_NS);
		CHECK(late[SAMPLES / 2] < SLICE_NS / 10);
	}
	return 0;
}
