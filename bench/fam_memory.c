/*
 * fam_memory.c — the "Memory" rows: resident bytes per idle thread (10,000
 * and 100,000 alive), and the most threads alive at once.
 *
 * Not timed: each row creates idle threads (each runs once, then sleeps in
 * nanosleep) and reads /proc.  The threads are never joined; the harness
 * leaves with _exit.  Invariant: a run stops before it harms the machine —
 * under a 12 GiB resident budget, with 3 GiB left available, and (NPTL)
 * with kernel pids left for other processes — and the row's note says
 * where it stopped and why; a count cut short for pids is a lower bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Memory"

#define GIB (1024.0 * 1024 * 1024)
#define BUDGET_BYTES (12.0 * GIB)
#define KEEP_FREE_BYTES (3.0 * GIB)

static int idle_started;

static void *idle_thread(void *a)
{
	__atomic_fetch_add(&idle_started, 1, __ATOMIC_RELAXED);
	for (;;) {
		struct timespec ts = { 3600, 0 };
		nanosleep(&ts, NULL);
	}
	return a;
}

static double meminfo_bytes(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	double v = -1;
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = strtod(line + len + 1, NULL) * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

static long read_long_file(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	long n = 0;
	int c;
	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Why pthread_create failed: the errno, and the kernel limit nearest. */
static void explain_failure(char *out, size_t len, int e, long created)
{
	long maps = count_lines("/proc/self/maps");
	long max_maps = read_long_file("/proc/sys/vm/max_map_count");
	long pid_max = read_long_file("/proc/sys/kernel/pid_max");
	long threads_max = read_long_file("/proc/sys/kernel/threads-max");
	struct rlimit rl;
	getrlimit(RLIMIT_NPROC, &rl);
	const char *why = "unknown limit";
	if (e == EAGAIN && max_maps > 0 && maps >= max_maps - 16)
		why = "vm.max_map_count reached: each NPTL stack is two mappings (stack + guard)";
	else if (e == EAGAIN && pid_max > 0 && created >= pid_max - 2048)
		why = "kernel.pid_max reached: every kernel thread needs a pid";
	else if (e == EAGAIN && rl.rlim_cur != RLIM_INFINITY && created >= (long)rl.rlim_cur - 2048)
		why = "RLIMIT_NPROC reached";
	else if (e == EAGAIN && threads_max > 0 && created >= threads_max - 2048)
		why = "kernel.threads-max reached";
	else if (e == ENOMEM)
		why = "out of memory";
	snprintf(out, len, "pthread_create: %s after %ld threads (%s; maps %ld/%ld; pid_max %ld)",
		 strerror(e), created, why, maps, max_maps, pid_max);
}

/*
 * Kernel threads draw on machine-wide pids: running kernel.pid_max (or
 * threads-max) out makes every other process on the machine fail to fork,
 * and on a shared machine a watchdog may kill the process that did it (it
 * happened while this was written).  So NPTL's "most threads" run stops once
 * BENCH_PID_SHARE percent (default 60) of the limit is in use machine-wide
 * and reports a lower bound and the limit it would reach; BENCH_PID_SHARE=100
 * goes on to the failure.  Under Weft threads cost no pid: never triggers.
 */
struct kernel_limits {
	long pid_max, threads_max, in_use, max_maps;
};

static struct kernel_limits kernel_limits(void)
{
	struct kernel_limits k = { -1, -1, -1, -1 };
	long running;
	FILE *f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%*s %*s %*s %ld/%ld", &running, &k.in_use) != 2)
			k.in_use = -1;
		fclose(f);
	}
	k.pid_max = read_long_file("/proc/sys/kernel/pid_max");
	k.threads_max = read_long_file("/proc/sys/kernel/threads-max");
	k.max_maps = read_long_file("/proc/sys/vm/max_map_count");
	return k;
}

/* The kernel limit on threads per machine, and its name. */
static long thread_limit(const struct kernel_limits *k, const char **name)
{
	long limit = k->pid_max;
	*name = "kernel.pid_max";
	if (k->threads_max > 0 && (limit < 0 || k->threads_max < limit)) {
		limit = k->threads_max;
		*name = "kernel.threads-max";
	}
	return limit;
}

/* What NPTL reaches first here, in words. */
static void nptl_limits(char *out, size_t len)
{
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	snprintf(out, len,
		 "every kernel thread takes one of %s %ld pids machine-wide (%ld in use) and "
		 "each NPTL stack two of vm.max_map_count %ld mappings (about %ld stacks)",
		 name, limit, k.in_use, k.max_maps, k.max_maps / 2);
}

static bool stopped_for_pids;

