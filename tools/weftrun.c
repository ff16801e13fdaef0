/*
 * weftrun — run an unmodified program on Weft.
 *
 *   weftrun [--vps N] [--sched POLICY] [--stack SIZE] [--stack-mode MODE]
 *           [--timeslice TIME] [--dump-signal SIG[:exit]] [--] PROGRAM [ARGS]
 *   weftrun --sched random|pct:DEPTH --seeds A-B [--jobs N] [--timeout SEC] [--] PROGRAM [ARGS]
 *
 * The second form runs PROGRAM once per seed (seeds.c) and reports the
 * first failing seed with the command that reproduces it.
 *
 * Owns: turning options into Weft's WEFT_* environment and exec'ing the
 * program with libweft preloaded.  Invariant: weftrun itself never starts
 * Weft (it is not linked with it) and leaves the environment untouched
 * except for the variables its options name and LD_PRELOAD, to which the
 * library is prepended (so a user's own preloads still load, after it),
 * and before it the sanitizer runtime a program built with
 * -fsanitize=address or =leak needs (sanitizer_preload.c).
 *
 * The library is found relative to this executable, as installed
 * (<bindir>/<rel>/libweft.so.0, WEFT_REL_LIBDIR), then at its build-tree
 * path (WEFT_BUILD_LIB): the same binary works from the build tree and
 * after `make install` to any prefix.
 *
 * Exit status: 2 for a usage error, 127 if the program or the library
 * cannot be found, 126 if the program cannot be run (as env(1)); otherwise
 * the program's own.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sanitizer_preload.h"
#include "seeds.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif
#ifndef WEFT_REL_LIBDIR
#define WEFT_REL_LIBDIR "../lib"
#endif
#ifndef WEFT_BUILD_LIB
#define WEFT_BUILD_LIB ""
#endif
#define WEFT_SONAME "libweft.so.0"

static const char usage_text[] =
	"Usage: weftrun [OPTION]... [--] PROGRAM [ARG]...\n"
	"Run PROGRAM on Weft user-level threads, without rebuilding it (LD_PRELOAD).\n"
	"\n"
	"  --vps N           virtual processors, 1..64 (WEFT_VPS; docs/mn.md)\n"
	"  --sched POLICY    posix (default), mutexswitch, rrswitch, random:SEED,\n"
	"                    pct:SEED:DEPTH (WEFT_SCHED; see docs/debugging.md)\n"
	"  --seeds A-B       run PROGRAM once per seed from A to B under --sched random\n"
	"                    or --sched pct:DEPTH; stop at the first failure and print\n"
	"                    the command that reproduces it\n"
	"  --jobs N          runs at once with --seeds (default: the number of CPUs)\n"
	"  --timeout SEC     a run longer than this fails, with --seeds (default 60)\n"
	"  --stack SIZE      default thread stack, bytes or with K/M/G (WEFT_STACK_SIZE)\n"
	"  --stack-mode MODE separate (default): each thread a stack of its own; copy:\n"
	"                    threads share a run stack and keep only the bytes in use\n"
	"                    while they wait (WEFT_STACK_MODE; docs/runtime.md)\n"
	"  --timeslice TIME  time slice: 10, 10ms, 100us; 0 turns slicing off (WEFT_TIMESLICE)\n"
	"  --dump-signal SIG[:exit]\n"
	"                    on signal SIG (e.g. SIGQUIT), print every thread, what it\n"
	"                    waits on and its backtrace on stderr, then go on, or exit\n"
	"                    by SIG with :exit (WEFT_DUMP_SIGNAL)\n"
	"  --help            print this help and exit\n"
	"  --version         print the version and exit\n"
	"\n"
	"Exit status: PROGRAM's, or 2 for a usage error, 126 if PROGRAM cannot run,\n"
	"127 if PROGRAM or libweft cannot be found; with --seeds, 0 if every run\n"
	"passed and 1 at a failure.\n";

struct option_spec {
	const char *name;
	const char *env;
	bool (*valid)(const char *);
};

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* A count from 1; the library checks the range. */
static bool valid_count(const char *s)
{
	size_t n = strlen(s);
	return n <= 9 && all_digits(s, n) && strtoul(s, NULL, 10) >= 1;
}

/* Bytes, or with a K/M/G suffix. */
static bool valid_size(const char *s)
{
	size_t n = strlen(s);
	if (n > 0 && strchr("kKmMgG", s[n - 1]))
		n--;
	return n <= 19 && all_digits(s, n);
}

/* "10" or "10ms", "100us", "0". */
static bool valid_duration(const char *s)
{
	size_t n = strlen(s);
	if (n > 2 && (strcmp(s + n - 2, "ms") == 0 || strcmp(s + n - 2, "us") == 0))
		n -= 2;
	return n <= 9 && all_digits(s, n);
}

static bool valid_word(const char *s)
{
	return *s != 0;
}

/* --seeds, --jobs and --timeout drive the seed runner: not environment. */
static bool valid_seeds(const char *s)
{
	const char *dash = strchr(s, '-');
	return dash && dash > s && all_digits(s, (size_t)(dash - s)) && dash[1] &&
	       all_digits(dash + 1, strlen(dash + 1)) && strtoull(s, NULL, 10) <= strtoull(dash + 1, NULL, 10);
}

static bool valid_stack_mode(const char *s)
{
	return strcmp(s, "separate") == 0 || strcmp(s, "copy") == 0;
}

static bool valid_seconds(const char *s)
{
	return all_digits(s, strlen(s)) && strtoul(s, NULL, 10) >= 1;
}

