/*
 * fuzz.h — the API fuzzer's case machinery (api_fuzz.c): a seeded random
 * source, hostile-value pickers, helper threads that hold or release
 * objects after a delay, and expect(), which fails the case with its
 * description when a call answers outside the allowed set.
 *
 * Every case runs in its own child process (fork); the parent kills it
 * after a timeout.  A case describes what it does in a buffer shared with
 * the parent, so a crash or a hang is reported with the call that caused it.
 */
#ifndef WEFT_FUZZ_H
#define WEFT_FUZZ_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <weft.h>

#define FUZZ_DESC 4096
#define END_OF_SET (-99999)

/* The shared description of the running case (parent reads it). */
extern char *fuzz_desc;

static uint64_t fuzz_rng;

static inline uint64_t rnd(void)
{
	uint64_t z = (fuzz_rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }
static inline bool coin(void) { return rnd() & 1; }

/* Append to the case's description. */
static inline void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void say(const char *fmt, ...)
{
	size_t n = strnlen(fuzz_desc, FUZZ_DESC - 1);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fuzz_desc + n, FUZZ_DESC - n, fmt, ap);
	va_end(ap);
}

static inline const char *ename(long e)
{
	if (e == 0)
		return "0";
	const char *n = e > 0 && e < 4096 ? strerrorname_np((int)e) : NULL;
	return n ? n : "?";
}

/* The call answered `got`: it must be one of `allowed` (END_OF_SET ends). */
static inline void expect_in(const char *call, long got, const int *allowed)
{
	for (const int *a = allowed; *a != END_OF_SET; a++)
		if (got == *a)
			return;
	char set[256] = "";
	for (const int *a = allowed; *a != END_OF_SET; a++)
		snprintf(set + strlen(set), sizeof set - strlen(set), "%s%s", a == allowed ? "" : ", ", ename(*a));
	say("\n  => %s returned %ld (%s), allowed {%s}", call, got, ename(got), set);
	fprintf(stderr, "%s\n", fuzz_desc);
	_exit(1);
}

/* An allowed set, copied out of its compound literal (whose life ends with
 * the enclosing block) into one of a few static slots. */
