/*
 * mn_level0_per_vp — under M:N the SCHED_OTHER level is kept per VP, and
 * the VPs steal from each other's lists so that they share its threads
 * evenly (src/runtime/sched.c, "level 0 per VP"; docs/mn.md).
 *
 * main makes NSPIN CPU-bound threads one after the other.  Each is made
 * ready on main's VP's list; each counts loops until main, after RUN_MS
 * asleep, sets `stop`.  Time slicing rotates each VP's list.
 *
 * Asserted:
 *  - every spinner ran, and the least advanced made at least 1/MAX_SKEW of
 *    the loops of the most advanced.  The VP that finds its own list empty
 *    steals one thread; without the rule that a VP whose list is two
 *    shorter than another's takes from that one, the stolen thread ran
 *    alone on its VP and the other seven shared the first: one thread got
 *    seven times the time of each of the others.  Even lists give each
 *    spinner about 1/NSPIN of the two VPs;
 *  - with two VPs in force (weft_stats_get: vps), weft_stats_get counts
 *    steals: the second VP took threads from the list main filled;
 *  - with one VP, no steal is counted (there is no other list).
 */
#include "check.h"

#include <stdatomic.h>
#include <weft.h>

#define NSPIN 8
/* 1 s, not 0.4: in CI beside other tests a VP's kernel thread may lose
 * its CPU to another process for a good part of a short run, and then
 * its four spinners all fall behind the other VP's (ci141, copy-stack
 * stage: 22.5M loops against 323.7M; 0 in 60 runs here, loaded or not) */
#define RUN_MS 1000
#define MAX_SKEW 4

static atomic_int stop;
static atomic_long loops[NSPIN];

static void *spin(void *arg)
{
	int i = (int)(intptr_t)arg;
	long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		n++;
		if ((n & 1023) == 0)
			atomic_store_explicit(&loops[i], n, memory_order_relaxed);
	}
	atomic_store_explicit(&loops[i], n, memory_order_relaxed);
	return NULL;
}

int main(void)
{
	pthread_t t[NSPIN];
	for (int i = 0; i < NSPIN; i++)
		CHECK_OK(pthread_create(&t[i], NULL, spin, (void *)(intptr_t)i));
	struct timespec ts = { .tv_sec = RUN_MS / 1000, .tv_nsec = RUN_MS % 1000 * 1000000L };
	CHECK_OK(nanosleep(&ts, NULL));
	atomic_store(&stop, 1);
	for (int i = 0; i < NSPIN; i++)
		CHECK_OK(pthread_join(t[i], NULL));

	long lo = loops[0], hi = loops[0];
	for (int i = 0; i < NSPIN; i++) {
		if (loops[i] < lo)
			lo = loops[i];
		if (loops[i] > hi)
			hi = loops[i];
	}
	CHECK(lo > 0);
	if (lo * MAX_SKEW < hi) {
		fprintf(stderr, "the least advanced spinner made %ld loops, the most %ld (more than %dx); all:", lo, hi,
			MAX_SKEW);
		for (int i = 0; i < NSPIN; i++)
			fprintf(stderr, " %ld", (long)loops[i]);
		struct weft_stats f;
		if (weft_stats_get(&f, sizeof f) == 0)
			fprintf(stderr, "; steals %llu", (unsigned long long)f.steals);
		fprintf(stderr, "\n");
		return 1;
	}

	struct weft_stats st;
	CHECK_OK(weft_stats_get(&st, sizeof st));
	if (st.vps >= 2)
		CHECK(st.steals > 0);
	else
		CHECK(st.steals == 0);
	return 0;
}
