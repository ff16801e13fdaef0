/*
 * mn_fork_child_restarts_vps — a child forked after the parent's VPs
 * started starts its own again, at its next UT, whichever VP forked.
 *
 * Run with time slicing off (WEFT_TIMESLICE=0): two UTs in the child that
 * each spin, without a call into Weft, until the other has started can
 * only both finish if they run at once, on two VPs.  (Until the
 * twenty-third stop the child kept one VP for good: the first spinner
 * spun to the 10 s limit.)  The parent forks from main, and from a UT
 * that runs beside a spinning main (so on the other VP, wherever the
 * scheduler put main), several rounds each; each child also makes and
 * joins 200 UTs that hop between its VPs and forks a grandchild, which
 * starts its VPs in turn.  With one VP the spinners would never meet: the
 * test checks only that the child's threads run and join.
 */
#include "mn_test.h"

#include <weft.h>

#define ROUNDS 6
#define MEET_LIMIT_NS (10LL * 1000 * 1000 * 1000)

static int vps;
static volatile int arrived[2];

static void *spinner(void *arg)
{
	int me = (int)(intptr_t)arg;
	__atomic_store_n(&arrived[me], 1, __ATOMIC_RELEASE);
	int64_t t0 = test_now_ns();
	while (!__atomic_load_n(&arrived[1 - me], __ATOMIC_ACQUIRE)) {
		__builtin_ia32_pause();
		if (test_now_ns() - t0 > MEET_LIMIT_NS)
			return (void *)1;         /* the other never ran meanwhile */
	}
	return NULL;
}

static void *hop(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++)
		sched_yield();
	return NULL;
}

/* In a child (or grandchild): two spinners meet, then UTs come and go. */
static void child_body(void *arg)
{
	int depth = (int)(intptr_t)arg;
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.vps, (unsigned)vps);
	arrived[0] = arrived[1] = 0;
	pthread_t t[2];
	if (vps >= 2) {
		for (int i = 0; i < 2; i++)
			CHECK_OK(pthread_create(&t[i], NULL, spinner, (void *)(intptr_t)i));
		for (int i = 0; i < 2; i++) {
			void *r = &r;
			CHECK_OK(pthread_join(t[i], &r));
			CHECK(r == NULL);
		}
	}
	mn_run_uts(200, hop);
	if (depth == 0) {
		static char err[4096];
		int st = test_in_child(child_body, (void *)1, err, sizeof err);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "grandchild status %#x:\n%s\n", st, err);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

static void fork_and_check(void)
{
	static char err[4096];
	int st = test_in_child(child_body, (void *)0, err, sizeof err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "child status %#x:\n%s\n", st, err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static volatile int forker_done;

static void *forker(void *arg)
{
	fork_and_check();
	__atomic_store_n(&forker_done, 1, __ATOMIC_RELEASE);
	return arg;
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	vps = (int)s.vps;
	/* the VPs start with the second UT */
	mn_run_uts(4, hop);
	for (int round = 0; round < ROUNDS; round++) {
		fork_and_check();                  /* from main */
		forker_done = 0;
		pthread_t f;
		CHECK_OK(pthread_create(&f, NULL, forker, NULL));
		if (vps >= 2) {
			/* main spins, so the forker runs on the other VP */
			int64_t t0 = test_now_ns();
			while (!__atomic_load_n(&forker_done, __ATOMIC_ACQUIRE) &&
			       test_now_ns() - t0 < 60LL * 1000 * 1000 * 1000)
				__builtin_ia32_pause();
		}
		CHECK_OK(pthread_join(f, NULL));
	}
	return 0;
}
