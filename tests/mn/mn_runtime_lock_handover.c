/*
 * mn_runtime_lock_handover — the runtime lock (mn.c, __weft_rtl) excludes,
 * and hands itself over to a waiter that starves, under a holder that
 * takes it back at once, on three kernel threads.
 *
 * Linked with libweft.a, whose hidden lock functions it calls from kernel
 * threads of its own (glibc's clone, no thread block of their own: they
 * touch no TLS; the lock needs none), with no UT involved.  Each thread
 * takes the lock 60,000 times; inside, it checks that nobody else is
 * inside, adds 1 to a plain counter, and 1 time in 128 holds the lock for
 * 120 µs, so that the others go to sleep on it and wait past the 100 µs
 * after which a waiter asks for the hand-over (about 200 hand-overs a
 * run).  One of them ("the barger") takes the lock again as soon as it
 * lets it go, the pattern that starved an idle VP before the hand-over
 * existed.  The race the hand-over's compare-exchange on the claim closes
 * (an unlock that read a claim its waiter then withdrew, and handed the
 * lock to nobody) hung this test once in 100 runs of an earlier version
 * with fewer hand-overs; it is rare, so the test is a stress, not proof.
 *
 * Asserted: the counter is exactly 3 x 60,000 (no lost update: the
 * hand-over's "take it back for the waiter" never lets two in, and never
 * leaves the lock held by nobody, which would hang the test), nobody was
 * ever found inside, every thread finished (bounded: 60 s), at least one
 * hand-over happened, and the lock is free at the end with no claim left.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

void __weft_rtl_lock_slow(void);
void __weft_rtl_unlock_slow(uint32_t was);
/* rt.h's struct weft_rtl_line, copied as the lock's halves are */
extern struct {
	volatile uint32_t word;
	volatile uint32_t *volatile starving;
	volatile uint64_t handovers;
} __attribute__((aligned(64))) __weft_rtl;

enum { THREADS = 3, ROUNDS = 60000, STACK = 256 << 10 };

/* The lock's inline halves, as rt.h has them (without the debug build's
 * owner record, which reads the VP register these threads do not set). */
static void lock(void)
{
	uint32_t free_ = 0;
	if (!__atomic_compare_exchange_n(&__weft_rtl.word, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		__weft_rtl_lock_slow();
}

static void unlock(void)
{
	uint32_t was = __atomic_exchange_n(&__weft_rtl.word, 0, __ATOMIC_SEQ_CST);
	if (was == 2 || __atomic_load_n(&__weft_rtl.starving, __ATOMIC_SEQ_CST))
		__weft_rtl_unlock_slow(was);
}

static volatile int inside, overlaps;
static long counter;                      /* plain: the lock alone guards it */
static volatile int finished;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t seed = 12345u + (uint32_t)me * 77u;
	for (int i = 0; i < ROUNDS; i++) {
		lock();
		if (__atomic_fetch_add(&inside, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
		counter++;
		seed = seed * 1103515245u + 12345u;
		if (((seed >> 16) & 127) == 0) {
			/* hold it a while: the others sleep on it */
			uint64_t until = now_ns() + 120000;
			while (now_ns() < until)
				__builtin_ia32_pause();
		}
		__atomic_fetch_sub(&inside, 1, __ATOMIC_RELAXED);
		unlock();
		/* the barger (thread 0) comes straight back; the others pause */
		if (me != 0)
			for (int k = 0; k < 50; k++)
				__builtin_ia32_pause();
	}
	__atomic_fetch_add(&finished, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int main(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP("one processor: a holder is never beside a waiter");
	char *stacks = malloc((size_t)THREADS * STACK);
	CHECK(stacks != NULL);
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	for (int i = 0; i < THREADS; i++)
		CHECK(clone(worker, stacks + (size_t)(i + 1) * STACK, flags, (void *)(intptr_t)i) > 0);
	for (uint64_t end = now_ns() + 60000000000ull; finished < THREADS;) {
		CHECK(now_ns() < end);
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	CHECK_EQ(overlaps, 0);
	CHECK_EQ(counter, (long)THREADS * ROUNDS);
	CHECK(__weft_rtl.handovers > 0);
	CHECK_EQ(__weft_rtl.word, 0u);
	CHECK(__weft_rtl.starving == NULL);
	printf("%ld increments, %llu hand-overs\n", counter, (unsigned long long)__weft_rtl.handovers);
	return 0;
}
