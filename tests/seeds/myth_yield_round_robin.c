/* th_yield is round-robin, and nothing else takes the processor from a Myth
 * thread: with the initial thread and N forked threads each yielding in a
 * loop, the turns come in a fixed cycle, each thread once per round, in the
 * order they were made ready — under a 1 ms time slice, with some turns
 * running on through several preemption ticks (Myth threads are never
 * time-sliced; the ticks arrive and switch no one).  A thread that yields
 * with nobody ready goes on at once; a forked child does not run until its
 * parent yields or waits (Myth adds it to the pool of ready threads). */
#include "../check.h"
#include <weft/myth.h>

#define N 5
#define ROUNDS 200
#define LONG_TURN 50                /* every 50th turn of a thread is long */
#define LONG_TURN_TICKS 2           /* ... and lasts this many ticks */

static int trace[(N + 1) * ROUNDS + 8], ntrace;
static int started;
static long long_turns;

static uint64_t ticks(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.ticks;
}

/* Run on, without yielding, until `k` more ticks have come (or fail after
 * 5 s: then the tick is not running and the test would prove nothing).
 * Each weft_stats_get is a Weft call whose return acts on a tick that found
 * Weft running, so a sliced thread would be switched out here either way. */
static void run_through_ticks(int k)
{
	uint64_t t0 = ticks();
	int64_t start = test_now_ns();
	volatile unsigned long spin = 0;
	while (ticks() < t0 + (uint64_t)k) {
		for (int i = 0; i < 20000; i++)
			spin++;
		CHECK(test_now_ns() - start < 5LL * 1000 * 1000 * 1000);
	}
	long_turns++;
}

static void turn(int id, int r)
{
	trace[ntrace++] = id;
	if (r % LONG_TURN == LONG_TURN - 1)
		run_through_ticks(LONG_TURN_TICKS);
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	started++;
	for (int r = 0; r < ROUNDS; r++) {
		turn(id, r);
		CHECK_EQ(th_yield(), 0);
	}
	return arg;
}

int main(void)
{
	CHECK_OK(weft_timeslice_set(1000 * 1000));

	/* alone: yield returns at once */
	struct weft_stats s0;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	for (int i = 0; i < 100; i++)
		CHECK_EQ(th_yield(), 0);

	th_thread_t t[N];
	for (int i = 0; i < N; i++)
		CHECK((t[i] = th_fork(worker, (void *)(long)(i + 1))) != NULL);
	CHECK_EQ(started, 0);               /* the parent goes on */
	for (int r = 0; r < ROUNDS; r++) {
		turn(0, r);
		th_yield();
	}
	for (int i = 0; i < N; i++)
		CHECK(th_join(t[i]) == (void *)(long)(i + 1));
	struct weft_stats s1;
	CHECK_OK(weft_stats_get(&s1, sizeof s1));

	CHECK_EQ(ntrace, (N + 1) * ROUNDS);
	for (int k = 0; k < ntrace; k++)
		if (trace[k] != k % (N + 1)) {
			fprintf(stderr, "turn %d went to %d, not %d\n", k, trace[k], k % (N + 1));
			return 1;
		}
	/* the long turns happened, the ticks came, and no tick switched */
	CHECK_EQ(long_turns, (long)(N + 1) * (ROUNDS / LONG_TURN));
	CHECK(s1.ticks - s0.ticks >= (uint64_t)long_turns * LONG_TURN_TICKS);
	CHECK_EQ(s1.preemptions - s0.preemptions, 0);
	return 0;
}
