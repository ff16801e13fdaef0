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
 *   bench-weft KEY          (an M:N row, flag F_MN) one line per VP count,
 *                           backend weft-vpN, then the summary line, weft
 *   bench-weft --vp-child --tag weft-vpN KEY
 *                           what the M:N parent runs, WEFT_VPS=N set: the
 *                           measurement itself, in this process
 *
 * Method (measure.c: the papers' "dual loop" timing, without subtracting
 * the loop): each timed metric is a function that performs n operations and
 * returns the nanoseconds its timed part took, so set-up (creating the
 * partner thread, joining it) is never counted.  n is calibrated until one
 * repetition lasts at least target_ns (0.2 s; 10 ms with QUICK=1), one
 * warm-up repetition runs, then `reps` (5; 3 quick) repetitions give median,
 * min and max per operation.  The tick rows and the memory rows measure
 * differently and say how where they are defined.
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
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
	fam_tls, fam_activations, fam_echo, fam_floor, fam_seeds, fam_signals, fam_mn, fam_copystack;

static const struct family *const families[] = {
	&fam_threads, &fam_sync, &fam_bershad, &fam_kernel, &fam_tick, &fam_tas, &fam_memory, &fam_copystack, &fam_tls,
	&fam_activations, &fam_echo, &fam_floor, &fam_seeds, &fam_signals, &fam_mn,
};

#define NFAMILIES (sizeof families / sizeof families[0])

/* ------------------------------------------------------------------ */
/* Results                                                             */

static const char *const unit_name[] = { "ns", "bytes", "count" };

static const char *backend_tag = BACKEND;

void die(const char *what, int e)
{
	fprintf(stderr, "weftbench: %s: %s\n", what, strerror(e));
	exit(2);
}

