/*
 * measure.c — the measuring core (measure.h): the papers' "dual loop"
 * timing without subtracting the loop, shared by bench-weft, bench-nptl
 * and the peers' C and C++ programs (bench/peers/).
 *
 * A timed metric is a function that performs n operations and returns the
 * nanoseconds its timed part took.  n is calibrated until one repetition
 * lasts at least target_ns (0.2 s; 10 ms with QUICK=1), one warm-up
 * repetition runs, then `reps` (5; 3 quick) repetitions give median, min
 * and max per operation.  bench/peers/goroutines.go does the same in Go.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"

double target_ns = 0.2e9;
int reps = 5;
bool quick;
uint64_t (*switch_counter)(void);

void set_quick(bool on)
{
	quick = on;
	target_ns = on ? 0.01e9 : 0.2e9;
	reps = on ? 3 : 5;
}

void quick_from_env(void)
{
	const char *q = getenv("QUICK");
	set_quick(q && *q && strcmp(q, "0") != 0);
}

bool measure_option(int argc, char **argv, int *i, const char **tag)
{
	if (!strcmp(argv[*i], "--quick")) {
		set_quick(true);
		return true;
	}
	if (!strcmp(argv[*i], "--tag") && *i + 1 < argc) {
		*tag = argv[++*i];
		return true;
	}
	return false;
}

void na(struct result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->ok = false;
	vsnprintf(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

static void clean_note(char *s)
{
	for (; *s; s++)
		if (*s == ',' || *s == '\n' || *s == '|')
			*s = ';';
}

void print_result(const char *key, const char *tag, struct result *r)
{
	clean_note(r->note);
	if (!r->ok) {
		printf("%s,%s,na,,,,,,,%s\n", key, tag, r->note);
		return;
	}
	printf("%s,%s,ok,%.4f,%.4f,%.4f,%d,%" PRIu64 ",", key, tag, r->median, r->min, r->max, r->reps,
	       r->iters);
	if (r->sw_per_op >= 0)
		printf("%.3f", r->sw_per_op);
	printf(",%s\n", r->note);
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void set_median(struct result *r, double *v)
{
	qsort(v, (size_t)reps, sizeof v[0], cmp_double);
	r->ok = true;
	r->reps = reps;
	r->median = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
	r->min = v[0];
	r->max = v[reps - 1];
}

void run_timed_fn(int64_t (*timed)(uint64_t n), struct result *r)
{
	/* Calibrate: grow n until a run lasts a tenth of the target. */
	uint64_t n = 1;
	int64_t t = timed(n);
	while (t < (int64_t)(target_ns / 10) && n < (UINT64_C(1) << 40)) {
		n *= t < (int64_t)(target_ns / 1000) ? 10 : 2;
		t = timed(n);
	}
	if (t <= 0)
		t = 1;
	double scale = target_ns * 1.1 / (double)t;
	if (scale > 1)
		n = (uint64_t)((double)n * scale);
	timed(n / 4 + 1);   /* warm-up */

	double v[32];
	uint64_t sw0 = 0, sw1 = 0;
	for (int i = 0; i < reps; i++) {
		if (i == reps - 1 && switch_counter)
			sw0 = switch_counter();
		int64_t dt = timed(n);
		if (i == reps - 1 && switch_counter)
			sw1 = switch_counter();
		v[i] = (double)dt / (double)n;
	}
	set_median(r, v);
	r->iters = n;
	r->sw_per_op = switch_counter ? (double)(sw1 - sw0) / (double)n : -1;
}

double rss_bytes(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (double)res * (double)sysconf(_SC_PAGESIZE);
}
