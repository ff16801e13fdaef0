/*
 * measure.h — the measuring core that the benchmark (harness.c, fam_*.c)
 * and the peers' programs (bench/peers/) share, so that a peer's number is
 * taken exactly as Weft's and NPTL's are: the result of one row, the
 * calibration and the repetitions, the CSV line, the resident-memory read.
 *
 * C and C++ (the Boost.Context peer includes it); measure.c is the code.
 * Invariant: nothing here calls a thread library, so a peer that links no
 * pthread code (State Threads, Boost.Context) measures only its own calls.
 */
#ifndef WEFT_BENCH_MEASURE_H
#define WEFT_BENCH_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* Print r as the CSV line key,tag,status,median,min,max,reps,iters,sw_per_op,note
 * (commas, bars and newlines in the note become semicolons). */
void print_result(const char *key, const char *tag, struct result *r);

extern double target_ns;   /* one repetition lasts at least this */
extern int reps;           /* repetitions after the warm-up (at most 32) */
extern bool quick;         /* QUICK=1 or --quick: short runs, big rows skipped */

/* Set quick and, with it, target_ns and reps (10 ms and 3 when quick). */
void set_quick(bool on);

/* set_quick from the environment: QUICK set, and not to "" or "0". */
void quick_from_env(void);

/* The options every benchmark program takes: if argv[*i] is --quick, or
 * --tag NAME (then *tag = NAME), take it (advancing *i past NAME) and
 * return true; else false. */
bool measure_option(int argc, char **argv, int *i, const char **tag);

/* The running total of context switches that run_timed_fn reads around its
 * last repetition; NULL (the default): unknown, sw_per_op -1. */
extern uint64_t (*switch_counter)(void);

/* Calibrate n, warm up, time reps repetitions of timed(n); fill r. */
void run_timed_fn(int64_t (*timed)(uint64_t n), struct result *r);

/* Sort v[0..reps) and set r's median, min, max and reps from it. */
void set_median(struct result *r, double *v);

/* qsort comparison of doubles. */
int cmp_double(const void *a, const void *b);

/* This process's resident bytes (/proc/self/statm). */
double rss_bytes(void);

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
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

#ifdef __cplusplus
}
#endif

#endif
