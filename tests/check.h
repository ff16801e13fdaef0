/*
 * check.h — the tests' shared helpers.  A test prints nothing on success and
 * exits 0; a failed check prints file:line and the values, and exits 1;
 * exit 77 means "skipped" (CTest SKIP_RETURN_CODE).
 */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <weft.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#define CHECK_EQ(a, b)                                                               \
	do {                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                  \
		if (_a != _b) {                                                      \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
				__LINE__, #a, #b, _a, _b);                           \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

/* For calls returning 0 or an errno value. */
#define CHECK_OK(call) CHECK_EQ((call), 0)

#define SKIP(why)                                                                    \
	do {                                                                         \
		fprintf(stderr, "skipped: %s\n", why);                               \
		exit(77);                                                            \
	} while (0)

/* An address in the calling function's frame, on the stack it runs on.
 * Not the address of a local: under AddressSanitizer with
 * detect_stack_use_after_return=1 a local whose address is taken lives on
 * ASan's fake stack (a heap block), not on the thread's stack. */
#define TEST_HERE() ((char *)__builtin_frame_address(0))

/* Under ASan/UBSan and under TSan the tests scale their loop counts down by
 * this factor: there they look for memory errors and races, which a tenth
 * of the rounds finds as well, and every switch costs far more (both
 * runtimes have TLS, so each switch loads a thread pointer: an arch_prctl
 * of ~5 us where the machine has no FSGSBASE). */
#ifndef TEST_SCALE                     /* a build may set its own (tests/tsan) */
#if defined(WEFT_TEST_SANITIZE) || defined(WEFT_TEST_TSAN)
#define TEST_SCALE 10
#else
#define TEST_SCALE 1
#endif
#endif

/* An absolute time `ns` from now on clock `clk`. */
static inline struct timespec test_time_in(clockid_t clk, long ns)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += ns;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

/* Create a UT running fn(arg) with an explicit policy and priority. */
static inline pthread_t test_spawn_sched(int policy, int prio, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = prio };
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, policy));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	CHECK_OK(pthread_create(&t, &a, fn, arg));
	CHECK_OK(pthread_attr_destroy(&a));
	return t;
}

/* The same, SCHED_FIFO at `prio`, or SCHED_OTHER if prio is 0. */
static inline pthread_t test_spawn_prio(int prio, void *(*fn)(void *), intptr_t tag)
{
	return test_spawn_sched(prio ? SCHED_FIFO : SCHED_OTHER, prio, fn, (void *)tag);
}

/* A loop count: n, divided by TEST_SCALE and by WEFT_TEST_QUICK when set
 * (the seed runs in CI repeat each test a hundred times, smaller). */
static inline long test_iters(long n)
{
	const char *q = getenv("WEFT_TEST_QUICK");
	long d = q ? atol(q) : 1;
	long r = n / TEST_SCALE / (d > 0 ? d : 1);
	return r > 0 ? r : 1;
}

/* Wait (generously bounded) until *flag == want, with several VPs only: on
 * one VP what the caller checks has happened at once (a hand-over ran the
 * new owner), and the check stays exact there.  The flag is a C11 atomic:
 * another UT sets it, and a plain (even volatile) variable shared so is a
 * data race (ThreadSanitizer reports it).  C only. */
#ifndef __cplusplus
#include <stdatomic.h>
static inline void test_await_on_many_vps(atomic_int *flag, int want)
{
	struct weft_stats s;
	if (weft_stats_get(&s, sizeof s) != 0 || s.vps <= 1)
		return;
	for (long i = 0; i < 10000000 && atomic_load(flag) != want; i++)
		sched_yield();
}
#endif

/* Write n bytes or so of the caller's stack, one 4 KiB frame at a time
 * below its own frame (each frame's first and last byte): the pages a UT
 * that uses that much stack touches. */
static inline void test_touch_stack(size_t n)
{
	volatile char buf[4096];
	buf[0] = 1;
	buf[sizeof buf - 1] = 1;
	if (n > 2 * sizeof buf)
		test_touch_stack(n - sizeof buf);
	buf[1] = buf[0];          /* live after the call: no tail call, a frame each */
}

/* Yield while another UT is ready, at most n times: weft_stats_get's
 * threads_ready, which under several VPs counts a UT running on another VP.
 * Returns how many are still ready (0: all the others have blocked). */
