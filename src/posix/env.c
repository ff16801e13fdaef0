/*
 * env.c — Weft's WEFT_* environment variables, read once at runtime start.
 *
 * Owns: parsing and validating every WEFT_* variable and the settings they
 * give.  Invariant: a variable that is unset or empty means its default; a
 * variable whose value cannot be used prints exactly one warning line on
 * stderr naming the variable and the value used instead, and never stops
 * the program (a launcher typo must not turn into a crash).
 *
 *   WEFT_STACK_SIZE  default stack of a new UT: bytes, or with a K/M/G suffix
 *   WEFT_VPS         virtual processors; only 1 exists until M:N lands
 *   WEFT_SCHED       scheduling policy set; only "posix" exists so far
 *   WEFT_TIMESLICE   round-robin slice in ms; no effect until preemption
 *
 * This runs inside __weft_init, possibly before main and before stdio is
 * safe to use from a constructor, so it uses getenv and write(2) only.
 */
#include "../runtime/rt.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VPS_MAX 1024
#define TIMESLICE_DEFAULT_MS 10
#define TIMESLICE_MAX_MS 10000
#define STACK_MIN_BYTES 16384                 /* PTHREAD_STACK_MIN */
#define STACK_MAX_BYTES (1ull << 40)

static unsigned timeslice_ms = TIMESLICE_DEFAULT_MS;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
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
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
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

static void read_stack_size(void)
{
	const char *v = value_of("WEFT_STACK_SIZE");
	unsigned long long size;
	if (!v)
		return;
	if (!parse_size(v, &size) || size < STACK_MIN_BYTES) {
		warn("weft: WEFT_STACK_SIZE=%s is not a size of at least %d bytes; using the default %zu",
		     v, STACK_MIN_BYTES, __weft_stack_default_size());
		return;
	}
	__weft_stack_set_default_size((size_t)size);
}

static void read_vps(void)
{
	const char *v = value_of("WEFT_VPS");
	unsigned long long n;
	if (!v)
		return;
	if (!parse_uint(v, &n) || n < 1 || n > VPS_MAX) {
		warn("weft: WEFT_VPS=%s is not a number from 1 to %d; using the default 1", v, VPS_MAX);
		return;
	}
	if (n != 1)
		warn("weft: WEFT_VPS=%s: only one virtual processor exists so far (M:1); using the default 1", v);
}

/* The policy sets of DESIGN.md "Scheduling"; only the POSIX one exists. */
static void read_sched(void)
{
	static const char *const later[] = { "random", "roundrobin", "mutexswitch" };
	const char *v = value_of("WEFT_SCHED");
	if (!v || strcmp(v, "posix") == 0)
		return;
	for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
		size_t n = strlen(later[i]);
		if (strncmp(v, later[i], n) == 0 && (v[n] == 0 || v[n] == ':')) {
			warn("weft: WEFT_SCHED=%s is not available yet; using the default posix", v);
			return;
		}
	}
	warn("weft: WEFT_SCHED=%s is not a scheduling policy (posix); using the default posix", v);
}

static void read_timeslice(void)
{
	const char *v = value_of("WEFT_TIMESLICE");
	unsigned long long ms;
	if (!v)
		return;
	if (!parse_uint(v, &ms) || ms < 1 || ms > TIMESLICE_MAX_MS) {
		warn("weft: WEFT_TIMESLICE=%s is not a number of milliseconds from 1 to %d; using the default %d",
		     v, TIMESLICE_MAX_MS, TIMESLICE_DEFAULT_MS);
		return;
	}
	timeslice_ms = (unsigned)ms;
}

void __weft_env_init(void)
{
	read_stack_size();
	read_vps();
	read_sched();
	read_timeslice();
}

unsigned __weft_env_timeslice_ms(void) { return timeslice_ms; }
