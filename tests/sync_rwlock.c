/* Reader-writer locks: the invariant (never a writer with readers, never
 * two writers) under random yields; writer preference with the
 * WRITER_NONRECURSIVE kind; recursive read locks under the default kind;
 * a writer relocking is EDEADLK; try/timed/clock variants; error codes. */
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

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
/* Updated with atomic read-modify-writes: readers update readers_in side by
 * side, and a time slice may end between a plain load and store. */
static int readers_in, writers_in;
#define INC(x) __atomic_fetch_add(&(x), 1, __ATOMIC_SEQ_CST)
#define DEC(x) __atomic_fetch_sub(&(x), 1, __ATOMIC_SEQ_CST)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
/* One generator for every worker, stepped atomically: the workers draw
 * from it side by side (readers together, and on several VPs at once). */
static _Atomic unsigned seed = 12345;

static unsigned rnd(void)
{
	unsigned s = atomic_load(&seed), next;
	do
		next = s * 1103515245 + 12345;
	while (!atomic_compare_exchange_weak(&seed, &s, next));
	return next >> 16;
}

static void maybe_yield(void)
{
	if (rnd() & 1)
		sched_yield();
}

static void *mixed_worker(void *arg)
{
	long iters = (long)(intptr_t)arg;
	for (long i = 0; i < iters; i++) {
		if (rnd() % 4 == 0) {
			CHECK_OK(pthread_rwlock_wrlock(&rw));
			CHECK_EQ(GET(writers_in), 0);
			CHECK_EQ(GET(readers_in), 0);
			INC(writers_in);
			maybe_yield();
			CHECK_EQ(GET(readers_in), 0);
			DEC(writers_in);
		} else {
			CHECK_OK(pthread_rwlock_rdlock(&rw));
			CHECK_EQ(GET(writers_in), 0);
			INC(readers_in);
			maybe_yield();
			if (rnd() & 1) {          /* recursive read lock */
				CHECK_OK(pthread_rwlock_rdlock(&rw));
				maybe_yield();
				CHECK_OK(pthread_rwlock_unlock(&rw));
			}
			CHECK_EQ(GET(writers_in), 0);
			DEC(readers_in);
		}
		CHECK_OK(pthread_rwlock_unlock(&rw));
		maybe_yield();
	}
	return NULL;
}

static void rwlock_invariant_under_random_yields(void)
{
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		CHECK_OK(pthread_create(&t[i], NULL, mixed_worker, (void *)(intptr_t)(test_iters(20000))));
	for (int i = 0; i < 16; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_rwlock_destroy(&rw));
}

static atomic_int order[8], norder;   /* main reads them while a UT may write */
static pthread_rwlock_t wp = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static void *read_and_record(void *arg)
{
	pthread_rwlock_t *l = arg;
	CHECK_OK(pthread_rwlock_rdlock(l));
	order[norder++] = 'r';
	CHECK_OK(pthread_rwlock_unlock(l));
	return NULL;
}

static void *write_and_record(void *arg)
{
	pthread_rwlock_t *l = arg;
	CHECK_OK(pthread_rwlock_wrlock(l));
	order[norder++] = 'w';
	CHECK_OK(pthread_rwlock_unlock(l));
	return NULL;
}

/* Main holds a read lock; a writer queues; then a reader arrives.  With
 * writer preference the reader waits behind the writer; with the default
 * (reader preference) it gets in at once, beside main. */
static void rwlock_preference(pthread_rwlock_t *l, int want_first)
{
	pthread_t w, r;
	norder = 0;
	CHECK_OK(pthread_rwlock_rdlock(l));
	uint64_t parks = test_stats().parks;
	CHECK_OK(pthread_create(&w, NULL, write_and_record, l));
	test_await_park(parks);                /* (several VPs: it may start late) */
	test_settle();                         /* writer parks */
	CHECK_OK(pthread_create(&r, NULL, read_and_record, l));
	test_settle();
	if (want_first == 'w') {
		CHECK_EQ(norder, 0);           /* the reader is held back */
		CHECK_EQ(pthread_rwlock_tryrdlock(l), EBUSY);
	} else {
		test_await_on_many_vps(&norder, 1);   /* (several VPs: it may start late) */
		CHECK_EQ(norder, 1);
		CHECK_EQ(order[0], 'r');
	}
	CHECK_OK(pthread_rwlock_unlock(l));
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_join(r, NULL));
	CHECK_EQ(norder, 2);
	CHECK_EQ(order[0], want_first);
}

