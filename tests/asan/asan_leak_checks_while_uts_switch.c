/*
 * asan_leak_checks_while_uts_switch — LeakSanitizer's checks run while
 * other UTs switch, are made and end, on the other VP (WEFT_VPS=2) or the
 * same one, and every check finishes and finds no leak.
 *
 * Two ways this failed (found as a hang of asan_leaks_kept_by_uts under
 * load, one run in about 100, its check at exit):
 *   - a deadlock: LeakSanitizer holds its own lock through a check, calls
 *     sched_yield while its tracer thread stops the world, and open, read
 *     and close while it symbolises a leak's stack; a VP that held the
 *     runtime lock waited for LeakSanitizer's lock (naming a UT's fake
 *     stack a root at its first switch out, lsan_roots.c), and the
 *     checker's call waited for the runtime lock;
 *   - with one VP, the check's own sched_yield switched to another UT,
 *     which waited for good for a lock the check held (LeakSanitizer's, to
 *     name its fake stack a root; its allocator's, in malloc).
 * Each check must also find no leak: a UT's fake frames are named a root
 * before ASan is told the UT leaves (runtime/sched.c, san_leave), so a
 * check that stops the world mid-switch still scans them.
 *
 * CHURNERS UTs make, one after another, UTs that each take a block, keep
 * the only pointer to it in a local (a fake frame: detect_stack_use_after_
 * return=1), yield or park so that they switch out for the first time,
 * check and free the block, set a key (its storage: a heap block of
 * Weft's), and end; some with a 1 MiB stack (a mapping of their own, named
 * and unnamed as a root).  Meanwhile the checker UT runs CHECKS recoverable
 * leak checks; each must return 0 (nothing leaked).  Then it hides the
 * only pointer to a block of its own, and a check must report it (and
 * symbolise its stack); the block is freed after.  The churners count
 * their rounds, and each check must see them go on (the world restarted).
 * A hang is the ctest timeout's to catch.  The release suite also builds
 * it as a plain pthread program (no -lweft) and runs it under weftrun,
 * which must preload ASan's runtime ahead of Weft (WEFT_TEST_EXPECT_WEFT:
 * Weft's calls must be there).
 */
#include "check.h"

#include <dlfcn.h>
#include <sanitizer/lsan_interface.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <weft.h>

#define CHURNERS 4
#define CHECKS 40
#define ATTEMPTS 8

static atomic_int stop;
static atomic_long rounds;
static pthread_key_t key;
static int key_value;

static __attribute__((noinline)) void *hold_over_a_switch(long n)
{
	/* the only pointer to the block is this local, on the UT's fake stack */
	char *volatile block = malloc(64);
	CHECK(block != NULL);
	block[0] = (char)n;
	if (n & 1)
		sched_yield();
	else
		usleep(50);
	CHECK(block[0] == (char)n);
	free(block);
	CHECK_OK(pthread_setspecific(key, &key_value));
	return NULL;
}

static void *short_lived(void *arg)
{
	return hold_over_a_switch((long)arg);
}

static void *churner(void *arg)
{
	pthread_attr_t big;
	CHECK_OK(pthread_attr_init(&big));
	CHECK_OK(pthread_attr_setstacksize(&big, 1 << 20));
	long n = (long)arg;
	while (!atomic_load(&stop)) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, n % 8 == 0 ? &big : NULL, short_lived, (void *)n));
		CHECK_OK(pthread_join(t, NULL));
		n++;
		atomic_fetch_add(&rounds, 1);
	}
	CHECK_OK(pthread_attr_destroy(&big));
	return NULL;
}

/* A block whose only pointer is hidden (masked), so that a check reports
 * it as a leak; unmasked and freed before the check at exit. */
#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static volatile uintptr_t hidden;

static __attribute__((noinline)) void hide_block(void)
{
	char *volatile p = malloc(33);
	CHECK(p != NULL);
	hidden = (uintptr_t)p ^ MASK;
	p = NULL;
}

/* Clears the stack below the caller's frame, where malloc's own frames
 * left copies of the pointer (a UT's whole stack is LeakSanitizer's root,
 * lsan_roots.c).  Not instrumented: the buffer is on the real stack, not
 * a fake one. */
static __attribute__((noinline, no_sanitize_address)) void scrub_stack(void)
{
	volatile char buf[16384];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = 0;
}

static void *checker(void *arg)
{
	(void)arg;
	for (int i = 0; i < CHECKS; i++) {
		long before = atomic_load(&rounds);
		CHECK(__lsan_do_recoverable_leak_check() == 0);
		/* the world went on after the check */
		while (atomic_load(&rounds) < before + 4)
			sched_yield();
	}
	/* a check that reports, beside the churn: it symbolises the block's
	 * stack (LeakSanitizer opens and reads the program's file).  A copy
	 * of the pointer left in a register or a frame hides the block now
	 * and then (two VPs: about one check in ten), so up to ATTEMPTS
	 * blocks are hidden until one is reported */
	bool reported = false;
	for (int i = 0; i < ATTEMPTS && !reported; i++) {
		long before = atomic_load(&rounds);
		hide_block();
		scrub_stack();
		reported = __lsan_do_recoverable_leak_check() != 0;
		free((void *)(hidden ^ MASK));
		while (atomic_load(&rounds) < before + 4)
			sched_yield();
	}
	CHECK(reported);
	return NULL;
}

int main(void)
{
	/* built without -lweft and run under weftrun (tests/asan/CMakeLists.txt):
	 * the threads must be Weft's */
	if (getenv("WEFT_TEST_EXPECT_WEFT"))
		CHECK(dlsym(RTLD_DEFAULT, "weft_stats_get") != NULL);
	CHECK_OK(pthread_key_create(&key, NULL));
	pthread_t c[CHURNERS], k;
	for (long i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_create(&c[i], NULL, churner, (void *)(i * 1000)));
	CHECK_OK(pthread_create(&k, NULL, checker, NULL));
	CHECK_OK(pthread_join(k, NULL));
	atomic_store(&stop, 1);
	for (int i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	printf("ok: %d leak checks, and one that reported, beside %ld UTs made, switched and ended\n", CHECKS,
	       atomic_load(&rounds));
	return 0;
}
