/*
 * pshared_errors_and_cancel — the error answers of process-shared objects
 * between UTs of this process and against another process, and
 * cancellation of a UT that sleeps in the kernel on one:
 *   EDEADLK  errorcheck relock, rwlock relock by its writer;
 *   EPERM    unlock by another UT (errorcheck, recursive, robust, rwlock
 *            write lock), unlock of an unlocked errorcheck mutex, a
 *            condition wait without the mutex;
 *   EBUSY    trylock of a mutex another UT or the NPTL peer holds,
 *            trywrlock of a read-held rwlock, destroy of a barrier with a
 *            round under way;
 *   ETIMEDOUT timedlock (peer and UT holders), cond timed/clock waits, sem
 *            timed wait, rwlock timed write lock;
 *   EINVAL   bad pshared values, a bad time when the caller must wait;
 *   ENOTSUP  a process-shared PRIO_INHERIT or PRIO_PROTECT mutex;
 * and: attributes read back; a recursive mutex counts per UT; a private
 * condition works with a process-shared mutex; pthread_cancel ends a UT
 * asleep on a process-shared condition (the mutex held again in its
 * cleanup handler) or semaphore.
 */
#include "pshared_test.h"

static pthread_mutex_t rec;     /* recursive, process-shared */

static void *other_ut_checks(void *arg)
{
	/* main holds em, rec (twice), rm, and the write lock */
	CHECK_EQ(pthread_mutex_unlock(&sh->em), EPERM);
	CHECK_EQ(pthread_mutex_trylock(&sh->em), EBUSY);
	CHECK_EQ(pthread_mutex_unlock(&rec), EPERM);
	CHECK_EQ(pthread_mutex_trylock(&rec), EBUSY);
	CHECK_EQ(pthread_mutex_unlock(&sh->rm), EPERM);
	CHECK_EQ(pthread_mutex_trylock(&sh->rm), EBUSY);
	struct timespec ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(pthread_mutex_timedlock(&sh->em, &ts), ETIMEDOUT);
	ts = test_time_in(CLOCK_MONOTONIC, 20 * 1000000);
	CHECK_EQ(pthread_mutex_clocklock(&sh->rm, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	CHECK_EQ(pthread_rwlock_unlock(&sh->rw), EPERM);
	CHECK_EQ(pthread_rwlock_tryrdlock(&sh->rw), EBUSY);
	ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(pthread_rwlock_timedrdlock(&sh->rw, &ts), ETIMEDOUT);
	return arg;
}

static volatile int cleanup_ran;

static void cleanup_mutex_held(void *m)
{
	/* POSIX: the mutex is held again when a cancelled wait's handlers run */
	CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
	cleanup_ran = 1;
	pthread_mutex_unlock(m);
}

static void *cond_waiter(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&sh->m));
	pthread_cleanup_push(cleanup_mutex_held, &sh->m);
	for (;;)
		pthread_cond_wait(&sh->c, &sh->m);
	pthread_cleanup_pop(0);
	return arg;
}

static void *barrier_waiter(void *arg)
{
	int r = pthread_barrier_wait(arg);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	return NULL;
}

static void *sem_waiter(void *arg)
{
	sem_wait(&sh->s2);
	return arg;
}

