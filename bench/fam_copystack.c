/*
 * fam_copystack.c — the "Copy-stack threads" rows: Marovich's Table 3 on
 * this machine, and what an idle thread costs in each stack mode.
 *
 * Yield, busy (two threads in turn, per switch) with ½, 1, 2 and 4 KiB of
 * live stack each, for separate-stack and copy-stack UTs (weft.h,
 * weft_attr_setstackmode): each thread holds a buffer of that size in a
 * frame below its loop, so every switch between two copy-stack threads
 * saves one live stack and restores the other.  The stack actually
 * copied — the buffer plus the frames of the loop and of Weft's yield —
 * is read from the runtime's counters (stack_bytes_copied over the copies
 * made) and given in each row's note.  cs_fit fits the copy-stack rows
 * (time per switch against KiB copied, least squares), as Marovich did:
 * its value is the marginal cost per KiB, its note the fixed cost.
 *
 * Then resident bytes per idle thread with 100,000 alive in each mode,
 * and the most idle copy-stack threads this machine keeps under the 12 GiB
 * budget (target: 10,000,000).  Weft only: NPTL threads cannot share a
 * stack.
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define GROUP "Copy-stack threads"

#ifdef BENCH_WEFT

/* ---- yield with live stack ---- */

struct cs_pair {
	uint64_t n;
	int ready;
	size_t live;
	int mode;
};

/* Hold `live` bytes of stack below the loop, touched so they are live. */
static BENCH_ALIGNED void yield_loop(uint64_t n, size_t live)
{
	volatile char *buf = alloca(live);
	buf[0] = 1;
	buf[live - 1] = 1;
	for (uint64_t i = 0; i < n; i++)
		sched_yield();
	KEEP(buf[0]);
}

static BENCH_ALIGNED void *cs_partner(void *a)
{
	struct cs_pair *y = a;
	store(&y->ready, 1);
	yield_loop(y->n, y->live);
	return NULL;
}

static pthread_t spawn_mode(void *(*fn)(void *), void *arg, int mode)
{
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	weft_attr_setstackmode(&at, mode);
	int e = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	if (e)
		die("pthread_create", e);
	return t;
}

/* The timed part: the main side of the pair, itself a UT of the mode. */
struct cs_run {
	struct cs_pair y;
	int64_t dt;
};

static BENCH_ALIGNED void *cs_main_side(void *a)
{
	struct cs_run *r = a;
	pthread_t t = spawn_mode(cs_partner, &r->y, r->y.mode);
	wait_until(&r->y.ready, 1);
	volatile char *buf = alloca(r->y.live);
	buf[0] = 1;
	buf[r->y.live - 1] = 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < r->y.n; i++)
		sched_yield();
	r->dt = now_ns() - t0;
	KEEP(buf[0]);
	join(t);
	return NULL;
}

/* Bytes per copy over the last yield_live run (copy-stack rows). */
static double last_bytes_per_copy;

static int64_t yield_live(uint64_t n, size_t live, int mode)
{
	struct cs_run r = { .y = { .n = n / 2 + 1, .live = live, .mode = mode } };
	struct weft_stats s0;
	weft_stats_get(&s0, sizeof s0);
	/* both sides are UTs of the mode (main keeps the process stack) */
	join(spawn_mode(cs_main_side, &r, mode));
	struct weft_stats s1;
	weft_stats_get(&s1, sizeof s1);
	uint64_t copies = (s1.stack_saves - s0.stack_saves) + (s1.stack_restores - s0.stack_restores);
	last_bytes_per_copy = copies ? (double)(s1.stack_bytes_copied - s0.stack_bytes_copied) / (double)copies : 0;
	uint64_t switches = (n / 2 + 1) * 2;
	return r.dt * (int64_t)n / (int64_t)switches;
}

static void note_bytes(struct result *r, int mode)
{
	if (mode == WEFT_STACK_COPY)
		snprintf(r->note, sizeof r->note, "%.0f bytes copied each way per switch", last_bytes_per_copy);
	else
		snprintf(r->note, sizeof r->note, "separate stacks: nothing copied");
}

