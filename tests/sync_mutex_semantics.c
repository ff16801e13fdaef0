/* Mutex behaviour beyond the bounded buffer: unlock hands ownership to the
 * first waiter (it does not let the waiter compete), waiters get the mutex
 * highest priority first and FIFO within a priority, recursive counting,
 * timed and clock locks, and every error code the mutex calls return. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* NULL the compiler cannot see through (glibc's headers declare these
 * nonnull); PASSES_NULL keeps UBSan's nonnull check out of the callers. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
/* Shared with the UTs, so C11 atomics (a volatile int read by one UT while
 * another writes it is a data race). */
static atomic_int order[16];
static atomic_int norder;

static void set_self_prio(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_setschedparam(pthread_self(), prio ? SCHED_FIFO : SCHED_OTHER, &sp));
}

static void *lock_record_unlock(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	order[norder++] = (int)(intptr_t)arg;
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static atomic_int owner_may_go;

/* lock_record_unlock, but holding m until main says go (on several VPs it
 * runs as soon as it owns m: main's trylock must still find it held) */
static void *lock_hold_record_unlock(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!owner_may_go)
		sched_yield();
	order[norder++] = (int)(intptr_t)arg;
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

/* Unlock with a waiter makes the waiter the owner at once: the unlocker,
 * still running, can no longer take the mutex. */
static void mutex_unlock_hands_off_to_waiter(void)
{
	norder = 0;
	owner_may_go = 0;
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t t = test_spawn_prio(0, lock_hold_record_unlock, 1);
	test_settle();                      /* t runs and parks on m */
	CHECK_EQ(norder, 0);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_EQ(pthread_mutex_trylock(&m), EBUSY);   /* t owns it (one VP: not yet run) */
	CHECK_EQ(norder, 0);
	owner_may_go = 1;
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(norder, 1);
	CHECK_OK(pthread_mutex_trylock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
}

/* Waiters of priorities 5, 9, 5, 9, 1 parked in that order get the
 * mutex as 9, 9, 5, 5, 1, FIFO within each priority. */
static void mutex_waiters_by_priority_then_fifo(void)
{
	const int prio[] = { 5, 9, 5, 9, 1 };
	const int want[] = { 2, 4, 1, 3, 5 };
	pthread_t t[5];
	norder = 0;
	set_self_prio(50);
	CHECK_OK(pthread_mutex_lock(&m));
	for (int i = 0; i < 5; i++) {
		t[i] = test_spawn_prio(prio[i], lock_record_unlock, i + 1);
		/* several VPs: each runs at once on another and parks before
		 * the next is made, so they arrive in the order made (one VP:
		 * they wait for main to drop below them; this returns) */
		test_settle();
	}
	set_self_prio(0);                   /* now every waiter runs and parks */
	test_settle();                      /* (several VPs: until all have parked) */
	CHECK_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < 5; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(norder, 5);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(order[i], want[i]);
}

static void mutex_errorcheck_relock_is_edeadlk(void)
{
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	CHECK_EQ(pthread_mutex_unlock(&e), EPERM);        /* not locked */
	CHECK_OK(pthread_mutex_lock(&e));
	CHECK_EQ(pthread_mutex_lock(&e), EDEADLK);
	CHECK_EQ(pthread_mutex_trylock(&e), EBUSY);
	CHECK_EQ(pthread_mutex_destroy(&e), EBUSY);
	CHECK_OK(pthread_mutex_unlock(&e));               /* still intact */
	CHECK_EQ(pthread_mutex_unlock(&e), EPERM);
	CHECK_OK(pthread_mutex_destroy(&e));
}

static pthread_mutex_t shared_m;
static void *unlock_foreign(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_unlock(&shared_m);
}

static void mutex_unlock_by_non_owner_is_eperm(int type)
{
	pthread_mutexattr_t a;
	void *r;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutex_init(&shared_m, &a));
	CHECK_OK(pthread_mutex_lock(&shared_m));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, unlock_foreign, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((intptr_t)r, EPERM);
	CHECK_OK(pthread_mutex_unlock(&shared_m));
	CHECK_OK(pthread_mutex_destroy(&shared_m));
}

static void mutex_recursive_counts(void)
{
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	for (int i = 0; i < 100; i++)
		CHECK_OK(pthread_mutex_lock(&r));
	CHECK_OK(pthread_mutex_trylock(&r));
	for (int i = 0; i < 101; i++)
		CHECK_OK(pthread_mutex_unlock(&r));
	CHECK_EQ(pthread_mutex_unlock(&r), EPERM);
	CHECK_OK(pthread_mutex_destroy(&r));
}

/* The recursion count is a 32-bit word (glibc's __spins and __elision,
 * offset 20): start it one short of the limit rather than lock 4e9 times. */
static void mutex_recursive_overflow_is_eagain(void)
{
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	CHECK_OK(pthread_mutex_lock(&r));
	uint32_t *count = (uint32_t *)((char *)&r + 20);
	*count = UINT32_MAX - 1;
	CHECK_OK(pthread_mutex_lock(&r));
	CHECK_EQ(pthread_mutex_lock(&r), EAGAIN);
	CHECK_EQ(pthread_mutex_trylock(&r), EAGAIN);
	*count = 0;
	CHECK_OK(pthread_mutex_unlock(&r));
	CHECK_OK(pthread_mutex_destroy(&r));
}

static void *hold_for_a_while(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	struct timespec d = { 0, 50 * 1000 * 1000 };
	nanosleep(&d, NULL);
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

PASSES_NULL static void mutex_timed_lock(void)
{
	/* held by this UT: a NORMAL mutex waits out the deadline */
	CHECK_OK(pthread_mutex_lock(&m));
	for (int c = 0; c < 2; c++) {
		clockid_t clk = c ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		int64_t t0 = test_now_ns();           /* first: see sync_barrier_sem.c */
		struct timespec ts = test_time_in(clk, 20 * 1000 * 1000);
		if (c)
			CHECK_EQ(pthread_mutex_clocklock(&m, clk, &ts), ETIMEDOUT);
		else
			CHECK_EQ(pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
		int64_t dt = test_now_ns() - t0;
		CHECK(dt >= 19 * 1000 * 1000);
		CHECK(dt < 200 * 1000 * 1000);
	}
	struct timespec bad = { 0, 1000000000 };
	CHECK_EQ(pthread_mutex_timedlock(&m, &bad), EINVAL);
	bad.tv_nsec = -1;
	CHECK_EQ(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
	CHECK_EQ(pthread_mutex_timedlock(&m, NUL(const struct timespec *)), EINVAL);
	struct timespec ok = test_time_in(CLOCK_MONOTONIC, 1000);
	CHECK_EQ(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ok), EINVAL);
	CHECK_OK(pthread_mutex_unlock(&m));
	/* free: a malformed time need not be looked at */
	CHECK_OK(pthread_mutex_timedlock(&m, &bad));
	CHECK_OK(pthread_mutex_unlock(&m));
	/* held by another UT that lets go before the deadline */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, hold_for_a_while, NULL));
	test_settle();
	struct timespec ts = test_time_in(CLOCK_MONOTONIC, 2000 * 1000 * 1000);
	CHECK_OK(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(t, NULL));
}

PASSES_NULL static void mutex_bad_input(void)
{
	pthread_mutexattr_t a;
	int v;
	CHECK_EQ(pthread_mutex_init(NUL(pthread_mutex_t *), NULL), EINVAL);
	CHECK_EQ(pthread_mutex_lock(NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_mutex_trylock(NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_mutex_unlock(NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_mutex_destroy(NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_mutex_consistent(NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_mutexattr_init(NUL(pthread_mutexattr_t *)), EINVAL);
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_EQ(pthread_mutexattr_settype(&a, 4), EINVAL);
	CHECK_EQ(pthread_mutexattr_settype(&a, -1), EINVAL);
	CHECK_EQ(pthread_mutexattr_setrobust(&a, 7), EINVAL);
	CHECK_EQ(pthread_mutexattr_setpshared(&a, 5), EINVAL);
	CHECK_OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	CHECK_OK(pthread_mutexattr_getprotocol(&a, &v));
	CHECK_EQ(v, PTHREAD_PRIO_INHERIT);
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT));
	CHECK_OK(pthread_mutexattr_getprotocol(&a, &v));
	CHECK_EQ(v, PTHREAD_PRIO_PROTECT);
	CHECK_EQ(pthread_mutexattr_setprotocol(&a, 99), EINVAL);
	CHECK_OK(pthread_mutexattr_getprotocol(&a, &v));
	CHECK_EQ(v, PTHREAD_PRIO_PROTECT);
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_NONE));
	CHECK_OK(pthread_mutexattr_getprotocol(&a, &v));
	CHECK_EQ(v, PTHREAD_PRIO_NONE);
	CHECK_EQ(pthread_mutexattr_setprioceiling(&a, 0), EINVAL);
	CHECK_OK(pthread_mutexattr_setprioceiling(&a, 42));
	CHECK_OK(pthread_mutexattr_getprioceiling(&a, &v));
	CHECK_EQ(v, 42);
	CHECK_OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutexattr_gettype(&a, &v));
	CHECK_EQ(v, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_OK(pthread_mutexattr_getpshared(&a, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	CHECK_EQ(pthread_mutexattr_gettype(&a, NUL(int *)), EINVAL);
	pthread_mutex_t x;
	CHECK_OK(pthread_mutex_init(&x, &a));
	CHECK_OK(pthread_mutex_lock(&x));
	CHECK_EQ(pthread_mutex_lock(&x), EDEADLK);
	CHECK_OK(pthread_mutex_unlock(&x));
	CHECK_EQ(pthread_mutex_consistent(&x), EINVAL);   /* not robust */
	CHECK_EQ(pthread_mutex_getprioceiling(&x, &v), EINVAL);
	CHECK_OK(pthread_mutex_destroy(&x));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

int main(void)
{
	mutex_unlock_hands_off_to_waiter();
	mutex_waiters_by_priority_then_fifo();
	mutex_errorcheck_relock_is_edeadlk();
	mutex_unlock_by_non_owner_is_eperm(PTHREAD_MUTEX_ERRORCHECK);
	mutex_unlock_by_non_owner_is_eperm(PTHREAD_MUTEX_RECURSIVE);
	mutex_recursive_counts();
	mutex_recursive_overflow_is_eagain();
	mutex_timed_lock();
	mutex_bad_input();
	return 0;
}