static void attrs(void)
{
	int v;
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_EQ(pthread_mutexattr_setpshared(&ma, 2), EINVAL);
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_mutexattr_getpshared(&ma, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	pthread_mutex_t m;
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT));
	CHECK_EQ(pthread_mutex_init(&m, &ma), ENOTSUP);
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT));
	CHECK_EQ(pthread_mutex_init(&m, &ma), ENOTSUP);
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_NONE));
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_mutexattr_getpshared(&ma, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
	CHECK_OK(pthread_mutex_init(&rec, &ma));
	CHECK_EQ(rec.__data.__kind, 128 | PTHREAD_MUTEX_RECURSIVE);

	pthread_condattr_t ca;
	CHECK_OK(pthread_condattr_init(&ca));
	CHECK_EQ(pthread_condattr_setpshared(&ca, -1), EINVAL);
	CHECK_OK(pthread_condattr_getpshared(&ca, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	pthread_rwlockattr_t ra;
	CHECK_OK(pthread_rwlockattr_init(&ra));
	CHECK_EQ(pthread_rwlockattr_setpshared(&ra, 7), EINVAL);
	CHECK_OK(pthread_rwlockattr_getpshared(&ra, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	pthread_barrierattr_t ba;
	CHECK_OK(pthread_barrierattr_init(&ba));
	CHECK_EQ(pthread_barrierattr_setpshared(&ba, 3), EINVAL);
	CHECK_OK(pthread_barrierattr_getpshared(&ba, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
	pthread_spinlock_t s;
	CHECK_EQ(pthread_spin_init(&s, 5), EINVAL);
	CHECK_OK(pthread_spin_init(&s, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_spin_trylock(&s));
	CHECK_EQ(pthread_spin_trylock(&s), EBUSY);
	CHECK_OK(pthread_spin_unlock(&s));
	CHECK_OK(pthread_spin_destroy(&s));
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	ps_init_all(2);
	attrs();

	/* between UTs of this process */
	CHECK_OK(pthread_mutex_lock(&sh->em));
	CHECK_EQ(pthread_mutex_lock(&sh->em), EDEADLK);
	CHECK_EQ(pthread_mutex_trylock(&sh->em), EBUSY);
	CHECK_OK(pthread_mutex_lock(&rec));
	CHECK_OK(pthread_mutex_lock(&rec));
	CHECK_EQ(rec.__data.__count, 2);
	CHECK_OK(pthread_mutex_lock(&sh->rm));
	CHECK_OK(pthread_rwlock_wrlock(&sh->rw));
	CHECK_EQ(pthread_rwlock_wrlock(&sh->rw), EDEADLK);
	CHECK_EQ(pthread_rwlock_rdlock(&sh->rw), EDEADLK);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, other_ut_checks, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_rwlock_unlock(&sh->rw));
	CHECK_OK(pthread_mutex_unlock(&sh->rm));
	CHECK_OK(pthread_mutex_unlock(&rec));
	CHECK_OK(pthread_mutex_unlock(&rec));
	CHECK_EQ(pthread_mutex_unlock(&rec), EPERM);
	CHECK_OK(pthread_mutex_unlock(&sh->em));
	CHECK_EQ(pthread_mutex_unlock(&sh->em), EPERM);

	/* against the NPTL peer, which holds m for 300 ms */
	pid_t p = peer_start("hold", 300, 1, 0);
	while (!__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST))
		ps_nap(1000000);
	CHECK_EQ(pthread_mutex_trylock(&sh->m), EBUSY);
	struct timespec bad = { 0, 1000000000 };
	CHECK_EQ(pthread_mutex_timedlock(&sh->m, &bad), EINVAL);
	struct timespec ts = test_time_in(CLOCK_REALTIME, 30 * 1000000);
	CHECK_EQ(pthread_mutex_timedlock(&sh->m, &ts), ETIMEDOUT);
	CHECK_OK(pthread_mutex_lock(&sh->m));           /* after the peer */
	peer_done(p);

	/* timed waits nobody ends */
	ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(pthread_cond_timedwait(&sh->c, &sh->m, &ts), ETIMEDOUT);
	ts = test_time_in(CLOCK_MONOTONIC, 20 * 1000000);
	CHECK_EQ(pthread_cond_timedwait(&sh->c2, &sh->m, &ts), ETIMEDOUT);   /* c2: monotonic */
	ts = test_time_in(CLOCK_MONOTONIC, 20 * 1000000);
	CHECK_EQ(pthread_cond_clockwait(&sh->c, &sh->m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	CHECK_EQ(pthread_cond_timedwait(&sh->c, &sh->m, &bad), EINVAL);
	CHECK_OK(pthread_mutex_unlock(&sh->m));
	CHECK_EQ(pthread_cond_wait(&sh->c, &sh->m), EPERM);
	ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(sem_timedwait(&sh->s, &ts), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(sem_timedwait(&sh->s, &bad), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_OK(pthread_rwlock_rdlock(&sh->rw));
	CHECK_EQ(pthread_rwlock_trywrlock(&sh->rw), EBUSY);
	ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(pthread_rwlock_timedwrlock(&sh->rw, &ts), ETIMEDOUT);
	CHECK_OK(pthread_rwlock_unlock(&sh->rw));
	CHECK_EQ(pthread_rwlock_unlock(&sh->rw), EPERM);

	/* a barrier with a round under way cannot be destroyed */
	pthread_barrier_t *b = &sh->b;
	CHECK_OK(pthread_create(&t, NULL, barrier_waiter, b));
	test_settle();
	ps_nap(10 * 1000000);
	CHECK_EQ(pthread_barrier_destroy(b), EBUSY);
	int r = pthread_barrier_wait(b);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_barrier_destroy(b));

	/* a private condition over a process-shared mutex */
	pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
	CHECK_OK(pthread_mutex_lock(&sh->m));
	ts = test_time_in(CLOCK_REALTIME, 10 * 1000000);
	CHECK_EQ(pthread_cond_timedwait(&pc, &sh->m, &ts), ETIMEDOUT);
	CHECK_EQ(pthread_mutex_trylock(&sh->em), 0);    /* still ours: m relocked */
	CHECK_OK(pthread_mutex_unlock(&sh->em));
	CHECK_OK(pthread_mutex_unlock(&sh->m));

	/* cancellation while asleep in the kernel */
	CHECK_OK(pthread_create(&t, NULL, cond_waiter, NULL));
	ps_nap(30 * 1000000);
	CHECK_OK(pthread_cancel(t));
	void *ret;
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(cleanup_ran);
	CHECK_OK(pthread_mutex_lock(&sh->m));           /* the handler let it go */
	CHECK_OK(pthread_mutex_unlock(&sh->m));
	CHECK_OK(pthread_create(&t, NULL, sem_waiter, NULL));
	ps_nap(30 * 1000000);
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(*(uint64_t *)&sh->s2, 0);              /* no waiter left counted */
	/* the condition still works after its waiter was cancelled */
	sh->items = 0;
	n = 200;
	x = 1;
	ps_both("consume", 1, 1, ps_produce, NULL);
	return 0;
}
