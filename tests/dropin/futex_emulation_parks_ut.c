/*
 * futex_emulation_parks_ut — syscall(SYS_futex, ...) made by a UT parks only
 * that UT: wait/wake, EAGAIN on a changed word, relative and absolute
 * timeouts, bitsets, wake counts, requeue, shared futexes; other system
 * calls go to the kernel unchanged.
 */
#include "check.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts,
		  uint32_t *addr2, uint32_t val3)
{
	return syscall(SYS_futex, addr, op, val, ts, addr2, val3);
}

static uint32_t word, word2;
static int woken;

/* The count of woken waiters (or their bits), read as the wakers wrote it. */
static int woken_now(void) { return __atomic_load_n(&woken, __ATOMIC_ACQUIRE); }

/* Wait (bounded by 5 s, not timed: the machine may be loaded) until the
 * woken waiters have run; on several VPs they run elsewhere meanwhile. */
static void await_woken(int want)
{
	for (int i = 0; i < 5000 && woken_now() != want; i++)
		usleep(1000);
}

static void *waiter(void *arg)
{
	int op = (int)(intptr_t)arg;
	long r = futex(&word, op, 0, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	CHECK_EQ(r, 0);
	__atomic_fetch_add(&woken, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Every waiter runs and parks.  A shared-futex waiter's word is re-read 1,
 * 3, 7, 15, 31 ms after it parked; it stays on its queue meanwhile, so the
 * polls that pass before the wake must not cost a wake (20 ms: four of them;
 * the shared case of test_wait_wake_counts). */
static void spawn(pthread_t *t, int n, int op)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, (void *)(intptr_t)op));
	test_settle();                /* every one parked (several VPs: elsewhere too) */
	usleep((op & FUTEX_PRIVATE_FLAG) ? 1000 : 20000);
}

static void join(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

/* A shared-futex waiter returns when its poll finds the word changed (a
 * spurious wake-up, see test_shared_waiter_sees_change): to count wakes exactly,
 * the shared case leaves the word as the waiters saw it; the private case
 * changes it, as a real caller does before waking. */
static void test_wait_wake_counts(int wait_op, int wake_op)
{
	pthread_t t[3];
	word = 0;
	woken = 0;
	spawn(t, 3, wait_op);
	CHECK_EQ(woken_now(), 0);
	if (wait_op & FUTEX_PRIVATE_FLAG)
		word = 1;
	CHECK_EQ(futex(&word, wake_op, 2, NULL, NULL, FUTEX_BITSET_MATCH_ANY), 2);
	await_woken(2);
	usleep(1000);                 /* and no third */
	CHECK_EQ(woken_now(), 2);
	CHECK_EQ(futex(&word, wake_op, 10, NULL, NULL, FUTEX_BITSET_MATCH_ANY), 1);
	join(t, 3);
	CHECK_EQ(woken, 3);
	CHECK_EQ(futex(&word, wake_op, 1, NULL, NULL, FUTEX_BITSET_MATCH_ANY), 0);
}

/* A shared waiter cannot see a wake made by another process, so it re-reads
 * the word (1 ms to 64 ms apart) and returns 0 once it changed, with no
 * FUTEX_WAKE at all.  Bounded at 10 s: the machine may be loaded. */
static void test_shared_waiter_sees_change(void)
{
	pthread_t t;
	word = 0;
	woken = 0;
	spawn(&t, 1, FUTEX_WAIT);
	CHECK_EQ(woken_now(), 0);
	__atomic_store_n(&word, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 10000 && woken_now() != 1; i++)
		usleep(1000);
	CHECK_EQ(woken_now(), 1);
	CHECK_OK(pthread_join(t, NULL));
}

/* A wake that comes as a shared waiter's word is re-read (the word
 * unchanged) still finds it: delays from 0 to 35 ms cross the re-reads at
 * 1, 3, 7, 15 and 31 ms.  Each wake counts exactly one, and ends its wait. */
static void test_shared_wake_at_any_moment(void)
{
	for (int i = 0; i < 50; i++) {
		pthread_t t;
		word = 0;
		woken = 0;
		CHECK_OK(pthread_create(&t, NULL, waiter, (void *)(intptr_t)FUTEX_WAIT));
		test_settle();
		usleep((useconds_t)(i * 700));
		CHECK_EQ(futex(&word, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
		CHECK_OK(pthread_join(t, NULL));
		CHECK_EQ(woken, 1);
	}
	/* and a shared wait's own timeout ends it, polls or not */
	struct timespec rel = { 0, 40 * 1000 * 1000 };
	int64_t t0 = test_now_ns();
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &rel, NULL, 0), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK(test_now_ns() - t0 >= 40 * 1000 * 1000);
}

static void test_changed_word_is_eagain(void)
{
	word = 5;
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT_PRIVATE, 4, NULL, NULL, 0), -1);
	CHECK_EQ(errno, EAGAIN);
}

