/*
 * harness.h — the contract between the benchmark's harness (harness.c) and
 * its metric families (fam_*.c): the row type and the helpers every family
 * shares; the result type, the timing and the knobs the command line sets
 * are measure.h's, which the peers' programs share too.
 *
 * A family defines its metrics and one table of struct metric, and exports
 * the table with BENCH_FAMILY; harness.c lists the families (its opening
 * comment says how to add one).  A metric is either timed (a function that
 * performs n operations and returns the nanoseconds its timed part took;
 * the harness calibrates n and takes the median) or oneshot (a function
 * that fills a struct result itself, for rows that measure another way).
 *
 * Invariant: everything a timed loop calls is either in the family's own
 * file or static inline here or in measure.h (now_ns, cpu_ns, load, store,
 * wait_until, spawn, join), so that no timed loop pays a call across
 * translation units that it did not pay when the benchmark was one file;
 * and code that runs in a timed region is BENCH_ALIGNED.  Only cold paths
 * (die, na, the calibration) live out of line, in harness.c and measure.c.
 */
#ifndef WEFT_BENCH_HARNESS_H
#define WEFT_BENCH_HARNESS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "measure.h"

#ifdef BENCH_WEFT
#include "weft.h"
#endif

/* ------------------------------------------------------------------ */
/* Units                                                               */

enum unit { U_NS, U_BYTES, U_COUNT };

/* ------------------------------------------------------------------ */
/* Rows                                                                */

/* F_EPOLL: bench/run.sh also runs the row on bench-nptl with
 * BENCH_ECHO_SERVER=epoll and =go (the echo rows' hand-written epoll loop
 * and Go server).
 * F_MN: an M:N row (fam_mn.c): bench/run.sh runs it unpinned on both
 * binaries, and bench-weft measures it in one child process per VP count
 * (WEFT_VPS=1, then 2; BENCH_MN_VPS="1 2 4" to choose), printing each
 * child's line (backend "weft-vpN") and then its own "weft" line: the last
 * count's figures, with every count's median and the speed-up in the note.
 * F_PEERS: a row the peers also run (bench/peers/: State Threads,
 * Boost.Context, Go), each on its own API and by the same method; every
 * peer program answers every such key, with a number or with n/a and why. */
enum { F_UNPINNED = 1, F_WEFT_ONLY = 2, F_EPOLL = 4, F_MN = 8, F_PEERS = 16 };

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
/* Measuring: measure.h (struct result, na, run_timed_fn, set_median,  */
/* now_ns, KEEP, BENCH_ALIGNED, target_ns, reps, quick), and:           */

/* CPU time of the whole process (user + system, every kernel thread):
 * unlike wall time it does not grow while other programs hold the CPU,
 * which is what the tick rows need on a shared machine. */
static inline int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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
