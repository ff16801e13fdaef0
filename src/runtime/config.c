/*
 * config.c — Weft's configuration: every WEFT_* environment variable, read
 * once at runtime start, in this one place, into __weft_proc.cfg.
 *
 * Owns: parsing and validating every WEFT_* variable.  Invariant: a variable
 * that is unset or empty means its default; a variable whose value cannot
 * be used prints exactly one warning line on stderr naming the variable and
 * the value used instead, and never stops the program (a launcher typo must
 * not turn into a crash).  The settings are written before the first UT
 * exists and only read afterwards.
 *
 *   WEFT_STACK_SIZE  default stack of a new UT: bytes, or with a K/M/G suffix
 *   WEFT_VPS         virtual processors (M:N when more than 1: mn.c)
 *   WEFT_SCHED       posix, or a debug policy (debug_sched.c)
 *   WEFT_TIMESLICE   time slice: 10 / 10ms / 100us; 0 turns slicing off
 *   WEFT_PREEMPT_SIGNAL  the tick's signal (default SIGURG)
 *   WEFT_NOPREEMPT   more libraries never interrupted (preempt.c)
 *   WEFT_DEADLOCK    report / off: what to do when every UT is blocked
 *   WEFT_TRACE       a file to write the schedule to
 *   WEFT_TLS         auto / on / off: each UT its own thread-local storage (tls.c)
 *   WEFT_FSGSBASE    auto / off: off acts as without the FSGSBASE instructions (read
 *                    by arch.c at start-up; checked here)
 *   WEFT_DUMP_SIGNAL a signal that prints every UT (dump.c), optionally :exit
 *   WEFT_ACTIVATIONS on / off: hand the VP on around blocking calls (handoff.c)
 *   WEFT_MAX_KTHREADS  spare kernel threads Weft may make (default 64)
 *   WEFT_STACK_MODE  separate / copy: a new UT's stack, by default (copystack.c)
 *
 * This runs inside __weft_init, possibly before main and before stdio is
 * safe to use from a constructor, so it uses getenv and write(2) only.
 */
#include "rt.h"
#include "dump.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VPS_MAX WEFT_VPS_MAX
#define TIMESLICE_DEFAULT_MS 10
#define TIMESLICE_MAX_MS 10000
#define TIMESLICE_MIN_NS 10000ull
#define STACK_MAX_BYTES (1ull << 40)
#define MAX_KTHREADS_DEFAULT 64
#define MAX_KTHREADS_LIMIT 4096
#define BLOCK_THRESHOLD_DEFAULT_US 1000
#define BLOCK_THRESHOLD_MAX_US 10000000

