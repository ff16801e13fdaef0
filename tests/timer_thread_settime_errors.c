/*
 * timer_thread_settime_errors — SIGEV_THREAD timers arm, read back, disarm
 * and delete as POSIX says, and every misuse is an error code.
 *
 * Invariant:
 *  - a new timer is disarmed (timer_gettime all zero, overrun 0);
 *    timer_settime reads back: remaining time in (0, value], the interval
 *    as set, and the previous setting through old_value; TIMER_ABSTIME on
 *    CLOCK_REALTIME and CLOCK_BOOTTIME reads back as time remaining; a time
 *    already past fires at once; a zero value disarms (no notification
 *    comes);
 *  - EINVAL: a bad clock id, a bad sigev_notify, a NULL notify function, an
 *    attribute object not initialised, a NULL or malformed itimerspec, and
 *    every call on a deleted timer or a forged timer_t (negative values are
 *    Weft's, others the kernel's: both say EINVAL); ENOTSUP: a clock the
 *    kernel times but a timerfd cannot (CPU time, TAI), or that has no timers
 *    at all (CLOCK_MONOTONIC_RAW, as glibc says);
 *  - every version glibc exports is Weft's (dlvsym), and the int timer_t
 *    ABI (GLIBC_2.2.5) works: index in 0..255, calls by index, EINVAL for an
 *    index that holds no timer.
 */
#include "timer_test.h"

#include <dlfcn.h>

static volatile int fired;

static void count(union sigval v)
{
	(void)v;
	__atomic_add_fetch(&fired, 1, __ATOMIC_SEQ_CST);
}

static long ns_of(const struct timespec *ts) { return ts->tv_sec * 1000000000L + ts->tv_nsec; }

static void check_disarmed(timer_t tm)
{
	struct itimerspec cur;
	memset(&cur, 0xff, sizeof cur);
	CHECK_OK(timer_gettime(tm, &cur));
	CHECK_EQ(ns_of(&cur.it_value), 0);
	CHECK_EQ(ns_of(&cur.it_interval), 0);
}

static void check_bad_handle(timer_t tm)
{
	struct itimerspec its = { .it_value = { 1, 0 } }, cur;
	CHECK_FAILS(timer_settime(tm, 0, &its, NULL), EINVAL);
	CHECK_FAILS(timer_gettime(tm, &cur), EINVAL);
	CHECK_FAILS(timer_getoverrun(tm), EINVAL);
	CHECK_FAILS(timer_delete(tm), EINVAL);
}

static void create_errors(void)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = count;
	timer_t tm;
	CHECK_FAILS(timer_create((clockid_t)12345, &ev, &tm), EINVAL);
	CHECK_FAILS(timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &tm), ENOTSUP);
	CHECK_FAILS(timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm), ENOTSUP);
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC_RAW, &ev, &tm), ENOTSUP);
	CHECK_FAILS(timer_create(CLOCK_TAI, &ev, &tm), ENOTSUP);
	ev.sigev_notify_function = NULL;
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, &tm), EINVAL);
	ev.sigev_notify_function = count;
	pthread_attr_t junk;
	memset(&junk, 0x5a, sizeof junk);
	ev.sigev_notify_attributes = &junk;
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, &tm), EINVAL);
	ev.sigev_notify_attributes = NULL;
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, NULL), EINVAL);
	ev.sigev_notify = 42;
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, &tm), EINVAL);
	CHECK_EQ(tt_timerfds(NULL), 0);          /* no failure left a descriptor */
}

static void arm_read_back(void)
{
	timer_t tm = tt_make(CLOCK_MONOTONIC, count, 0, NULL);
	check_disarmed(tm);
	CHECK_EQ(timer_getoverrun(tm), 0);

	struct itimerspec its = { .it_value = { 10, 0 }, .it_interval = { 1, 500 } }, cur, old;
	CHECK_OK(timer_settime(tm, 0, &its, NULL));
	CHECK_OK(timer_gettime(tm, &cur));
	CHECK(ns_of(&cur.it_value) > 9000000000L && ns_of(&cur.it_value) <= 10000000000L);
	CHECK_EQ(ns_of(&cur.it_interval), 1000000500L);
	struct itimerspec its2 = { .it_value = { 20, 0 } };
	memset(&old, 0xff, sizeof old);
	CHECK_OK(timer_settime(tm, 0, &its2, &old));
	CHECK(ns_of(&old.it_value) > 9000000000L && ns_of(&old.it_value) <= 10000000000L);
	CHECK_EQ(ns_of(&old.it_interval), 1000000500L);

	/* malformed settings change nothing */
	CHECK_FAILS(timer_settime(tm, 0, NULL, NULL), EINVAL);
	struct itimerspec bad = { .it_value = { 1, 1000000000 } };
	CHECK_FAILS(timer_settime(tm, 0, &bad, NULL), EINVAL);
	bad.it_value.tv_nsec = -1;
	CHECK_FAILS(timer_settime(tm, 0, &bad, NULL), EINVAL);
	bad = (struct itimerspec){ .it_value = { -1, 0 } };
	CHECK_FAILS(timer_settime(tm, 0, &bad, NULL), EINVAL);
	CHECK_OK(timer_gettime(tm, &cur));
	CHECK(ns_of(&cur.it_value) > 19000000000L);

	/* a zero value disarms: a timer 30 ms away never fires */
	tt_arm(tm, 30 * TT_MS, 0);
	struct itimerspec zero = { 0 };
	CHECK_OK(timer_settime(tm, 0, &zero, &old));
	CHECK(ns_of(&old.it_value) > 0);
	check_disarmed(tm);
	int before = fired;
	tt_sleep_ms(100);
	CHECK_EQ(fired, before);

	/* a relative one-shot fires once */
	tt_arm(tm, 5 * TT_MS, 0);
	CHECK(tt_wait_for(&fired, before + 1, 2000));
	tt_sleep_ms(50);
	CHECK_EQ(fired, before + 1);
	check_disarmed(tm);
	CHECK_OK(timer_delete(tm));
	check_bad_handle(tm);
}

