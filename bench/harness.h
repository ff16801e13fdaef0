/*
 * harness.h — the contract between the benchmark's harness (harness.c) and
 * its metric families (fam_*.c): the row and result types, the knobs the
 * harness sets from the command line, and the helpers every family shares.
 *
 * A family defines its metrics and one table of struct metric, and exports
 * the table with BENCH_FAMILY; harness.c lists the families (its opening
 * comment says how to add one).  A metric is either timed (a function that
 * performs n operations and returns the nanoseconds its timed part took;
 * the harness calibrates n and takes the median) or oneshot (a function
 * that fills a struct result itself, for rows that measure another way).
 *
 * Invariant: everything a timed loop calls is either in the family's own
 * file or static inline here (now_ns, cpu_ns, load, store, wait_until,
 * spawn, join), so that no timed loop pays a call across translation units
 * that it did not pay when the benchmark was one file; and code that runs
 * in a timed region is BENCH_ALIGNED.  Only cold paths (die, na, the
 * calibration) live out of line in harness.c.
 */
#ifndef WEFT_BENCH_HARNESS_H
#define WEFT_BENCH_HARNESS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef BENCH_WEFT
#include "weft.h"
#endif

/* ------------------------------------------------------------------ */
/* Results                                                             */

enum unit { U_NS, U_BYTES, U_COUNT };

struct result {
	bool ok;
	double median, min, max;   /* ns per op, bytes per thread, or a count */
	int reps;
	uint64_t iters;            /* operations per repetition */
	double sw_per_op;          /* context switches per op (-1: unknown) */
	char note[800];            /* reason when !ok; remark otherwise */
};

/* Mark r not measured, with the reason (printed as the CSV's note). */
void na(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------ */
/* Rows                                                                */

/* F_EPOLL: bench/run.sh also runs the row on bench-nptl with
 * BENCH_ECHO_SERVER=epoll and =go (the echo rows' hand-written epoll loop
 * and Go server).
 * F_MN: an M:N row (fam_mn.c): bench/run.sh runs it unpinned on both
 * binaries, and bench-weft measures it in one child process per VP count
 * (WEFT_VPS=1, then 2; BENCH_MN_VPS="1 2 4" to choose), printing each
 * child's line (backend "weft-vpN") and then its own "weft" line: the last
 * count's figures, with every count's median and the speed-up in the note. */
enum { F_UNPINNED = 1, F_WEFT_ONLY = 2, F_EPOLL = 4, F_MN = 8 };

struct metric {
	const char *key, *group;
	enum unit unit;
	int flags;
	const char *label;
	const char *history;         /* what the papers (and peers) reported */
	const char *needs;           /* sync calls that must be Weft's */
	int64_t (*timed)(uint64_t n);
	void (*oneshot)(struct result *r);
	const char *na_weft, *na_nptl;
	const char *env;             /* NAME=value ... set for the row's runs (run.sh) */
};

#define SYNC_MUTEX "pthread_mutex_lock pthread_mutex_unlock"
#define SYNC_COND SYNC_MUTEX " pthread_cond_wait pthread_cond_signal"

/* One family's rows, in the order --list prints them. */
struct family {
	const struct metric *metrics;
	size_t n;
};

/* In a family's file, after its table: BENCH_FAMILY(fam_name, table); */
#define BENCH_FAMILY(name, table) \
	const struct family name = { table, sizeof table / sizeof table[0] }

/* ------------------------------------------------------------------ */
/* What the command line set                                           */

extern double target_ns;   /* one repetition lasts at least this */
extern int reps;           /* repetitions after the warm-up (at most 32) */
extern bool quick;         /* QUICK=1 or --quick: short runs, big rows skipped */

/* ------------------------------------------------------------------ */
/* Measuring                                                           */

/* Calibrate n, warm up, time reps repetitions of timed(n); fill r. */
void run_timed_fn(int64_t (*timed)(uint64_t n), struct result *r);

/* Sort v[0..reps) and set r's median, min, max and reps from it. */
void set_median(struct result *r, double *v);

/* qsort comparison of doubles. */
int cmp_double(const void *a, const void *b);

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time of the whole process (user + system, every kernel thread):
 * unlike wall time it does not grow while other programs hold the CPU,
 * which is what the tick rows need on a shared machine. */
static inline int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Keep the compiler from deleting or hoisting loop bodies. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

/*
 * On every function whose code runs inside a timed region (the timed
 * function, the partner thread or worker, a callee in the loop) and on
 * data such a loop touches that is larger than a word.  Where the linker
 * happens to put a loop changes whenever other code changes, and differs
 * between bench-weft and bench-nptl; for the rows of a few nanoseconds
 * that alone moved results by up to 10% (setjmp + longjmp, the same code
 * calling the same glibc in both binaries, differed by 9%).  On a 64-byte
 * boundary the same code runs from the same cache-line offsets in both
 * binaries and in every build.
 */
#define BENCH_ALIGNED __attribute__((aligned(64)))

/* ------------------------------------------------------------------ */
/* Threads                                                             */

/* Print "weftbench: what: strerror(e)" and exit with status 2. */
void die(const char *what, int e) __attribute__((noreturn));

/* Run argv (argv[0] a path) in a child process with env's NAME=value
 * words added to the environment, its standard output into out (at most
 * size - 1 bytes, then a NUL); returns its wait status. */
int run_capture(char *const argv[], const char *env, char *out, size_t size);

static inline int load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Wait for another thread without spinning forever under M:1. */
static inline void wait_until(const int *p, int v)
{
	while (load(p) != v)
		sched_yield();
}

static inline pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int e = pthread_create(&t, NULL, fn, arg);
	if (e)
		die("pthread_create", e);
	return t;
}

static inline void join(pthread_t t)
{
	int e = pthread_join(t, NULL);
	if (e)
		die("pthread_join", e);
}

/* ------------------------------------------------------------------ */
/* Loops one family lends another                                      */

/* Timed metrics of the Threads and Synchronisation families that the Seed
 * interfaces family runs as its NPTL side, each the nearest pthread program
 * to a seed row: create + join, two threads sched_yield in turn (per
 * switch), pthread_self, an uncontended mutex lock + unlock.  Lending a
 * whole metric adds no call inside a timed loop (the harness calls every
 * metric through a pointer). */
int64_t bench_create_join(uint64_t n);
int64_t bench_yield_busy(uint64_t n);
int64_t bench_self(uint64_t n);
int64_t bench_mutex(uint64_t n);

/* The Floor family's `lock cmpxchg` + store pair, which the M:N family
 * runs again unpinned beside its uncontended lock. */
int64_t bench_cmpxchg(uint64_t n);

#endif
