/* th_yield is round-robin: with the initial thread and N forked threads
 * each yielding in a loop, the turns come in a fixed cycle, each thread
 * once per round, in the order they were made ready; a thread that yields
 * with nobody ready goes on at once; a forked child does not run until its
 * parent yields or waits (Myth adds it to the pool of ready threads). */
#include "../check.h"
#include <weft/myth.h>

#define N 5
#define ROUNDS 200

static int trace[(N + 1) * ROUNDS + 8], ntrace;
static int started;

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	started++;
	for (int r = 0; r < ROUNDS; r++) {
		trace[ntrace++] = id;
		CHECK_EQ(th_yield(), 0);
	}
	return arg;
}

int main(void)
{
	/* Myth threads are time-sliced (SCHED_OTHER); the orders checked here
	 * are those of yields and hand-offs alone */
	weft_timeslice_set(0);

	/* alone: yield returns at once */
	for (int i = 0; i < 100; i++)
		CHECK_EQ(th_yield(), 0);

	th_thread_t t[N];
	for (int i = 0; i < N; i++)
		CHECK((t[i] = th_fork(worker, (void *)(long)(i + 1))) != NULL);
	CHECK_EQ(started, 0);               /* the parent goes on */
	for (int r = 0; r < ROUNDS; r++) {
		trace[ntrace++] = 0;
		th_yield();
	}
	for (int i = 0; i < N; i++)
		CHECK(th_join(t[i]) == (void *)(long)(i + 1));
	CHECK_EQ(ntrace, (N + 1) * ROUNDS);
	for (int k = 0; k < ntrace; k++)
		if (trace[k] != k % (N + 1)) {
			fprintf(stderr, "turn %d went to %d, not %d\n", k, trace[k], k % (N + 1));
			return 1;
		}
	return 0;
}