void __weft_warn(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	long w = __weft_kwrite(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

/* Decimal unsigned number, the whole string; false on anything else. */
static bool parse_uint(const char *s, unsigned long long *out)
{
	if (*s < '0' || *s > '9')
		return false;
	unsigned long long v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return false;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*out = v;
	return *s == 0;
}

/* "65536", "256k", "8M", "1g" (powers of 1024). */
static bool parse_size(const char *s, unsigned long long *out)
{
	char digits[32];
	size_t len = strlen(s);
	unsigned shift = 0;
	if (len == 0 || len >= sizeof digits)
		return false;
	memcpy(digits, s, len + 1);
	switch (digits[len - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	default: break;
	}
	if (shift)
		digits[len - 1] = 0;
	unsigned long long v;
	if (!parse_uint(digits, &v) || v > (STACK_MAX_BYTES >> shift))
		return false;
	*out = v << shift;
	return true;
}

static const char *value_of(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void read_stack_size(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_STACK_SIZE");
	unsigned long long size;
	if (!v)
		return;
	if (!parse_size(v, &size) || size < (unsigned long long)PTHREAD_STACK_MIN) {
		__weft_warn("weft: WEFT_STACK_SIZE=%s is not a size of at least %zu bytes; using the default %zu",
		     v, (size_t)PTHREAD_STACK_MIN, __weft_stack_default_size());
		return;
	}
	cfg->stack_size = (size_t)size;
}

static void read_stack_mode(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_STACK_MODE");
	cfg->stack_mode = CS_MODE_SEPARATE;
	if (!v || strcmp(v, "separate") == 0)
		return;
	if (strcmp(v, "copy") == 0)
		cfg->stack_mode = CS_MODE_COPY;
	else
		__weft_warn("weft: WEFT_STACK_MODE=%s is not separate or copy; using the default separate", v);
}

static void read_vps(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_VPS");
	unsigned long long n;
	if (!v)
		return;
	if (!parse_uint(v, &n) || n < 1 || n > VPS_MAX) {
		__weft_warn("weft: WEFT_VPS=%s is not a number from 1 to %d; using the default 1", v, VPS_MAX);
		return;
	}
	cfg->vps = (unsigned)n;
}

/* POSIX scheduling, or a debug policy (debug_sched.c parses it). */
static void read_sched(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_SCHED");
	if (!v || strcmp(v, "posix") == 0)
		return;
	if (__weft_sched_debug_parse(v))
		cfg->sched = v;
	else
		__weft_warn("weft: WEFT_SCHED=%s is not a policy (posix, mutexswitch, rrswitch, random:SEED, pct:SEED:DEPTH); using the default posix", v);
}

/* "10" or "10ms" (milliseconds), "100us", "0" (no time slicing). */
static bool parse_duration_ns(const char *s, unsigned long long *out)
{
	char digits[32];
	size_t len = strlen(s);
	unsigned long long unit = 1000000ull;        /* bare numbers are ms */
	if (len == 0 || len >= sizeof digits)
		return false;
	memcpy(digits, s, len + 1);
	if (len > 2 && strcmp(digits + len - 2, "ms") == 0) {
		digits[len - 2] = 0;
	} else if (len > 2 && strcmp(digits + len - 2, "us") == 0) {
		digits[len - 2] = 0;
		unit = 1000ull;
	}
	unsigned long long v;
	if (!parse_uint(digits, &v) || v > TIMESLICE_MAX_MS * 1000000ull / unit)
		return false;
	*out = v * unit;
	return true;
}

static void read_timeslice(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_TIMESLICE");
	unsigned long long ns;
	if (!v)
		return;
	if (!parse_duration_ns(v, &ns) || (ns != 0 && ns < TIMESLICE_MIN_NS)) {
		__weft_warn("weft: WEFT_TIMESLICE=%s is not 0 or a slice from 10us to %ds (e.g. 10, 10ms, 100us); using the default %dms",
		     v, TIMESLICE_MAX_MS / 1000, TIMESLICE_DEFAULT_MS);
		return;
	}
	cfg->timeslice_ns = ns;
}

/* "SIGURG", "URG", "SIGRTMIN+2", or a number; never one the process needs
 * for faults or that cannot be caught. */
static int parse_signal(const char *v)
{
	static const struct { const char *name; int sig; } names[] = {
		{ "URG", SIGURG }, { "PROF", SIGPROF }, { "VTALRM", SIGVTALRM }, { "ALRM", SIGALRM },
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
	};
	unsigned long long n;
	if (strncmp(v, "SIG", 3) == 0)
		v += 3;
	if (parse_uint(v, &n)) {
		int sig = n <= (unsigned long long)SIGRTMAX ? (int)n : -1;
		if (sig < 1 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
		    (sig >= __SIGRTMIN && sig < SIGRTMIN))
			return -1;
		return sig;
	}
	if (strncmp(v, "RTMIN+", 6) == 0 && parse_uint(v + 6, &n))
		return n <= (unsigned long long)(SIGRTMAX - SIGRTMIN) ? SIGRTMIN + (int)n : -1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(v, names[i].name) == 0)
			return names[i].sig;
	return -1;
}

static void read_preempt_signal(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_PREEMPT_SIGNAL");
	if (!v)
		return;
	int sig = parse_signal(v);
	if (sig < 0) {
		__weft_warn("weft: WEFT_PREEMPT_SIGNAL=%s is not a usable signal (e.g. SIGURG, SIGRTMIN+2, 23); using the default SIGURG", v);
		return;
	}
	cfg->preempt_signal = sig;
}

static void read_deadlock(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_DEADLOCK");
	if (!v || strcmp(v, "off") == 0)
		return;
	if (strcmp(v, "report") == 0)
		cfg->deadlock_report = true;
	else
		__weft_warn("weft: WEFT_DEADLOCK=%s is not report or off; using the default off", v);
}

/* auto (the default: the CPU's answer) or off: arch.c reads it itself, at
 * start-up before this runs; only a value it ignores is warned of here. */
static void check_fsgsbase(void)
{
	const char *v = value_of("WEFT_FSGSBASE");
	if (v && strcmp(v, "auto") != 0 && strcmp(v, "off") != 0)
		__weft_warn("weft: WEFT_FSGSBASE=%s is not auto or off; using the default auto", v);
}

/* auto (the default: per-UT TLS once a module other than libc, ld.so and
 * Weft has TLS), on, off. */
static void read_tls(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_TLS");
	if (!v || strcmp(v, "auto") == 0)
		return;
	if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)
		cfg->tls = v;
	else
		__weft_warn("weft: WEFT_TLS=%s is not auto, on or off; using the default auto", v);
}

/* A signal whose arrival prints every UT (dump.c parses the value; signal.c
 * installs the action).  Never the tick's signal: the tick keeps its own. */
static void read_dump_signal(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_DUMP_SIGNAL");
	bool then_exit;
	if (!v)
		return;
	int sig = __weft_dump_signal_parse(v, &then_exit);
	if (sig < 0) {
		__weft_warn("weft: WEFT_DUMP_SIGNAL=%s is not a usable signal (e.g. SIGQUIT, SIGUSR1:exit, SIGRTMIN+3); no dump signal", v);
		return;
	}
	if (sig == cfg->preempt_signal) {
		__weft_warn("weft: WEFT_DUMP_SIGNAL=%s is the time slice's signal (WEFT_PREEMPT_SIGNAL); no dump signal", v);
		return;
	}
	cfg->dump_signal = sig;
	cfg->dump_exit = then_exit;
}

static void read_activations(struct weft_config *cfg)
{
	const char *v = value_of("WEFT_ACTIVATIONS");
	if (v && strcmp(v, "off") == 0)
		cfg->activations_off = true;
	else if (v && strcmp(v, "on") != 0)
		__weft_warn("weft: WEFT_ACTIVATIONS=%s is not on or off; using the default on", v);
	unsigned long long n;
	cfg->block_threshold_us = BLOCK_THRESHOLD_DEFAULT_US;
	v = value_of("WEFT_BLOCK_THRESHOLD");
	if (v && (!parse_uint(v, &n) || n > BLOCK_THRESHOLD_MAX_US))
		__weft_warn("weft: WEFT_BLOCK_THRESHOLD=%s is not a number of microseconds from 0 (no monitor) "
			    "to %d; using the default %d",
			    v, BLOCK_THRESHOLD_MAX_US, BLOCK_THRESHOLD_DEFAULT_US);
	else if (v)
		cfg->block_threshold_us = (unsigned)n;
	v = value_of("WEFT_MAX_KTHREADS");
	if (!v)
		return;
	if (!parse_uint(v, &n) || n < 1 || n > MAX_KTHREADS_LIMIT) {
		__weft_warn("weft: WEFT_MAX_KTHREADS=%s is not a number from 1 to %d; using the default %d", v,
			    MAX_KTHREADS_LIMIT, MAX_KTHREADS_DEFAULT);
		return;
	}
	cfg->max_kthreads = (unsigned)n;
}

void __weft_config_init(struct weft_config *cfg)
{
	cfg->max_kthreads = MAX_KTHREADS_DEFAULT;
	cfg->timeslice_ns = TIMESLICE_DEFAULT_MS * 1000000ull;
	cfg->preempt_signal = SIGURG;
	cfg->vps = 1;
	read_stack_size(cfg);
	read_stack_mode(cfg);
	read_vps(cfg);
	read_sched(cfg);
	read_timeslice(cfg);
	read_preempt_signal(cfg);
	read_deadlock(cfg);
	cfg->nopreempt = value_of("WEFT_NOPREEMPT");
	read_tls(cfg);
	check_fsgsbase();
	cfg->trace_path = value_of("WEFT_TRACE");
	read_dump_signal(cfg);
	read_activations(cfg);
}