static void absolute(clockid_t clk)
{
	timer_t tm = tt_make(clk, count, 0, NULL);
	struct itimerspec its = { .it_value = test_time_in(clk, 5000 * TT_MS) }, cur;
	CHECK_OK(timer_settime(tm, TIMER_ABSTIME, &its, NULL));
	CHECK_OK(timer_gettime(tm, &cur));
	CHECK(ns_of(&cur.it_value) > 4000000000L && ns_of(&cur.it_value) <= 5000000000L);
	/* already past: at once */
	int before = fired;
	its.it_value = test_time_in(clk, 0);
	its.it_value.tv_sec -= 1;
	CHECK_OK(timer_settime(tm, TIMER_ABSTIME, &its, NULL));
	CHECK(tt_wait_for(&fired, before + 1, 2000));
	CHECK_OK(timer_delete(tm));
}

static void forged_handles(void)
{
	check_bad_handle((timer_t)(intptr_t)-1);
	check_bad_handle((timer_t)INTPTR_MIN);
	check_bad_handle((timer_t)(intptr_t)(INTPTR_MIN | 77));
	check_bad_handle((timer_t)(intptr_t)(INTPTR_MIN | ((intptr_t)5 << 32)));
	check_bad_handle((timer_t)(intptr_t)123456);  /* the kernel's: no such timer */
	/* a deleted handle stays invalid after its slot is reused */
	timer_t a = tt_make(CLOCK_MONOTONIC, count, 0, NULL);
	CHECK_OK(timer_delete(a));
	timer_t b = tt_make(CLOCK_MONOTONIC, count, 0, NULL);
	CHECK(a != b);
	check_bad_handle(a);
	check_disarmed(b);
	CHECK_OK(timer_delete(b));
}

#ifndef WEFT_TEST_SANITIZE
typedef int (*create_int_fn)(clockid_t, struct sigevent *, int *);
typedef int (*delete_int_fn)(int);
typedef int (*settime_int_fn)(int, int, const struct itimerspec *, struct itimerspec *);
typedef int (*gettime_int_fn)(int, struct itimerspec *);
typedef int (*getoverrun_int_fn)(int);

static void *weft_version_of(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_DEFAULT, name, version);
	Dl_info di;
	CHECK(p != NULL);
	CHECK(dladdr(p, &di) && di.dli_fname && strstr(di.dli_fname, "libweft"));
	return p;
}

static void versions(void)
{
	static const char *const names[] = { "timer_create", "timer_delete", "timer_settime",
					     "timer_gettime", "timer_getoverrun" };
	for (int i = 0; i < 5; i++) {
		CHECK(weft_version_of(names[i], "GLIBC_2.34") == weft_version_of(names[i], "GLIBC_2.3.3"));
		CHECK(weft_version_of(names[i], "GLIBC_2.2.5") != weft_version_of(names[i], "GLIBC_2.34"));
	}
	create_int_fn create_int = (create_int_fn)weft_version_of("timer_create", "GLIBC_2.2.5");
	delete_int_fn delete_int = (delete_int_fn)weft_version_of("timer_delete", "GLIBC_2.2.5");
	settime_int_fn settime_int = (settime_int_fn)weft_version_of("timer_settime", "GLIBC_2.2.5");
	gettime_int_fn gettime_int = (gettime_int_fn)weft_version_of("timer_gettime", "GLIBC_2.2.5");
	getoverrun_int_fn getoverrun_int = (getoverrun_int_fn)weft_version_of("timer_getoverrun", "GLIBC_2.2.5");

	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = count;
	int a = -1, b = -1;
	CHECK_OK(create_int(CLOCK_MONOTONIC, &ev, &a));
	ev.sigev_notify = SIGEV_NONE;
	CHECK_OK(create_int(CLOCK_MONOTONIC, &ev, &b));
	CHECK(a >= 0 && a < 256 && b >= 0 && b < 256 && a != b);
	struct itimerspec its = { .it_value = { 0, 5 * TT_MS } }, cur;
	int before = fired;
	CHECK_OK(settime_int(a, 0, &its, NULL));
	CHECK(tt_wait_for(&fired, before + 1, 2000));
	CHECK_EQ(getoverrun_int(a), 0);
	its.it_value.tv_sec = 7;
	CHECK_OK(settime_int(b, 0, &its, NULL));
	CHECK_OK(gettime_int(b, &cur));
	CHECK(cur.it_value.tv_sec >= 6);
	CHECK_OK(delete_int(a));
	CHECK_OK(delete_int(b));
	CHECK_FAILS(delete_int(a), EINVAL);
	CHECK_FAILS(gettime_int(b, &cur), EINVAL);
	CHECK_FAILS(getoverrun_int(300), EINVAL);
	CHECK_FAILS(settime_int(-1, 0, &its, NULL), EINVAL);
}
#else
static void versions(void) {}   /* libweft.a linked in: the program's symbols carry no versions */
#endif

int main(void)
{
	create_errors();
	arm_read_back();
	absolute(CLOCK_REALTIME);
	absolute(CLOCK_BOOTTIME);
	forged_handles();
	versions();
	CHECK_EQ(tt_timerfds(NULL), 0);
	return 0;
}