static void test_timeouts(void)
{
	struct timespec rel = { 0, 20 * 1000 * 1000 };
	word = 0;
	int64_t t0 = test_now_ns();
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT_PRIVATE, 0, &rel, NULL, 0), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK(test_now_ns() - t0 >= 20 * 1000 * 1000);

	struct timespec abs;
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 10 * 1000 * 1000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 0, &abs, NULL, FUTEX_BITSET_MATCH_ANY), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	CHECK(now.tv_sec > abs.tv_sec || (now.tv_sec == abs.tv_sec && now.tv_nsec >= abs.tv_nsec));

	struct timespec bad = { 0, 1000000000 };
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT_PRIVATE, 0, &bad, NULL, 0), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, 0), -1);
	CHECK_EQ(errno, EINVAL);
}

static void *bit_waiter(void *arg)
{
	uint32_t bits = (uint32_t)(uintptr_t)arg;
	CHECK_EQ(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, bits), 0);
	__atomic_fetch_or(&woken, (int)bits, __ATOMIC_RELEASE);
	return NULL;
}

static void test_bitsets(void)
{
	pthread_t a, b;
	word = 0;
	woken = 0;
	CHECK_OK(pthread_create(&a, NULL, bit_waiter, (void *)1));
	CHECK_OK(pthread_create(&b, NULL, bit_waiter, (void *)2));
	test_settle();
	CHECK_EQ(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 2), 1);
	CHECK_OK(pthread_join(b, NULL));
	CHECK_EQ(woken, 2);
	CHECK_EQ(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 1);
	CHECK_OK(pthread_join(a, NULL));
	CHECK_EQ(woken, 3);
}

static void test_requeue(void)
{
	pthread_t t[3];
	word = 0;
	woken = 0;
	spawn(t, 3, FUTEX_WAIT_PRIVATE);
	errno = 0;
	CHECK_EQ(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2, &word2, 7), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2, &word2, 0), 3);
	CHECK_EQ(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 0);
	CHECK_EQ(futex(&word2, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 2);
	join(t, 3);
	CHECK_EQ(woken, 3);
}

static void test_other_syscalls_reach_kernel(void)
{
	CHECK_EQ(syscall(SYS_getpid), getpid());
	errno = 0;
	CHECK_EQ(syscall(SYS_close, -1), -1);
	CHECK_EQ(errno, EBADF);
}

int main(void)
{
	test_wait_wake_counts(FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE);
	test_wait_wake_counts(FUTEX_WAIT_BITSET_PRIVATE, FUTEX_WAKE_BITSET_PRIVATE);
	test_wait_wake_counts(FUTEX_WAIT, FUTEX_WAKE);   /* shared: std::future's */
	test_shared_waiter_sees_change();
	test_shared_wake_at_any_moment();
	test_changed_word_is_eagain();
	test_timeouts();
	test_bitsets();
	test_requeue();
	test_other_syscalls_reach_kernel();
	return 0;
}