#define YIELD_ROW(name, live, mode)                                          \
	static int64_t t_##name(uint64_t n) { return yield_live(n, live, mode); } \
	static void m_##name(struct result *r)                                 \
	{                                                                      \
		run_timed_fn(t_##name, r);                                     \
		if (r->ok)                                                     \
			note_bytes(r, mode);                                   \
	}
YIELD_ROW(sep_512, 512, WEFT_STACK_SEPARATE)
YIELD_ROW(sep_1k, 1024, WEFT_STACK_SEPARATE)
YIELD_ROW(sep_2k, 2048, WEFT_STACK_SEPARATE)
YIELD_ROW(sep_4k, 4096, WEFT_STACK_SEPARATE)
YIELD_ROW(copy_512, 512, WEFT_STACK_COPY)
YIELD_ROW(copy_1k, 1024, WEFT_STACK_COPY)
YIELD_ROW(copy_2k, 2048, WEFT_STACK_COPY)
YIELD_ROW(copy_4k, 4096, WEFT_STACK_COPY)

/* Marovich's fit: time per switch against KiB copied each way. */
static void m_fit(struct result *r)
{
	int64_t (*const fns[])(uint64_t) = { t_copy_512, t_copy_1k, t_copy_2k, t_copy_4k };
	double x[4], y[4];
	for (int i = 0; i < 4; i++) {
		struct result one;
		memset(&one, 0, sizeof one);
		run_timed_fn(fns[i], &one);
		if (!one.ok) {
			na(r, "the %d-th copy-stack row was not measured: %s", i, one.note);
			return;
		}
		x[i] = last_bytes_per_copy / 1024;
		y[i] = one.median;
	}
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (int i = 0; i < 4; i++) {
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
	}
	double slope = (4 * sxy - sx * sy) / (4 * sxx - sx * sx);
	double fixed = (sy - slope * sx) / 4;
	r->ok = true;
	r->median = r->min = r->max = slope;
	r->reps = 1;
	r->iters = 4;
	r->sw_per_op = -1;
	snprintf(r->note, sizeof r->note,
		 "ns per KiB of live stack (least squares over %.2f/%.2f/%.2f/%.2f KiB copied: "
		 "%.1f/%.1f/%.1f/%.1f ns); fixed cost %.1f ns per switch",
		 x[0], x[1], x[2], x[3], y[0], y[1], y[2], y[3], fixed);
}

/* ---- idle threads ---- */

static volatile long idle_parked;
static sem_t *idle_sem;

static void *idle_sem_ut(void *a)
{
	__atomic_fetch_add(&idle_parked, 1, __ATOMIC_RELAXED);
	sem_wait(idle_sem);
	return a;
}

#define GIB (1024.0 * 1024 * 1024)

/* Make up to `want` idle UTs of `mode` (each parks in sem_wait), keeping
 * resident memory under the 12 GiB budget; returns how many. */
static long make_idle(long want, int mode, double rss0, char *why, size_t len)
{
	static sem_t s;
	sem_init(&s, 0, 0);
	idle_sem = &s;
	pthread_attr_t at;
	pthread_attr_init(&at);
	weft_attr_setstackmode(&at, mode);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	long made = 0, base = idle_parked;
	why[0] = 0;
	while (made < want) {
		pthread_t t;
		int e = pthread_create(&t, &at, idle_sem_ut, NULL);
		if (e) {
			snprintf(why, len, "pthread_create: %s after %ld", strerror(e), made);
			break;
		}
		made++;
		if (made % 4096 == 0) {
			while (idle_parked - base < made)
				sched_yield();
			if (rss_bytes() - rss0 > 12 * GIB) {
				snprintf(why, len, "stopped at the 12 GiB budget");
				break;
			}
		}
	}
	while (idle_parked - base < made)
		sched_yield();
	pthread_attr_destroy(&at);
	return made;
}

static void idle_rss(struct result *r, int mode, long n)
{
	char why[200];
	double rss0 = rss_bytes();
	long made = make_idle(n, mode, rss0, why, sizeof why);
	double rss1 = rss_bytes();
	if (made < n) {
		na(r, "only %ld threads: %s", made, why);
		return;
	}
	r->ok = true;
	r->median = r->min = r->max = (rss1 - rss0) / (double)made;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
}

static void m_idle_copy(struct result *r)
{
	if (quick) {
		na(r, "skipped with QUICK=1");
		return;
	}
	idle_rss(r, WEFT_STACK_COPY, 100000);
}

static void m_idle_sep(struct result *r)
{
	if (quick) {
		na(r, "skipped with QUICK=1");
		return;
	}
	idle_rss(r, WEFT_STACK_SEPARATE, 100000);
}

static void most(struct result *r, int mode, long cap)
{
	if (quick) {
		na(r, "skipped with QUICK=1");
		return;
	}
	char why[200];
	double rss0 = rss_bytes();
	int64_t t0 = now_ns();
	long made = make_idle(cap, mode, rss0, why, sizeof why);
	double secs = (double)(now_ns() - t0) / 1e9;
	double rss1 = rss_bytes();
	r->ok = true;
	r->median = r->min = r->max = (double)made;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
	snprintf(r->note, sizeof r->note, "%s%s%.2f GiB resident (%.0f bytes each), made in %.1f s",
		 made >= cap ? "the cap" : why, "; ", (rss1 - rss0) / GIB, (rss1 - rss0) / (double)made, secs);
}

static void m_most_copy(struct result *r) { most(r, WEFT_STACK_COPY, 10000000); }
static void m_most_sep(struct result *r) { most(r, WEFT_STACK_SEPARATE, 10000000); }

#define NA_NPTL NULL
#else
#define NA_NPTL "NPTL threads cannot share a stack (Weft's weft_attr_setstackmode)"
#define m_sep_512 NULL
#define m_sep_1k NULL
#define m_sep_2k NULL
#define m_sep_4k NULL
#define m_copy_512 NULL
#define m_copy_1k NULL
#define m_copy_2k NULL
#define m_copy_4k NULL
#define m_fit NULL
#define m_idle_copy NULL
#define m_idle_sep NULL
#define m_most_copy NULL
#define m_most_sep NULL
#endif

#define MAROVICH_SEP "22.2 µs (Marovich, separate stacks; HP 835); 53.8 µs (HP 370)"
#define MAROVICH_COPY "25.5 µs + 108 µs/KiB (Marovich, copied; HP 835); 53 µs + 136 µs/KiB (HP 370)"

static const struct metric rows[] = {
	{ "cs_yield_sep_512", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, ½ KiB live stack each, separate stacks",
	  MAROVICH_SEP, NULL, NULL, m_sep_512, NULL, NA_NPTL },
	{ "cs_yield_sep_1k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 1 KiB live stack each, separate stacks",
	  MAROVICH_SEP, NULL, NULL, m_sep_1k, NULL, NA_NPTL },
	{ "cs_yield_sep_2k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 2 KiB live stack each, separate stacks",
	  MAROVICH_SEP, NULL, NULL, m_sep_2k, NULL, NA_NPTL },
	{ "cs_yield_sep_4k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 4 KiB live stack each, separate stacks",
	  MAROVICH_SEP, NULL, NULL, m_sep_4k, NULL, NA_NPTL },
	{ "cs_yield_copy_512", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, ½ KiB live stack each, copy-stack",
	  MAROVICH_COPY, NULL, NULL, m_copy_512, NULL, NA_NPTL },
	{ "cs_yield_copy_1k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 1 KiB live stack each, copy-stack",
	  MAROVICH_COPY, NULL, NULL, m_copy_1k, NULL, NA_NPTL },
	{ "cs_yield_copy_2k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 2 KiB live stack each, copy-stack",
	  MAROVICH_COPY, NULL, NULL, m_copy_2k, NULL, NA_NPTL },
	{ "cs_yield_copy_4k", GROUP, U_NS, F_WEFT_ONLY, "yield, busy, 4 KiB live stack each, copy-stack",
	  MAROVICH_COPY, NULL, NULL, m_copy_4k, NULL, NA_NPTL },
	{ "cs_fit", GROUP, U_NS, F_WEFT_ONLY, "copy-stack yield: marginal ns per KiB copied (note: fixed cost)",
	  "108 µs/KiB, fixed 25.5 µs (Marovich; HP 835); 136 µs/KiB, fixed 53 µs (HP 370)", NULL, NULL, m_fit,
	  NULL, NA_NPTL },
	{ "cs_idle_sep", GROUP, U_BYTES, F_WEFT_ONLY, "resident bytes per idle thread, 100,000 alive, separate stacks",
	  "-", NULL, NULL, m_idle_sep, NULL, NA_NPTL },
	{ "cs_idle_copy", GROUP, U_BYTES, F_WEFT_ONLY, "resident bytes per idle thread, 100,000 alive, copy-stack",
	  "libaco: 10,000,000 coroutines in 2.8 GB", NULL, NULL, m_idle_copy, NULL, NA_NPTL },
	{ "cs_most_sep", GROUP, U_COUNT, F_WEFT_ONLY, "most idle threads alive (12 GiB budget, cap 10,000,000), separate stacks",
	  "-", NULL, NULL, m_most_sep, NULL, NA_NPTL },
	{ "cs_most_copy", GROUP, U_COUNT, F_WEFT_ONLY, "most idle threads alive (12 GiB budget, cap 10,000,000), copy-stack",
	  "target: 10,000,000 in under 12 GiB", NULL, NULL, m_most_copy, NULL, NA_NPTL },
};

BENCH_FAMILY(fam_copystack, rows);
