/*
 * fam_tls.c — the "Thread-local storage" rows: what it costs a UT to have
 * TLS of its own (src/runtime/tls.c): the thread-pointer write a switch
 * adds, and the yield, create+join and memory rows of a program whose UTs
 * each have their own TLS.
 *
 * How: wrfsbase is timed in a loop here.  The other rows run another row of
 * this same binary (yield_busy, create_join, mem_10k) in a child process
 * with WEFT_TLS=on, which gives every UT its own TLS as a C++ program's
 * would get, and report the child's figures; on NPTL every thread has its
 * own TLS anyway, so the child runs the row as it is.  The rows without TLS
 * stay where they are in the table, measured in the same run.
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Thread-local storage"

extern char **environ;

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

/* Write the thread pointer with the value it already has. */
static BENCH_ALIGNED int64_t m_wrfsbase(uint64_t n)
{
	void *fs;
	__asm__ volatile("rdfsbase %0" : "=r"(fs));
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		__asm__ volatile("wrfsbase %0" : : "r"(fs) : "memory");
	return now_ns() - t0;
}

static void r_wrfsbase(struct result *r)
{
	if (!(getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE)) {
		na(r, "the kernel does not enable FSGSBASE: Weft sets the thread pointer with arch_prctl");
		return;
	}
	run_timed_fn(m_wrfsbase, r);
}

/* Run row `key` of this binary in a child with per-UT TLS forced on, and
 * take its figures. */
static void with_tls(struct result *r, const char *key)
{
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0) {
		na(r, "cannot find this program to run it again");
		return;
	}
	self[len] = 0;
	int fd[2];
	if (pipe(fd) != 0) {
		na(r, "pipe failed");
		return;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	char *argv[] = { self, "--tag", "tls", (char *)key, NULL };
#ifdef BENCH_WEFT
	setenv("WEFT_TLS", "on", 1);
#endif
	pid_t pid;
	int e = posix_spawn(&pid, self, &fa, NULL, argv, environ);
#ifdef BENCH_WEFT
	unsetenv("WEFT_TLS");
#endif
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (e) {
		close(fd[0]);
		na(r, "cannot run the row with per-UT TLS");
		return;
	}
	char out[4096];
	size_t got = 0;
	ssize_t k;
	while (got < sizeof out - 1 && (k = read(fd[0], out + got, sizeof out - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = 0;
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	/* key,tls,status,median,min,max,reps,iters,sw_per_op,note */
	char want[64];
	snprintf(want, sizeof want, "%s,tls,", key);
	char *line = strstr(out, want);
	if (!line) {
		na(r, "the run with per-UT TLS printed no result (status %d)", st);
		return;
	}
	char status[8] = "";
	double med, mn, mx, sw = -1;
	int reps;
	unsigned long long iters;
	if (sscanf(line + strlen(want), "%7[^,],%lf,%lf,%lf,%d,%llu,%lf", status, &med, &mn, &mx, &reps,
		   &iters, &sw) < 6 || strcmp(status, "ok") != 0) {
		na(r, "the run with per-UT TLS did not measure");
		return;
	}
	r->ok = true;
	r->median = med;
	r->min = mn;
	r->max = mx;
	r->reps = reps;
	r->iters = iters;
	r->sw_per_op = sw;
}

static void r_yield_busy_tls(struct result *r) { with_tls(r, "yield_busy"); }
static void r_create_join_tls(struct result *r) { with_tls(r, "create_join"); }
static void r_mem_10k_tls(struct result *r) { with_tls(r, "mem_10k"); }

static const struct metric tls_rows[] = {
	{ "wrfsbase", GROUP, U_NS, 0, "write the thread pointer (wrfsbase): what a switch between UTs with TLS adds",
	  "13-15 ns measured on this VM when the issue was written", NULL, NULL, r_wrfsbase, NULL, NULL },
	{ "yield_busy_tls", GROUP, U_NS, 0, "yield, busy (two threads with their own TLS; per switch)",
	  "", NULL, NULL, r_yield_busy_tls, NULL, NULL },
	{ "create_join_tls", GROUP, U_NS, 0, "create + join, threads with their own TLS",
	  "", NULL, NULL, r_create_join_tls, NULL, NULL },
	{ "mem_10k_tls", GROUP, U_BYTES, 0, "resident bytes per idle thread with its own TLS, 10,000 alive",
	  "", NULL, NULL, r_mem_10k_tls, NULL, NULL },
};

BENCH_FAMILY(fam_tls, tls_rows);
