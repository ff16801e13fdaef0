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

#include <sys/wait.h>

static volatile int started, stop;

static void *spinner(void *arg)
{
	started = 1;
	while (!stop)
		__asm__ volatile("" ::: "memory");
	return arg;
}

static int child(void)
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
	return 0;
}

int main(void)
{
	for (int round = 0; round < 20; round++) {
		started = stop = 0;
		fflush(NULL);
		pid_t p = fork();
		CHECK(p >= 0);
		if (p == 0)
			_exit(child());
		int st;
		CHECK_EQ(waitpid(p, &st, 0), p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return 0;
}