static inline const int *keep_set(const int *set)
{
	static int ring[8][16];
	static unsigned next;
	int *d = ring[next++ % 8];
	unsigned i = 0;
	while (set[i] != END_OF_SET && i < 15) {
		d[i] = set[i];
		i++;
	}
	d[i] = END_OF_SET;
	return d;
}
#define ALLOW(...) keep_set((const int[]){ __VA_ARGS__, END_OF_SET })
/* Call, record, check: EXPECT(pthread_join(t, NULL), ALLOW(0, ESRCH)). */
#define EXPECT(call, set)                                                   \
	do {                                                                 \
		say("\n  %s", #call);                                         \
		long _r = (long)(call);                                      \
		expect_in(#call, _r, set);                                   \
	} while (0)
/* For calls that answer -1 and errno: 0 or the errno. */
#define ERRNO_OF(call) ((call) == 0 ? 0 : errno)

static inline void check_true(const char *what, bool ok)
{
	if (ok)
		return;
	say("\n  => check failed: %s", what);
	fprintf(stderr, "%s\n", fuzz_desc);
	_exit(1);
}
#define ENSURE(cond) check_true(#cond, (cond))

/* ---- time ---- */

enum tclass { T_INVALID, T_PAST, T_NEAR, T_FOREVER };
static const char *const tclass_name[] = { "invalid", "past", "near", "forever" };

#define NEAR_NS 1000000L          /* a deadline that passes before a release */
#define HOLD_NS 3000000L          /* helpers release after this */

static inline struct timespec ts_add(struct timespec t, long ns)
{
	t.tv_nsec += ns % 1000000000L;
	t.tv_sec += ns / 1000000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_nsec -= 1000000000L;
		t.tv_sec++;
	}
	return t;
}

/* A hostile absolute time on clock clk (read as CLOCK_REALTIME if clk is
 * not a clock), and its class. */
static inline struct timespec pick_abs(clockid_t clk, enum tclass *cls)
{
	struct timespec now;
	if (clock_gettime(clk, &now) != 0)
		clock_gettime(CLOCK_REALTIME, &now);
	struct timespec t;
	switch (pick(14)) {
	case 0: t = (struct timespec){ now.tv_sec, -1 }; *cls = T_INVALID; break;
	case 1: t = (struct timespec){ now.tv_sec, 1000000000L }; *cls = T_INVALID; break;
	case 2: t = (struct timespec){ LLONG_MAX, LONG_MAX }; *cls = T_INVALID; break;
	case 3: t = (struct timespec){ LLONG_MIN, LONG_MIN }; *cls = T_INVALID; break;
	case 4: t = (struct timespec){ 0, (long)(rnd() | (1ull << 63)) }; *cls = T_INVALID; break;
	case 5: t = (struct timespec){ LLONG_MIN, 0 }; *cls = T_PAST; break;
	case 6: t = (struct timespec){ -1, 999999999 }; *cls = T_PAST; break;
	case 7: t = (struct timespec){ 0, 0 }; *cls = T_PAST; break;
	case 8: t = ts_add(now, -1); t.tv_sec -= 1; *cls = T_PAST; break;
	case 9: t = (struct timespec){ now.tv_sec - (time_t)(rnd() >> 2), 0 }; *cls = T_PAST; break;
	case 10: t = ts_add(now, NEAR_NS); *cls = T_NEAR; break;
	case 11: t = (struct timespec){ LLONG_MAX, 999999999 }; *cls = T_FOREVER; break;
	case 12: t = (struct timespec){ LLONG_MAX / 1000000000 + 1, 0 }; *cls = T_FOREVER; break;
	default: t = (struct timespec){ now.tv_sec + 1000000, 0 }; *cls = T_FOREVER; break;
	}
	say(" [abstime %s {%lld, %ld}]", tclass_name[*cls], (long long)t.tv_sec, t.tv_nsec);
	return t;
}

/* A hostile relative time and its class (negative is invalid). */
static inline struct timespec pick_rel(enum tclass *cls, bool allow_forever)
{
	struct timespec t;
	switch (pick(allow_forever ? 11 : 9)) {
	case 0: t = (struct timespec){ 0, -1 }; *cls = T_INVALID; break;
	case 1: t = (struct timespec){ 0, 1000000000L }; *cls = T_INVALID; break;
	case 2: t = (struct timespec){ -1, 0 }; *cls = T_INVALID; break;
	case 3: t = (struct timespec){ LLONG_MIN, 0 }; *cls = T_INVALID; break;
	case 4: t = (struct timespec){ 0, LONG_MIN }; *cls = T_INVALID; break;
	case 5: t = (struct timespec){ 0, 0 }; *cls = T_PAST; break;
	case 6: t = (struct timespec){ 0, 1 }; *cls = T_PAST; break;
	case 7:
	case 8: t = (struct timespec){ 0, NEAR_NS }; *cls = T_NEAR; break;
	case 9: t = (struct timespec){ LLONG_MAX, 999999999 }; *cls = T_FOREVER; break;
	default: t = (struct timespec){ 1000000, 0 }; *cls = T_FOREVER; break;
	}
	say(" [reltime %s {%lld, %ld}]", tclass_name[*cls], (long long)t.tv_sec, t.tv_nsec);
	return t;
}

/* A clock id: the two every timed sync call takes, others and garbage. */
static inline clockid_t pick_clock(bool *sync_ok)
{
	static const clockid_t clocks[] = {
		CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_MONOTONIC,
		CLOCK_BOOTTIME, CLOCK_TAI, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
		CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
		CLOCK_REALTIME_ALARM, -1, INT_MIN, INT_MAX, 12345, -6 /* a CPU clock */,
	};
	clockid_t c = clocks[pick(sizeof clocks / sizeof clocks[0])];
	if (pick(8) == 0)
		c = (clockid_t)rnd();
	*sync_ok = c == CLOCK_REALTIME || c == CLOCK_MONOTONIC;
	say(" [clock %d]", (int)c);
	return c;
}

static inline size_t pick_size(void)
{
	static const size_t sizes[] = {
		0, 1, 4095, 4096, 16383, 16384, 16385, 65536, 1 << 20, 8 << 20,
		SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX - 4096, SIZE_MAX / 2, SIZE_MAX / 2 + 1,
		(size_t)1 << 40, (size_t)1 << 46, (size_t)1 << 62, (size_t)-16384,
	};
	size_t s = pick(8) == 0 ? (size_t)rnd() : sizes[pick(sizeof sizes / sizeof sizes[0])];
	say(" [size %zu]", s);
	return s;
}

static inline int pick_int(const int *good, unsigned ngood)
{
	static const int bad[] = { -1, INT_MIN, INT_MAX, 2, 3, 4, 5, 7, 100, 1000, 65536 };
	int v = pick(2) ? good[pick(ngood)] : pick(4) ? bad[pick(sizeof bad / sizeof bad[0])] : (int)rnd();
	say(" [int %d]", v);
	return v;
}

static inline bool in_set(int v, const int *set, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

#endif
