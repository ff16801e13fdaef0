/* Sleeping parks only the caller: while one UT sleeps the others run.  Each
 * sleep call (nanosleep, clock_nanosleep relative and TIMER_ABSTIME on
 * CLOCK_REALTIME and CLOCK_MONOTONIC, usleep, sleep) waits at least as long
 * as asked, a deadline already past returns at once, and bad arguments are
 * refused with the documented error. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>

/* NULL passed on purpose: hidden from the compiler (glibc's headers declare
 * nonnull) and from UBSan's nonnull check in the functions marked so. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

#define MS 1000000LL

static atomic_int stop;
static atomic_long spins;

static void *spinner(void *arg)
{
	while (!stop) {
		spins++;
		usleep(1000);              /* sleeps too: no busy loop */
	}
	return NULL;
}

/* Run `sleep_fn` in main while a spinner counts; the spinner must make
 * progress and main must sleep at least `min_ns`. */
static void with_spinner(void (*sleep_fn)(void), int64_t min_ns)
{
	pthread_t t;
	stop = 0;
	spins = 0;
	CHECK_OK(pthread_create(&t, NULL, spinner, NULL));
	int64_t t0 = test_now_ns();
	sleep_fn();
	int64_t took = test_now_ns() - t0;
	CHECK(spins > 0);
	stop = 1;
	CHECK_OK(pthread_join(t, NULL));
	if (took < min_ns) {
		fprintf(stderr, "slept %lld ns, asked for %lld\n", (long long)took, (long long)min_ns);
		CHECK(took >= min_ns);
	}
	CHECK(took < min_ns * 10 + 1000 * MS);
}

static void do_nanosleep(void)
{
	struct timespec ts = { 0, 10 * MS };
	CHECK_OK(nanosleep(&ts, NULL));
}

static void do_clock_rel(void)
{
	struct timespec ts = { 0, 10 * MS };
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL));
}

static void do_clock_rel_realtime(void)
{
	struct timespec ts = { 0, 10 * MS };
	CHECK_OK(clock_nanosleep(CLOCK_REALTIME, 0, &ts, NULL));
}

static void abs_sleep(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += 10 * MS;
	if (ts.tv_nsec >= 1000 * MS) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000 * MS;
	}
	CHECK_OK(clock_nanosleep(clk, TIMER_ABSTIME, &ts, NULL));
	struct timespec now;
	clock_gettime(clk, &now);
	CHECK(now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
}

static void do_abs_monotonic(void) { abs_sleep(CLOCK_MONOTONIC); }
static void do_abs_realtime(void) { abs_sleep(CLOCK_REALTIME); }
static void do_usleep(void) { CHECK_OK(usleep(10000)); }
static void do_sleep(void) { CHECK_EQ(sleep(1), 0); }

static void test_past_and_zero(void)
{
	int64_t t0 = test_now_ns();
	struct timespec past = { 1, 0 }, zero = { 0, 0 };
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL));
	CHECK_OK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &past, NULL));
	CHECK_OK(nanosleep(&zero, NULL));
	CHECK_OK(usleep(0));
	CHECK_EQ(sleep(0), 0);
	CHECK(test_now_ns() - t0 < 1000 * MS);

	/* a zero sleep still lets an equal-priority UT run */
	pthread_t t;
	stop = 0;
	spins = 0;
	CHECK_OK(pthread_create(&t, NULL, spinner, NULL));
	CHECK_OK(nanosleep(&zero, NULL));
	if (test_stats().vps > 1)          /* several VPs: it starts on another, maybe later */
		for (int64_t end = test_now_ns() + 10000 * MS; !spins && test_now_ns() < end;)
			sched_yield();
	CHECK(spins > 0);
	stop = 1;
	CHECK_OK(pthread_join(t, NULL));
}

PASSES_NULL static void test_errors(void)
{
	struct timespec ok = { 0, 1000 }, big = { 0, 1000 * MS }, neg = { 0, -1 }, negs = { -1, 0 };
	CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &big, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &neg, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &big, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &neg, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, NUL(const struct timespec *), NULL), EINVAL);
	CHECK_EQ(clock_nanosleep((clockid_t)12345, 0, &ok, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ok, NULL), EINVAL);
	errno = 0;
	CHECK_EQ(nanosleep(&big, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(nanosleep(&negs, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(nanosleep(NUL(const struct timespec *), NULL), -1);
	CHECK_EQ(errno, EINVAL);
}

int main(void)
{
	test_errors();
	test_past_and_zero();
	with_spinner(do_nanosleep, 10 * MS);
	with_spinner(do_clock_rel, 10 * MS);
	with_spinner(do_clock_rel_realtime, 10 * MS);
	with_spinner(do_abs_monotonic, 0);
	with_spinner(do_abs_realtime, 0);
	with_spinner(do_usleep, 10 * MS);
	with_spinner(do_sleep, 1000 * MS);
	return 0;
}
