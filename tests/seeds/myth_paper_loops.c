/* Small & Seltzer's Myth microbenchmarks (section 4), against <weft/myth.h>
 * as the paper describes them: "repeatedly acquires and releases a single
 * lock" (Table 1); "forks a child thread and then joins with the child; the
 * child immediately returns" (Table 3); "forks a child thread and
 * repeatedly yields to the child thread; the child immediately yields to
 * the parent" (Table 4), timed with the time-of-day clock.  The count comes
 * from stdin (100,000 in the paper).  Checks: the lock really is held and
 * free in turn (trylock), every child's value comes back through th_join,
 * the yields alternate parent/child exactly, and children run on the
 * parent's kernel thread (the program's pthread calls are Weft's although
 * it names no Weft symbol).  Prints the paper's three figures in µs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* gettid */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>
#include <weft/myth.h>

static mutex m;                     /* Figure 1's type name */
static long n, turns, fails;
static int last = -1;
static pid_t parent_tid;

static double now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1e6 + tv.tv_usec;
}

static void *child_returns(void *arg)
{
	if (gettid() != parent_tid)
		fails++;
	return arg;
}

static void *child_yields(void *arg)
{
	for (long i = 0; i < n; i++) {
		if (last != 0)
			fails++;
		last = 1;
		turns++;
		th_yield();
	}
	return NULL;
}

int main(void)
{
	if (scanf("%ld", &n) != 1 || n < 1)
		return 2;
	th_init(1);
	parent_tid = gettid();

	double t0 = now_us();
	for (long i = 0; i < n; i++) {
		th_mutex_lock(&m);
		th_mutex_unlock(&m);
	}
	double lock = (now_us() - t0) / n;
	if (th_mutex_trylock(&m) != 0 || th_mutex_trylock(&m) != -1 || errno != EBUSY ||
	    th_mutex_unlock(&m) != 0)
		return 3;

	t0 = now_us();
	for (long i = 0; i < n; i++) {
		th_thread_t t = th_fork(child_returns, (void *)(i + 1));
		if (!t || th_join(t) != (void *)(i + 1))
			return 4;
	}
	double fork = (now_us() - t0) / n;

	long half = n / 2 > 0 ? n / 2 : 1;
	long saved = n;
	n = half;
	th_thread_t c = th_fork(child_yields, NULL);
	t0 = now_us();
	for (long i = 0; i < half; i++) {
		if (i > 0 && last != 1)
			fails++;
		last = 0;
		turns++;
		th_yield();
	}
	double yield = (now_us() - t0) / (2.0 * half);
	void *v = th_join(c);
	if (v != NULL || turns != 2 * half || fails) {
		fprintf(stderr, "yield: join %p, turns %ld of %ld, %ld out of turn\n", v, turns,
			2 * half, fails);
		return 5;
	}
	n = saved;

	printf("Lock/Unlock = %.4f us\nFork = %.4f us\nYield = %.4f us\n", lock, fork, yield);
	return 0;
}
