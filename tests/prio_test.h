/*
 * prio_test.h — what the priority-protocol tests share: an event log that
 * records who ran when, protocol mutexes, and SCHED_FIFO set-up.
 *
 * Every prio_* test runs its UTs under SCHED_FIFO on one VP, where the POSIX
 * policy fixes the order completely (FIFO UTs are never sliced), so each
 * asserts an exact timeline: the sequence of events the UTs log.
 */
#ifndef WEFT_TEST_PRIO_H
#define WEFT_TEST_PRIO_H

#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

/* The log: short names, in the order the events happened.  volatile:
 * glibc declares some of the calls between two records "leaf", so GCC
 * could keep the index in a register across a switch to another UT. */
#define PT_MAX 128
static const char *volatile pt_log[PT_MAX];
static volatile int pt_n;

static inline void pt_event(const char *what)
{
	CHECK(pt_n < PT_MAX);
	pt_log[pt_n++] = what;
}

static inline void pt_reset(void) { pt_n = 0; }

/* A UT body that logs its argument, a string, and ends. */
static inline void *pt_logs(void *what)
{
	pt_event(what);
	return NULL;
}

/* The log must be exactly want[0..n); prints both on a mismatch. */
static inline void pt_expect_at(const char *file, int line, const char *const *want, int n)
{
	bool ok = pt_n == n;
	for (int i = 0; ok && i < n; i++)
		ok = strcmp(pt_log[i], want[i]) == 0;
	if (ok)
		return;
	fprintf(stderr, "%s:%d: timeline\n  got: ", file, line);
	for (int i = 0; i < pt_n; i++)
		fprintf(stderr, " %s", pt_log[i]);
	fprintf(stderr, "\n want:");
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", want[i]);
	fprintf(stderr, "\n");
	exit(1);
}
#define PT_EXPECT(...)                                                               \
	do {                                                                         \
		static const char *const pt_want_[] = { __VA_ARGS__ };               \
		pt_expect_at(__FILE__, __LINE__, pt_want_,                           \
			     (int)(sizeof pt_want_ / sizeof pt_want_[0]));           \
	} while (0)

/* A mutex with `protocol`; `ceiling` is used for PTHREAD_PRIO_PROTECT. */
static inline void pt_mutex_init(pthread_mutex_t *m, int protocol, int ceiling, int type)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, protocol));
	if (protocol == PTHREAD_PRIO_PROTECT)
		CHECK_OK(pthread_mutexattr_setprioceiling(&a, ceiling));
	CHECK_OK(pthread_mutex_init(m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

static inline void pt_set_self_fifo(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
}

/* A SCHED_FIFO UT at `prio` running fn(arg); it runs at once if it
 * outranks the caller. */
static inline pthread_t pt_spawn(int prio, void *(*fn)(void *), void *arg)
{
	return test_spawn_sched(SCHED_FIFO, prio, fn, arg);
}

static inline uint64_t pt_switches(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.context_switches;
}

#endif
