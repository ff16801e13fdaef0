/*
 * sig_test.h — helpers shared by the per-thread signal tests (issue 15).
 *
 * Every test here is built twice: against Weft (-lweft) and against plain
 * NPTL (SIG_NPTL defined), the reference that proves the test asserts what
 * Linux does.  So nothing here calls Weft unless SIG_NPTL is undefined, and
 * every wait between threads is a blocking call or a sched_yield loop with
 * a deadline (under M:1 a plain spin would hold the only processor for a
 * whole time slice, or for ever with slicing off): a signal that never
 * arrives fails the test with file:line, never hangs it.
 */
#ifndef WEFT_SIG_TEST_H
#define WEFT_SIG_TEST_H
#include "check.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>

#define SIG_MS 1000000LL

/* Install fn for sig with SA_SIGINFO | flags, blocking `also` (0: none)
 * while it runs. */
static inline void sig_on(int sig, void (*fn)(int, siginfo_t *, void *), int flags, int also)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	if (also)
		sigaddset(&sa.sa_mask, also);
	CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

/* Block or unblock one signal for the calling thread. */
static inline void sig_mask1(int how, int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	CHECK_OK(pthread_sigmask(how, &s, NULL));
}

/* Whether sig is blocked for the calling thread. */
static inline bool sig_blocked(int sig)
{
	sigset_t s;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &s));
	return sigismember(&s, sig) == 1;
}

/* Yield until *p >= v; false if that took longer than timeout_ms. */
static inline bool sig_wait_for(const volatile int *p, int v, long timeout_ms)
{
	int64_t end = test_now_ns() + timeout_ms * SIG_MS;
	while (*p < v) {
		if (test_now_ns() > end)
			return false;
		sched_yield();
	}
	return true;
}

/* Sleep ms milliseconds whatever signals come meanwhile. */
static inline void sig_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * SIG_MS }, rem;
	while (nanosleep(&ts, &rem) != 0) {
		CHECK_EQ(errno, EINTR);
		ts = rem;
	}
}

/* Spin without a Weft call for ms milliseconds (time slicing must take
 * the processor away for anybody else to run under M:1). */
static inline void sig_spin_ms(long ms)
{
	int64_t end = test_now_ns() + ms * SIG_MS;
	while (test_now_ns() < end)
		__asm__ volatile("" ::: "memory");
}

/* The handler most tests install: it records which thread ran it and
 * what it was given, then counts (hits last, so a waiter that sees the
 * count sees the rest). */
static volatile int hits __attribute__((unused));
static volatile pthread_t hit_self __attribute__((unused));
static volatile int hit_code __attribute__((unused)), hit_value __attribute__((unused));

static inline void on_record(int sig, siginfo_t *si, void *uc)
{
	hit_self = pthread_self();
	hit_code = si->si_code;
	hit_value = si->si_value.sival_int;
	hits = hits + 1;
}

/* Block (or unblock, with how) every signal of a 0-ended list. */
static inline void sig_mask_list(int how, const int *sigs)
{
	sigset_t s;
	sigemptyset(&s);
	for (; *sigs; sigs++)
		sigaddset(&s, *sigs);
	CHECK_OK(pthread_sigmask(how, &s, NULL));
}

/* Threads created so far: Weft's counter; -1 on NPTL (nothing to count). */
static inline long sig_threads_created(void)
{
#ifdef SIG_NPTL
	return -1;
#else
	return (long)test_stats().threads_created;
#endif
}

#endif