static inline unsigned test_yield_while_ready(int n)
{
	for (int i = 0;; i++) {
		struct weft_stats s;
		if (weft_stats_get(&s, sizeof s) != 0)
			return 0;
		if (s.threads_ready == 0 || i >= n)
			return (unsigned)s.threads_ready;
		sched_yield();
	}
}

/* Let every other UT run until it blocks: yield while any is ready.  Under
 * the POSIX policy one yield usually does it; under a debug schedule
 * (WEFT_SCHED=random:...) it may take several, so ordering checks written
 * "after the others have parked" hold under every schedule.  Others may
 * never block, so the wait is bounded: 1,000 yields on one VP.  Under
 * several VPs a UT running on another VP counts as ready, and the bound is
 * also a time (2 s): that VP's kernel thread may wait milliseconds for a CPU
 * (a loaded machine, a sanitizer build, ctest -j), and a thousand yields of
 * this one pass sooner than that.  (A caller that only wants to invite
 * others in, many times over, uses test_yield_while_ready.) */
static inline void test_settle(void)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct weft_stats s;
		if (test_yield_while_ready(1000) == 0 ||
		    weft_stats_get(&s, sizeof s) != 0 || s.vps <= 1)
			return;
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >= 2000000000L)
			return;
	}
}

/* Run body(arg) in a forked child whose stderr is captured: the first
 * errsz - 1 bytes land in err (NUL-ended), the rest is read and dropped
 * (an ASan report can be long).  The child ends with _exit(0) if body
 * returns.  Returns the child's wait status. */
static inline int test_in_child(void (*body)(void *), void *arg, char *err, size_t errsz)
{
	int p[2];
	CHECK_OK(pipe(p));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		body(arg);
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	char drain[4096];
	while ((r = read(p[0], n < errsz - 1 ? err + n : drain,
			 n < errsz - 1 ? errsz - 1 - n : sizeof drain)) > 0)
		if (n < errsz - 1)
			n += (size_t)r;
	err[n] = 0;
	close(p[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

/* Create a copy-stack UT (runtime/copystack.c) running fn(arg), whatever
 * the process default; joinable unless `detached`. */
static inline pthread_t test_spawn_copy(void *(*fn)(void *), void *arg, int detached)
{
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(weft_attr_setstackmode(&a, WEFT_STACK_COPY));
	if (detached)
		CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_create(&t, &a, fn, arg));
	CHECK_OK(pthread_attr_destroy(&a));
	return t;
}

/* read(2) by a `syscall` instruction in the test's own code: a blocking
 * call no wrapper of Weft's sees (the monitor's case: activations). */
static inline long test_raw_read(int fd, void *buf, size_t n)
{
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(0L /* SYS_read */), "D"((long)fd), "S"(buf), "d"(n)
			 : "rcx", "r11", "memory");
	return r;
}

/* Wait for child pid, which must exit 0. */
static inline void test_reap(pid_t pid)
{
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Weft's counters now. */
static inline struct weft_stats test_stats(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s;
}

/* The process's mappings now (lines of /proc/self/maps). */
static inline long test_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	CHECK(f != NULL);
	long n = 0;
	int c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* A UT that counts and yields while `*on`, adding to `*count`: the proof
 * that the VP runs while another UT waits. */
struct test_counter {
	volatile int on;
	volatile unsigned long count;
};

static inline void *test_counting(void *arg)
{
	struct test_counter *c = (struct test_counter *)arg;
	while (c->on) {
		c->count = c->count + 1;
		sched_yield();
	}
	return NULL;
}

/* How many of the process's descriptors are pidfds (the link names one:
 * "anon_inode:[pidfd]", or "pidfd:[...]" on newer kernels).  Only pidfds:
 * the poller's descriptors appear at its first wait, and the monitor's
 * come and go. */
static inline int test_open_pidfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		char p[64], l[64];
		snprintf(p, sizeof p, "/proc/self/fd/%.40s", e->d_name);
		ssize_t k = readlink(p, l, sizeof l - 1);
		if (k > 0) {
			l[k] = 0;
			n += strstr(l, "pidfd") != NULL;
		}
	}
	CHECK_OK(closedir(d));
	return n;
}

static inline int64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Yield until a UT has parked since `parks` (test_stats().parks, read
 * before making it), for at most 10 s: on several VPs a UT just made runs
 * on another VP, maybe long after any number of yields here (a loaded
 * machine, a sanitizer build). */
static inline void test_await_park(uint64_t parks)
{
	for (int64_t end = test_now_ns() + 10000000000ll;
	     test_stats().parks == parks && test_now_ns() < end;)
		sched_yield();
}

#endif