int run_capture(char *const argv[], const char *env, char *out, size_t size)
{
	int fd[2];
	if (pipe2(fd, O_CLOEXEC))
		die("pipe2", errno);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		dup2(fd[1], 1);
		char vars[512];
		snprintf(vars, sizeof vars, "%s", env ? env : "");
		for (char *save, *kv = strtok_r(vars, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(kv, '=');
			if (eq) {
				*eq = 0;
				setenv(kv, eq + 1, 1);
			}
		}
		execv(argv[0], argv);
		fprintf(stderr, "weftbench: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	size_t len = 0;
	for (;;) {
		ssize_t k = read(fd[0], out + len, size - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (len += (size_t)k) == size - 1)
			break;
	}
	out[len] = 0;
	close(fd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
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
/* M:N rows (F_MN): unpinned, and under Weft one child per VP count     */

/* Set by --vp-child: this process is an M:N row's child, WEFT_VPS set. */
static bool vp_child;

/* Prefix r's note with what would make an M:N figure misleading: fewer
 * than two CPUs allowed (run pinned), or, in a child, a VP count other
 * than the one WEFT_VPS asked for (a libweft without M:N uses 1). */
static void mn_annotate(struct result *r)
{
	char pre[200] = "";
	size_t len = 0;
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	/* the kernel's mask of this kernel thread, whatever a library makes of the call */
	if (syscall(SYS_sched_getaffinity, 0, sizeof cpus, &cpus) > 0 && CPU_COUNT(&cpus) < 2)
		len += (size_t)snprintf(pre + len, sizeof pre - len, "only %d CPU allowed (pinned?); ",
					CPU_COUNT(&cpus));
#ifdef BENCH_WEFT
	const char *asked = getenv("WEFT_VPS");
	struct weft_stats st;
	if (vp_child && asked && weft_stats_get(&st, sizeof st) == 0 &&
	    st.vps != strtoull(asked, NULL, 10) && len < sizeof pre)
		len += (size_t)snprintf(pre + len, sizeof pre - len,
					"ran on %" PRIu64 " VP though WEFT_VPS=%s (this libweft's count); ",
					st.vps, asked);
#endif
	if (!len)
		return;
	if (len >= sizeof pre)
		len = sizeof pre - 1;
	pre[len >= 2 ? len - 2 : 0] = 0;   /* the last "; " */
	char note[sizeof pre + 2 + sizeof r->note];
	snprintf(note, sizeof note, "%s%s%s", pre, r->note[0] ? "; " : "", r->note);
	snprintf(r->note, sizeof r->note, "%.*s", (int)sizeof r->note - 1, note);
}

#ifdef BENCH_WEFT
/* The VP counts an M:N row is measured with, in order. */
static const char *mn_vps(void)
{
	const char *v = getenv("BENCH_MN_VPS");
	return v && *v ? v : "1 2";
}

/* A median for a note: ns in the unit that keeps it readable. */
static void human(char *buf, size_t size, enum unit u, double v)
{
	if (u != U_NS)
		snprintf(buf, size, "%.0f", v);
	else if (v < 1e3)
		snprintf(buf, size, "%.3g ns", v);
	else if (v < 1e6)
		snprintf(buf, size, "%.3g us", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, size, "%.3g ms", v / 1e6);
	else
		snprintf(buf, size, "%.3g s", v / 1e9);
}

/* Parse a line key,tag,status,median,min,max,reps,iters,sw_per_op,note. */
static bool parse_line(char *line, struct result *r)
{
	char *f[10];
	int n = 0;
	char *p = line;
	while (n < 9) {
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			return false;
		*p++ = 0;
	}
	f[9] = p;
	snprintf(r->note, sizeof r->note, "%s", f[9]);
	if (strcmp(f[2], "ok") != 0) {
		r->ok = false;
		return true;
	}
	r->ok = true;
	r->median = strtod(f[3], NULL);
	r->min = strtod(f[4], NULL);
	r->max = strtod(f[5], NULL);
	r->reps = atoi(f[6]);
	r->iters = strtoull(f[7], NULL, 10);
	r->sw_per_op = *f[8] ? strtod(f[8], NULL) : -1;
	return true;
}

/* Run m in a child process of this binary with WEFT_VPS=vps, print the
 * child's line as it is (backend weft-vpN) and fill *r from it. */
static void run_vp_child(const struct metric *m, unsigned vps, struct result *r)
{
	char tag[64], env[320];
	snprintf(tag, sizeof tag, "%s-vp%u", backend_tag, vps);
	/* the row's own environment, as bench/run.sh would set it, and the VPs */
	snprintf(env, sizeof env, "%s WEFT_VPS=%u", m->env ? m->env : "", vps);
	char *argv[8];
	int a = 0;
	argv[a++] = (char *)"/proc/self/exe";
	argv[a++] = (char *)"--vp-child";
	argv[a++] = (char *)"--tag";
	argv[a++] = tag;
	if (quick)
		argv[a++] = (char *)"--quick";
	argv[a++] = (char *)m->key;
	argv[a] = NULL;
	static char out[65536];
	int status = run_capture(argv, env, out, sizeof out);
	/* the child's last line for this key and tag */
	char want[200], *line = NULL;
	snprintf(want, sizeof want, "%s,%s,", m->key, tag);
	for (char *p = out; p && *p;) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (!strncmp(p, want, strlen(want)))
			line = p;
		p = nl ? nl + 1 : NULL;
	}
	memset(r, 0, sizeof *r);
	r->sw_per_op = -1;
	if (line) {
		printf("%s\n", line);
		if (parse_line(line, r))
			return;
	}
	if (WIFSIGNALED(status))
		na(r, "the WEFT_VPS=%u child crashed with signal %d", vps, WTERMSIG(status));
	else
		na(r, "the WEFT_VPS=%u child printed no result (exit status %d)", vps,
		   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	printf("%s,%s,na,,,,,,,%s\n", m->key, tag, r->note);
}

/* The parent's part of an M:N row: one child per VP count, then the
 * summary in *r (the last count's figures; every median in the note). */
static void run_vp_children(const struct metric *m, struct result *r)
{
	char note[sizeof r->note] = "";
	size_t len = 0;
	struct result first, c;
	unsigned first_vps = 0, vps = 0;
	bool any = false;
	const char *p = mn_vps();
	memset(&c, 0, sizeof c);
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p)
			break;
		p = end + strspn(end, " ,");
		vps = (unsigned)v;
		run_vp_child(m, vps, &c);
		if (len < sizeof note) {
			char h[32];
			unsigned long on = 0;
			human(h, sizeof h, m->unit, c.median);
			if (!c.ok)
				len += (size_t)snprintf(note + len, sizeof note - len, "%s%u VP%s n/a",
							len ? "; " : "", vps, vps == 1 ? "" : "s");
			else if (sscanf(c.note, "ran on %lu VP", &on) == 1 && on != vps)
				len += (size_t)snprintf(note + len, sizeof note - len,
							"%s%u VP%s %s (ran on %lu: WEFT_VPS=%u not in effect)",
							len ? "; " : "", vps, vps == 1 ? "" : "s", h, on, vps);
			else
				len += (size_t)snprintf(note + len, sizeof note - len, "%s%u VP%s %s",
							len ? "; " : "", vps, vps == 1 ? "" : "s", h);
		}
		if (!any) {
			first = c;
			first_vps = vps;
			any = true;
		}
	}
	if (!any) {
		na(r, "BENCH_MN_VPS=\"%s\" names no VP count", mn_vps());
		return;
	}
	if (vps != first_vps && first.ok && c.ok && c.median > 0 && len < sizeof note)
		snprintf(note + len, sizeof note - len, "; speed-up from %u to %u VPs %.2fx", first_vps, vps,
			 m->unit == U_COUNT ? c.median / first.median : first.median / c.median);
	*r = c;
	if (!c.ok) {
		na(r, "%s", note);
		return;
	}
	memcpy(r->note, note, sizeof note);
}
#endif

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
#ifdef BENCH_WEFT
	else if ((m->flags & F_MN) && !vp_child)
		run_vp_children(m, &r);
#endif
	else if (m->oneshot)
		m->oneshot(&r);
	else if (m->timed)
		run_timed_fn(m->timed, &r);
	else
		na(&r, "not measured");
	if ((m->flags & F_MN) && (r.ok || !why_not))
		mn_annotate(&r);
	fflush(stdout);
	print_result(m->key, backend_tag, &r);
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
			printf("%s|%s|%s|%s%s%s%s%s|%s|%s|%s\n", m->key, m->group, unit_name[m->unit],
			       m->flags & F_UNPINNED ? "u" : "", m->flags & F_WEFT_ONLY ? "w" : "",
			       m->flags & F_EPOLL ? "e" : "", m->flags & F_MN ? "m" : "",
			       m->flags & F_PEERS ? "p" : "", m->label,
			       m->history, m->env ? m->env : "");
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-%s [--quick] [--tag NAME] [--vp-child] --list | KEY...\n", BACKEND);
	exit(2);
}

int main(int argc, char **argv)
{
	check_keys_unique();
	switch_counter = switches;
	quick_from_env();
	int first = 1;
	for (; first < argc && argv[first][0] == '-'; first++) {
		if (measure_option(argc, argv, &first, &backend_tag)) {
			continue;
		} else if (!strcmp(argv[first], "--list")) {
			list_metrics();
			return 0;
		} else if (!strcmp(argv[first], "--vp-child")) {
			vp_child = true;
		} else {
			usage();
		}
	}
	if (first >= argc)
		usage();
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
