/*
 * seeds.c — `weftrun --sched random --seeds A-B -- PROGRAM`: run a program
 * once per seed of a debug scheduler, both cores busy, until one run fails.
 *
 * Each run gets WEFT_SCHED=<policy with its seed> (random:SEED, or
 * pct:SEED:DEPTH for --sched pct:DEPTH) on top of the environment weftrun
 * has already set up (LD_PRELOAD and the rest).  A run fails when it exits
 * non-zero, dies of a signal, or outlives the timeout.  When runs fail, the
 * lowest failing seed among those started is reported, with its output and
 * the exact command that reproduces it; seeds after it are not started.
 * Invariant: at most `jobs` children exist at once, each with its own
 * output file, and every child is reaped before we return.
 */
#include "seeds.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct run {
	pid_t pid;
	uint64_t seed;
	int out;              /* memfd with the run's stdout and stderr */
	double started;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "random" -> "random:SEED"; "pct:DEPTH" -> "pct:SEED:DEPTH". */
static bool policy_for(const char *base, uint64_t seed, char *out, size_t n)
{
	if (strcmp(base, "random") == 0)
		return snprintf(out, n, "random:%" PRIu64, seed) < (int)n;
	if (strncmp(base, "pct:", 4) == 0)
		return snprintf(out, n, "pct:%" PRIu64 ":%s", seed, base + 4) < (int)n;
	return false;
}

bool seeds_policy_ok(const char *base)
{
	char buf[64];
	if (strncmp(base, "pct:", 4) == 0) {
		const char *d = base + 4;
		if (!*d)
			return false;
		for (; *d; d++)
			if ((*d < '0' || *d > '9') && *d != ':')
				return false;
	}
	return policy_for(base, 1, buf, sizeof buf);
}

static pid_t start_run(const char *base, uint64_t seed, char **argv, int out)
{
	char policy[64];
	policy_for(base, seed, policy, sizeof policy);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	setenv("WEFT_SCHED", policy, 1);
	dup2(out, 1);
	dup2(out, 2);
	/* its own process group, so a timeout kills what it started too */
	setpgid(0, 0);
	execvp(argv[0], argv);
	fprintf(stderr, "weftrun: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static void print_output(int fd)
{
	char buf[4096];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > 8192 ? end - 8192 : 0;   /* the last 8 KiB is enough */
	lseek(fd, from, SEEK_SET);
	if (from)
		fprintf(stderr, "[... output before this cut ...]\n");
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		fwrite(buf, 1, (size_t)n, stderr);
}

static void describe_status(int status, bool timed_out, double timeout, char *out, size_t n)
{
	if (timed_out)
		snprintf(out, n, "timed out after %.0f s", timeout);
	else if (WIFSIGNALED(status))
		snprintf(out, n, "died of signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

static void print_command(const char *self, const char *base, uint64_t seed, char **argv)
{
	char policy[64];
	policy_for(base, seed, policy, sizeof policy);
	fprintf(stderr, "weftrun: reproduce with: %s --sched %s --", self, policy);
	for (char **a = argv; *a; a++) {
		/* single-quote anything the shell could misread */
		if (strpbrk(*a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") || !**a) {
			fputs(" '", stderr);
			for (const char *c = *a; *c; c++) {
				if (*c == '\'')
					fputs("'\\''", stderr);
				else
					fputc(*c, stderr);
			}
			fputc('\'', stderr);
		} else {
			fprintf(stderr, " %s", *a);
		}
	}
	fputc('\n', stderr);
}

int seeds_run(const char *self, const char *base, uint64_t first, uint64_t last, double timeout,
	      unsigned jobs, char **argv)
{
	struct run running[64];
	unsigned nrun = 0;
	uint64_t next = first, done = 0;
	uint64_t failed_seed = UINT64_MAX;
	int failed_status = 0, failed_out = -1;
	bool failed_timeout = false;
	double t0 = now_s();
	if (jobs < 1)
		jobs = 1;
	if (jobs > 64)
		jobs = 64;

	while (nrun || (next <= last && failed_seed == UINT64_MAX)) {
		while (nrun < jobs && next <= last && failed_seed == UINT64_MAX) {
			int out = memfd_create("weftrun-seed", MFD_CLOEXEC);
			if (out < 0) {
				perror("weftrun: memfd_create");
				return 2;
			}
			pid_t pid = start_run(base, next, argv, out);
			if (pid < 0) {
				perror("weftrun: fork");
				close(out);
				return 2;
			}
			running[nrun++] = (struct run){ pid, next, out, now_s() };
			next++;
			if (next == 0)                 /* wrapped at UINT64_MAX */
				break;
		}
		/* reap whatever finished; kill what overstayed */
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0) {
			double now = now_s();
			for (unsigned i = 0; i < nrun; i++)
				if (now - running[i].started > timeout)
					kill(-running[i].pid, SIGKILL), kill(running[i].pid, SIGKILL);
			usleep(2000);
			continue;
		}
		if (pid < 0)
			break;
		for (unsigned i = 0; i < nrun; i++) {
			if (running[i].pid != pid)
				continue;
			struct run r = running[i];
			running[i] = running[--nrun];
			done++;
			bool timed_out = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
					 now_s() - r.started >= timeout;
			bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
			if (!ok && r.seed < failed_seed) {
				if (failed_out >= 0)
					close(failed_out);
				failed_seed = r.seed;
				failed_status = status;
				failed_timeout = timed_out;
				failed_out = r.out;
			} else {
				close(r.out);
			}
			break;
		}
	}
	double secs = now_s() - t0;
	if (failed_seed != UINT64_MAX) {
		char what[96], policy[64];
		describe_status(failed_status, failed_timeout, timeout, what, sizeof what);
		policy_for(base, failed_seed, policy, sizeof policy);
		fprintf(stderr, "weftrun: seed %" PRIu64 " (%s) failed: %s; its output:\n", failed_seed,
			policy, what);
		print_output(failed_out);
		close(failed_out);
		print_command(self, base, failed_seed, argv);
		fprintf(stderr, "weftrun: %" PRIu64 " runs in %.1f s (%.1f seeds/s)\n", done, secs,
			secs > 0 ? (double)done / secs : 0.0);
		return 1;
	}
	fprintf(stderr, "weftrun: seeds %" PRIu64 "-%" PRIu64 ": all %" PRIu64 " runs passed in %.1f s (%.1f seeds/s)\n",
		first, last, done, secs, secs > 0 ? (double)done / secs : 0.0);
	return 0;
}
