/*
 * mn_fork_child_vps — a child forked before the VPs started starts its own.
 *
 * The parent forks while main is its only UT (its second VP has not
 * started).  In the child, a UT that spins without yielding runs on the
 * child's second VP while main spins too, and weft_stats_get counts it as
 * ready (running elsewhere), as it must for a program that waits for the
 * others to settle.  Before the fix the child's second VP ran UTs while the
 * runtime took it for gone: threads_ready read 0, and every "wait until the
 * others have parked" in a forked child could return at once (api_fuzz's
 * destroy-while-waited cases, one run in ten under two VPs).  With one VP
 * the spinner runs by the tick and the counts are checked as such.
 */
#include "mn_test.h"

static volatile int started, stop;

static void *spinner(void *arg)
{
	started = 1;
	while (!stop)
		__asm__ volatile("" ::: "memory");
	return arg;
}

static void child(void *arg)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, spinner, NULL));
	for (long i = 0; !started; i++)
		if (s.vps < 2 && i % 4096 == 4095)
			sched_yield();
	CHECK_OK(weft_stats_get(&s, sizeof s));
	if (s.vps >= 2)
		CHECK_EQ(s.threads_ready, 1u);   /* the spinner, running on the other VP */
	stop = 1;
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.threads_ready, 0u);
}

int main(void)
{
	static char err[4096];
	for (int round = 0; round < 20; round++) {
		started = stop = 0;
		int st = test_in_child(child, NULL, err, sizeof err);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "round %d: child status %#x:\n%s\n", round, st, err);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return 0;
}