static const struct option_spec options[] = {
	{ "--vps", "WEFT_VPS", valid_count },
	{ "--sched", "WEFT_SCHED", valid_word },
	{ "--seeds", "WEFTRUN_SEEDS", valid_seeds },
	{ "--jobs", "WEFTRUN_JOBS", valid_count },
	{ "--timeout", "WEFTRUN_TIMEOUT", valid_seconds },
	{ "--stack", "WEFT_STACK_SIZE", valid_size },
	{ "--stack-mode", "WEFT_STACK_MODE", valid_stack_mode },
	{ "--timeslice", "WEFT_TIMESLICE", valid_duration },
	{ "--dump-signal", "WEFT_DUMP_SIGNAL", valid_word },
};

static void usage_error(const char *fmt, const char *what)
{
	fprintf(stderr, "weftrun: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n%s", usage_text);
	exit(2);
}

static const struct option_spec *find_option(const char *arg, size_t len)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
		if (strlen(options[i].name) == len && strncmp(arg, options[i].name, len) == 0)
			return &options[i];
	return NULL;
}

/* Parse options into the environment; returns the index of PROGRAM. */
static int parse_options(int argc, char **argv)
{
	int i = 1;
	while (i < argc) {
		const char *arg = argv[i];
		if (strcmp(arg, "--") == 0)
			return i + 1;
		if (arg[0] != '-')
			return i;
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(usage_text, stdout);
			exit(0);
		}
		if (strcmp(arg, "--version") == 0) {
			printf("weftrun (Weft) %s\n", WEFT_VERSION);
			exit(0);
		}
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct option_spec *o = find_option(arg, len);
		if (!o)
			usage_error("unknown option '%s'", arg);
		const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!value)
			usage_error("option '%s' needs a value", o->name);
		if (!o->valid(value))
			usage_error("bad value for %s", arg);
		setenv(o->env, value, 1);
		i++;
	}
	return i;
}

static bool readable(const char *path)
{
	return path[0] && access(path, R_OK) == 0;
}

/* The installed library next to this executable, else the build tree's. */
static bool find_library(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			int w = snprintf(out, size, "%s/%s/%s", self, WEFT_REL_LIBDIR, WEFT_SONAME);
			if (w > 0 && (size_t)w < size && readable(out))
				return true;
		}
	}
	if (readable(WEFT_BUILD_LIB) && strlen(WEFT_BUILD_LIB) < size) {
		strcpy(out, WEFT_BUILD_LIB);
		return true;
	}
	return false;
}

static void set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
		return;
	}
	size_t len = strlen(lib) + 1 + strlen(old) + 1;
	char *v = malloc(len);
	if (!v) {
		perror("weftrun");
		exit(127);
	}
	snprintf(v, len, "%s:%s", lib, old);
	setenv("LD_PRELOAD", v, 1);
	free(v);
}

/* The seed runner: --sched names the policy without its seed. */
static int run_seeds(const char *self, const char *seeds, char **prog)
{
	char base[64];
	const char *policy = getenv("WEFT_SCHED");
	if (!policy || !seeds_policy_ok(policy))
		usage_error("%s", "--seeds needs --sched random or --sched pct:DEPTH");
	snprintf(base, sizeof base, "%s", policy);
	unsetenv("WEFT_SCHED");
	const char *jobs = getenv("WEFTRUN_JOBS"), *timeout = getenv("WEFTRUN_TIMEOUT");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned j = jobs ? (unsigned)strtoul(jobs, NULL, 10) : (unsigned)(ncpu > 0 ? ncpu : 1);
	double t = timeout ? (double)strtoul(timeout, NULL, 10) : 60.0;
	unsetenv("WEFTRUN_SEEDS");
	unsetenv("WEFTRUN_JOBS");
	unsetenv("WEFTRUN_TIMEOUT");
	uint64_t first = strtoull(seeds, NULL, 10);
	uint64_t last = strtoull(strchr(seeds, '-') + 1, NULL, 10);
	return seeds_run(self, base, first, last, t, j, prog);
}

int main(int argc, char **argv)
{
	/* the runner's own settings come from options only */
	unsetenv("WEFTRUN_SEEDS");
	unsetenv("WEFTRUN_JOBS");
	unsetenv("WEFTRUN_TIMEOUT");
	int prog = parse_options(argc, argv);
	if (prog >= argc)
		usage_error("%s", "no PROGRAM given");
	char lib[PATH_MAX];
	if (!find_library(lib, sizeof lib)) {
		fprintf(stderr, "weftrun: cannot find %s (looked in %s relative to weftrun, and %s)\n",
			WEFT_SONAME, WEFT_REL_LIBDIR, WEFT_BUILD_LIB[0] ? WEFT_BUILD_LIB : "no build tree");
		return 127;
	}
	set_preload(lib);
	/* a program built with -fsanitize=address (or =leak) gets its
	 * runtime first, as it would be linked (sanitizer_preload.c) */
	char san[64];
	if (weftrun_sanitizer_runtime(argv[prog], san, sizeof san))
		set_preload(san);
	const char *seeds = getenv("WEFTRUN_SEEDS");
	if (seeds && *seeds)
		return run_seeds(argv[0], seeds, &argv[prog]);
	execvp(argv[prog], &argv[prog]);
	int e = errno;
	fprintf(stderr, "weftrun: cannot run %s: %s\n", argv[prog], strerror(e));
	return e == ENOENT ? 127 : 126;
}
