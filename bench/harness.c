/*
 * harness.c — the benchmark behind `make bench`: the command line, the
 * list of metric families, timing and printing.  The metrics themselves
 * live in one file per family (fam_*.c); harness.h is the contract.
 *
 * The sources are built twice: bench-weft links libweft (BENCH_WEFT
 * defined, the arch switch compiled in); bench-nptl links plain glibc.
 * Each run measures one metric and prints one CSV line; bench/run.sh runs
 * every metric of both binaries, pinned to one CPU, and turns the lines
 * into the Markdown table, the CSV and the chart.
 *
 *   bench-X --list          key|group|unit|flags|label|history|env, one a line
 *   bench-X KEY             key,backend,status,median,min,max,reps,iters,sw_per_op,note
 *
 * Method (the papers' "dual loop" timing, without subtracting the loop):
 * each timed metric is a function that performs n operations and returns the
 * nanoseconds its timed part took, so set-up (creating the partner thread,
 * joining it) is never counted.  n is calibrated until one repetition lasts
 * at least target_ns (0.2 s; 10 ms with QUICK=1), one warm-up repetition
 * runs, then `reps` (5; 3 quick) repetitions give median, min and max per
 * operation.  The tick rows and the memory rows measure differently and say
 * how where they are defined.
 *
 * Invariant: a metric that cannot run on this backend prints status "na"
 * and the reason, never a number.  Every wait between threads is either a
 * blocking pthread call or a sched_yield loop: under Weft's M:1 runtime a
 * UT loses the processor only inside Weft or at a time-slice tick, so a
 * plain spin would burn whole slices (or, with slicing off, never end).
 * Keys are unique across families; --list prints the families' rows in the
 * order of `families` below, which is the order of the table.
 *
 * Adding a family:
 *   1. Write bench/fam_NAME.c: open it with a comment saying what it
 *      measures and how; #define _GNU_SOURCE, include "harness.h"; define
 *      the metrics (a timed loop stays in this file, beside the operation
 *      it times, calling nothing out of line but the operation itself;
 *      mark the functions that run in it BENCH_ALIGNED) and one
 *      `static const struct metric` table, then
 *      `BENCH_FAMILY(fam_NAME, table);`.
 *   2. Declare it in the extern list below and put it in `families` where
 *      its rows belong in the table.
 *   3. Add fam_NAME.c to WEFT_BENCH_SRC in bench/CMakeLists.txt.
 * A row that needs Weft to define some sync calls names them in `needs`;
 * one that cannot run on a backend says why in na_weft / na_nptl; one that
 * needs an environment (WEFT_ACTIVATIONS=off: the variables Weft reads when
 * it starts) names it in env, and bench/run.sh sets it for the row's runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"

#ifdef BENCH_WEFT
#define BACKEND "weft"
#else
#define BACKEND "nptl"
#endif

/* ------------------------------------------------------------------ */
/* The families, in table order                                        */

extern const struct family fam_threads, fam_sync, fam_bershad, fam_kernel, fam_tick, fam_tas, fam_memory,
	fam_tls, fam_activations, fam_echo, fam_floor, fam_seeds, fam_signals;

static const struct family *const families[] = {
	&fam_threads, &fam_sync, &fam_bershad, &fam_kernel, &fam_tick, &fam_tas, &fam_memory, &fam_tls,
	&fam_activations, &fam_echo, &fam_floor, &fam_seeds, &fam_signals,
};

#define NFAMILIES (sizeof families / sizeof families[0])

/* ------------------------------------------------------------------ */
/* Results                                                             */

static const char *const unit_name[] = { "ns", "bytes", "count" };

static const char *backend_tag = BACKEND;
double target_ns = 0.2e9;
int reps = 5;
bool quick;

static void clean_note(char *s)
{
	for (; *s; s++)
		if (*s == ',' || *s == '\n' || *s == '|')
			*s = ';';
}

static void print_result(const char *key, struct result *r)
{
	clean_note(r->note);
	if (!r->ok) {
		printf("%s,%s,na,,,,,,,%s\n", key, backend_tag, r->note);
		return;
	}
	printf("%s,%s,ok,%.4f,%.4f,%.4f,%d,%" PRIu64 ",", key, backend_tag, r->median, r->min,
	       r->max, r->reps, r->iters);
	if (r->sw_per_op >= 0)
		printf("%.3f", r->sw_per_op);
	printf(",%s\n", r->note);
}

