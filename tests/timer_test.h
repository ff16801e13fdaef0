/*
 * timer_test.h — helpers of the timer_* tests (POSIX timers, SIGEV_THREAD
 * in a UT: src/posix/timer_thread.c).
 */
#ifndef WEFT_TEST_TIMER_H
#define WEFT_TEST_TIMER_H

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>

#define TT_MS 1000000L

/* A SIGEV_THREAD timer on clk calling fn(value) with attributes a. */
static inline timer_t tt_make_value(clockid_t clk, void (*fn)(union sigval), union sigval value,
				    pthread_attr_t *a)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = fn;
	ev.sigev_value = value;
	ev.sigev_notify_attributes = a;
	timer_t tm;
	CHECK_OK(timer_create(clk, &ev, &tm));
	return tm;
}

static inline timer_t tt_make(clockid_t clk, void (*fn)(union sigval), int value, pthread_attr_t *a)
{
	return tt_make_value(clk, fn, (union sigval){ .sival_int = value }, a);
}

/* Arm tm: first expiry in first_ns, then every period_ns (0: once). */
static inline void tt_arm(timer_t tm, long first_ns, long period_ns)
{
	struct itimerspec its = {
		.it_value = { first_ns / 1000000000, first_ns % 1000000000 },
		.it_interval = { period_ns / 1000000000, period_ns % 1000000000 },
	};
	CHECK_OK(timer_settime(tm, 0, &its, NULL));
}

/* A call that must fail with -1 and errno e. */
#define CHECK_FAILS(call, e)                                                         \
	do {                                                                         \
		errno = 0;                                                           \
		CHECK_EQ((call), -1);                                                \
		CHECK_EQ(errno, (e));                                                \
	} while (0)

/* The timerfds this process holds (readlink of /proc/self/fd), and the
 * lowest number among them in *lowest (-1 if none). */
static inline int tt_timerfds(int *lowest)
{
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	int n = 0, low = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char path[300], what[64];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t r = readlink(path, what, sizeof what - 1);
		if (r <= 0)
			continue;
		what[r] = 0;
		if (strcmp(what, "anon_inode:[timerfd]") != 0)
			continue;
		int fd = atoi(e->d_name);
		n++;
		if (low < 0 || fd < low)
			low = fd;
	}
	closedir(d);
	if (lowest)
		*lowest = low;
	return n;
}

/* Park the caller for ms milliseconds (other UTs run). */
static inline void tt_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * TT_MS };
	while (nanosleep(&ts, &ts) != 0)
		CHECK_EQ(errno, EINTR);
}

/* Wait (parked in short sleeps) until *p >= v; false after timeout_ms. */
static inline bool tt_wait_for(const volatile int *p, int v, long timeout_ms)
{
	int64_t end = test_now_ns() + timeout_ms * TT_MS;
	while (__atomic_load_n(p, __ATOMIC_SEQ_CST) < v) {
		if (test_now_ns() > end)
			return false;
		tt_sleep_ms(1);
	}
	return true;
}

/* Wait (sleeping, at most timeout_ms) until no more than `live` UTs are
 * alive, and say how many are.  A notify UT counts as live until it has
 * finished exiting, which on another VP (WEFT_VPS=2) or on a loaded
 * machine may be well after its function's last store was seen. */
static inline uint64_t tt_settle_live(uint64_t live, long timeout_ms)
{
	int64_t end = test_now_ns() + timeout_ms * TT_MS;
	uint64_t now;
	while ((now = test_stats().threads_live) > live && test_now_ns() < end)
		tt_sleep_ms(1);
	return now;
}

#endif