static bool pid_headroom(char *why, size_t len, long made)
{
#ifdef BENCH_WEFT
	(void)why;
	(void)len;
	(void)made;
	return true;
#else
	const char *env = getenv("BENCH_PID_SHARE");
	long share = env && *env ? strtol(env, NULL, 10) : 60;
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	if (share >= 100 || k.in_use < 0 || limit < 0 || k.in_use * 100 < limit * share)
		return true;
	stopped_for_pids = true;
	snprintf(why, len, "stopped by the benchmark at %ld%% of %s in use machine-wide (%ld of %ld)",
		 share, name, k.in_use, limit);
	return false;
#endif
}

/*
 * Create up to `want` idle threads (each runs, then sleeps in nanosleep)
 * while resident memory stays under the budget and the machine keeps
 * KEEP_FREE_BYTES available.  Returns how many are alive; *why says why it
 * stopped short.
 */
static long make_idle_threads(long want, double rss0, char *why, size_t len)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	long made = 0;
	int base = load(&idle_started);
	why[0] = 0;
	while (made < want) {
		pthread_t t;
		int e = pthread_create(&t, &a, idle_thread, NULL);
		if (e) {
			explain_failure(why, len, e, made);
			break;
		}
		made++;
		if (made % 256 == 0 && !pid_headroom(why, len, made))
			break;
		if (made % 1024 == 0) {
			wait_until(&idle_started, base + (int)made);
			if (rss_bytes() - rss0 > BUDGET_BYTES) {
				snprintf(why, len, "stopped at the 12 GiB budget");
				break;
			}
			double avail = meminfo_bytes("MemAvailable");
			if (avail >= 0 && avail < KEEP_FREE_BYTES) {
				snprintf(why, len, "stopped: the machine had under 3 GiB available");
				break;
			}
		}
	}
	wait_until(&idle_started, base + (int)made);
	pthread_attr_destroy(&a);
	return made;
}

static void mem_per_thread(struct result *r, long want)
{
	char why[300];
#ifndef BENCH_WEFT
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	if (k.max_maps > 0 && k.max_maps / 2 < limit)
		limit = k.max_maps / 2;
	if (limit > 0 && k.in_use >= 0 && want > limit - k.in_use) {
		nptl_limits(why, sizeof why);
		na(r, "NPTL cannot keep %ld threads here: %s", want, why);
		return;
	}
#endif
	double rss0 = rss_bytes(), ks0 = meminfo_bytes("KernelStack");
	long made = make_idle_threads(want, rss0, why, sizeof why);
	double rss1 = rss_bytes(), ks1 = meminfo_bytes("KernelStack");
	if (made < want) {
		na(r, "only %ld threads: %s", made, why);
		return;
	}
	double per = (rss1 - rss0) / (double)made;
	r->ok = true;
	r->median = r->min = r->max = per;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
#ifndef BENCH_WEFT
	if (ks0 >= 0 && ks1 >= 0)
		snprintf(r->note, sizeof r->note, "plus %.1f KiB/thread of kernel stack (not in RSS)",
			 (ks1 - ks0) / (double)made / 1024);
#else
	(void)ks0;
	(void)ks1;
#endif
}

static void mem_most(struct result *r, long cap)
{
	char why[300];
	double rss0 = rss_bytes();
	long made = make_idle_threads(cap, rss0, why, sizeof why);
	double rss1 = rss_bytes();
	r->ok = true;
	r->median = r->min = r->max = (double)made;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
	if (made >= cap) {
		snprintf(r->note, sizeof r->note, "the cap; %.2f GiB resident", (rss1 - rss0) / GIB);
	} else if (stopped_for_pids) {
		char lim[200];
		nptl_limits(lim, sizeof lim);
		snprintf(r->note, sizeof r->note,
			 "lower bound: %s so that the machine keeps pids for others; "
			 "past it pthread_create fails with EAGAIN: %s; %.2f GiB resident",
			 why, lim, (rss1 - rss0) / GIB);
	} else {
		snprintf(r->note, sizeof r->note, "%s; %.2f GiB resident", why, (rss1 - rss0) / GIB);
	}
}

static void m_mem10k(struct result *r) { mem_per_thread(r, 10000); }
static void m_mem100k(struct result *r)
{
	if (quick)
		na(r, "skipped with QUICK=1");
	else
		mem_per_thread(r, 100000);
}
static void m_mem_most(struct result *r)
{
	if (quick) {
		na(r, "skipped with QUICK=1");
		return;
	}
	mem_most(r, 1000000);
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "mem_10k", GROUP, U_BYTES, F_PEERS, "resident bytes per idle thread, 10,000 alive", "-", NULL,
	  NULL, m_mem10k },
	{ "mem_100k", GROUP, U_BYTES, F_PEERS, "resident bytes per idle thread, 100,000 alive", "-", NULL,
	  NULL, m_mem100k },
	{ "mem_most", GROUP, U_COUNT, 0, "most threads alive at once (12 GiB budget; Weft capped at 1,000,000)",
	  "16 descriptors by default (Marovich)", NULL, NULL, m_mem_most },
};

BENCH_FAMILY(fam_memory, rows);