void na(struct result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->ok = false;
	vsnprintf(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

void die(const char *what, int e)
{
	fprintf(stderr, "weftbench: %s: %s\n", what, strerror(e));
	exit(2);
}

/* ------------------------------------------------------------------ */
/* Switch counting                                                     */

#ifndef BENCH_WEFT
/* Kernel-visible context switches of the whole process (all threads). */
static uint64_t kernel_switches(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}
#endif

/* UT switches under Weft, kernel switches under NPTL. */
static uint64_t switches(void)
{
#ifdef BENCH_WEFT
	struct weft_stats s;
	if (weft_stats_get(&s, sizeof s) == 0)
		return s.context_switches;
	return 0;
#else
	return kernel_switches();
#endif
}

/* ------------------------------------------------------------------ */
/* Which calls are Weft's.  bench-weft links -lweft before libc, so a   */
/* pthread function libweft does not define yet silently comes from     */
/* glibc, whose blocking sync would stop Weft's single kernel thread.   */

#ifdef BENCH_WEFT
static bool weft_defines(const char *fn)
{
	Dl_info self, def;
	if (!dladdr((void *)weft_version, &self) || !self.dli_fname)
		return false;
	void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return false;
	void *p = dlsym(h, fn);
	bool ours = p && dladdr(p, &def) && def.dli_fname && !strcmp(def.dli_fname, self.dli_fname);
	dlclose(h);
	return ours;
}
#endif

/* NULL when every function in the space-separated list is the backend's own. */
static const char *missing_sync(const char *needs)
{
#ifdef BENCH_WEFT
	static char name[64];
	const char *p = needs;
	while (p && *p) {
		size_t n = strcspn(p, " ");
		if (n && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = 0;
			if (!weft_defines(name))
				return name;
		}
		p += n;
		p += strspn(p, " ");
	}
#else
	(void)needs;
#endif
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Timing                                                              */

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
		if (i == reps - 1)
			sw0 = switches();
		int64_t dt = timed(n);
		if (i == reps - 1)
			sw1 = switches();
		v[i] = (double)dt / (double)n;
	}
	set_median(r, v);
	r->iters = n;
	r->sw_per_op = (double)(sw1 - sw0) / (double)n;
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */

static void run_metric(const struct metric *m)
{
	struct result r;
	memset(&r, 0, sizeof r);
	r.sw_per_op = -1;
#ifdef BENCH_WEFT
	const char *why_not = m->na_weft;
#else
	const char *why_not = m->na_nptl;
#endif
	const char *missing;
	if (why_not)
		na(&r, "%s", why_not);
	else if (m->needs && (missing = missing_sync(m->needs)))
		na(&r, "sync not yet in Weft (%s is glibc's)", missing);
	else if (m->oneshot)
		m->oneshot(&r);
	else if (m->timed)
		run_timed_fn(m->timed, &r);
	else
		na(&r, "not measured");
	fflush(stdout);
	print_result(m->key, &r);
}

static const struct metric *find_metric(const char *key)
{
	for (size_t f = 0; f < NFAMILIES; f++)
		for (size_t i = 0; i < families[f]->n; i++)
			if (!strcmp(families[f]->metrics[i].key, key))
				return &families[f]->metrics[i];
	return NULL;
}

/* A key defined twice would make the second row unreachable: refuse. */
static void check_keys_unique(void)
{
	for (size_t f = 0; f < NFAMILIES; f++) {
		for (size_t i = 0; i < families[f]->n; i++) {
			const struct metric *m = &families[f]->metrics[i];
			if (find_metric(m->key) != m) {
				fprintf(stderr, "bench-%s: metric '%s' is defined twice\n", BACKEND, m->key);
				exit(2);
			}
		}
	}
}

static void list_metrics(void)
{
	for (size_t f = 0; f < NFAMILIES; f++) {
		for (size_t i = 0; i < families[f]->n; i++) {
			const struct metric *m = &families[f]->metrics[i];
			printf("%s|%s|%s|%s%s%s|%s|%s|%s\n", m->key, m->group, unit_name[m->unit],
			       m->flags & F_UNPINNED ? "u" : "", m->flags & F_WEFT_ONLY ? "w" : "",
			       m->flags & F_EPOLL ? "e" : "", m->label, m->history, m->env ? m->env : "");
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-%s [--quick] [--tag NAME] --list | KEY...\n", BACKEND);
	exit(2);
}

int main(int argc, char **argv)
{
	check_keys_unique();
	const char *q = getenv("QUICK");
	quick = q && *q && strcmp(q, "0") != 0;
	int first = 1;
	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--list")) {
			list_metrics();
			return 0;
		} else if (!strcmp(argv[first], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[first], "--tag") && first + 1 < argc) {
			backend_tag = argv[++first];
		} else {
			usage();
		}
	}
	if (first >= argc)
		usage();
	if (quick) {
		target_ns = 0.01e9;
		reps = 3;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = first; i < argc; i++) {
		const struct metric *m = find_metric(argv[i]);
		if (!m) {
			fprintf(stderr, "bench-%s: no metric '%s' (see --list)\n", BACKEND, argv[i]);
			return 2;
		}
		run_metric(m);
	}
	/* Idle threads of the memory rows never end: leave without joining. */
	fflush(stdout);
	_exit(0);
}