static void rwlock_kinds(void)
{
	pthread_rwlockattr_t a;
	pthread_rwlock_t l;
	int kind;
	rwlock_preference(&wp, 'w');
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_getkind_np(&a, &kind));
	CHECK_EQ(kind, PTHREAD_RWLOCK_PREFER_READER_NP);
	CHECK_OK(pthread_rwlock_init(&l, &a));
	rwlock_preference(&l, 'r');
	CHECK_OK(pthread_rwlock_destroy(&l));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
	CHECK_OK(pthread_rwlock_init(&l, &a));
	rwlock_preference(&l, 'w');
	CHECK_OK(pthread_rwlock_destroy(&l));
	CHECK_EQ(pthread_rwlockattr_setkind_np(&a, 3), EINVAL);
	CHECK_EQ(pthread_rwlockattr_setpshared(&a, 9), EINVAL);
	CHECK_OK(pthread_rwlockattr_destroy(&a));
}

static void *try_timed_read(void *arg)
{
	int64_t t0 = test_now_ns();           /* first: see sync_barrier_sem.c */
	struct timespec ts = test_time_in(CLOCK_MONOTONIC, 10 * 1000 * 1000);
	int r = pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &ts);
	CHECK(test_now_ns() - t0 >= 9 * 1000 * 1000);
	return (void *)(intptr_t)r;
}

static void *destroy_from_other(void *arg)
{
	return (void *)(intptr_t)pthread_rwlock_destroy(arg);
}

PASSES_NULL static void rwlock_errors_and_timeouts(void)
{
	void *r;
	pthread_t t;
	struct timespec bad = { 0, -5 };
	CHECK_EQ(pthread_rwlock_unlock(&rw), EPERM);               /* not held */
	CHECK_OK(pthread_rwlock_wrlock(&rw));
	CHECK_EQ(pthread_rwlock_wrlock(&rw), EDEADLK);
	CHECK_EQ(pthread_rwlock_rdlock(&rw), EDEADLK);
	CHECK_EQ(pthread_rwlock_trywrlock(&rw), EBUSY);
	/* held by another UT: EBUSY (the holder itself may destroy it, as
	 * with glibc: tst-rwlock6 destroys a lock it still write-holds) */
	CHECK_OK(pthread_create(&t, NULL, destroy_from_other, &rw));
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((intptr_t)r, EBUSY);
	CHECK_OK(pthread_create(&t, NULL, try_timed_read, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((intptr_t)r, ETIMEDOUT);
	CHECK_OK(pthread_rwlock_unlock(&rw));                     /* intact */
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	struct timespec ts = test_time_in(CLOCK_REALTIME, 5 * 1000 * 1000);
	CHECK_EQ(pthread_rwlock_timedwrlock(&rw, &ts), ETIMEDOUT); /* own read lock */
	CHECK_EQ(pthread_rwlock_timedwrlock(&rw, &bad), EINVAL);
	CHECK_EQ(pthread_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_EQ(pthread_rwlock_timedwrlock(&rw, NUL(const struct timespec *)), EINVAL);
	CHECK_OK(pthread_rwlock_tryrdlock(&rw));
	CHECK_OK(pthread_rwlock_timedrdlock(&rw, &bad));   /* free for readers: time unread */
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_EQ(pthread_rwlock_unlock(&rw), EPERM);
	CHECK_OK(pthread_rwlock_trywrlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_EQ(pthread_rwlock_rdlock(NUL(pthread_rwlock_t *)), EINVAL);
	CHECK_EQ(pthread_rwlock_init(NUL(pthread_rwlock_t *), NULL), EINVAL);
	CHECK_OK(pthread_rwlock_destroy(&rw));
}

int main(void)
{
	rwlock_invariant_under_random_yields();
	rwlock_kinds();
	rwlock_errors_and_timeouts();
	return 0;
}
