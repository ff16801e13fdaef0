/* Robust mutexes, both outcomes: an owner that exits holding one makes the
 * next locker (a parked waiter, or a later caller) get EOWNERDEAD with the
 * mutex; pthread_mutex_consistent repairs it, unlocking without it makes it
 * ENOTRECOVERABLE for everyone.  Then every static initialiser, used with no
 * init call by several UTs at once. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

static pthread_mutex_t rm;
static atomic_int owner_has_it;

static void *lock_and_exit(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&rm));
	owner_has_it = 1;
	if (arg)
		test_settle();         /* let the waiter park on rm */
	return NULL;               /* ends holding rm */
}

static void *lock_expect(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_lock(&rm);
}

static void init_robust(int type)
{
	pthread_mutexattr_t a;
	int v;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	CHECK_OK(pthread_mutexattr_getrobust(&a, &v));
	CHECK_EQ(v, PTHREAD_MUTEX_ROBUST);
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutex_init(&rm, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

/* Owner dies with nobody waiting: the next locker gets EOWNERDEAD, makes
 * it consistent, and the mutex works as before. */
static void robust_owner_died_then_consistent(int type)
{
	pthread_t t;
	init_robust(type);
	CHECK_OK(pthread_create(&t, NULL, lock_and_exit, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(pthread_mutex_lock(&rm), EOWNERDEAD);
	CHECK_OK(pthread_mutex_consistent(&rm));
	CHECK_EQ(pthread_mutex_consistent(&rm), EINVAL);   /* already consistent */
	CHECK_OK(pthread_mutex_unlock(&rm));
	CHECK_OK(pthread_mutex_lock(&rm));
	CHECK_OK(pthread_mutex_unlock(&rm));
	CHECK_OK(pthread_mutex_destroy(&rm));
}

/* Owner dies while a UT waits: the waiter is handed the mutex with
 * EOWNERDEAD; it unlocks without repairing it, so the mutex is not
 * recoverable: waiters and later lockers all get ENOTRECOVERABLE. */
static void robust_waiter_gets_eownerdead_then_notrecoverable(void)
{
	pthread_t owner, waiter, late;
	void *r;
	init_robust(PTHREAD_MUTEX_NORMAL);
	owner_has_it = 0;
	CHECK_OK(pthread_create(&owner, NULL, lock_and_exit, (void *)1));
	while (!owner_has_it)              /* whatever the schedule, it locks first */
		sched_yield();
	CHECK_OK(pthread_create(&waiter, NULL, lock_expect, NULL));
	CHECK_OK(pthread_join(owner, NULL));
	CHECK_OK(pthread_join(waiter, &r));
	CHECK_EQ((intptr_t)r, EOWNERDEAD);
	/* the waiter itself ended holding it: still inconsistent, next gets it */
	CHECK_EQ(pthread_mutex_trylock(&rm), EOWNERDEAD);
	CHECK_OK(pthread_create(&late, NULL, lock_expect, NULL));
	test_settle();                                   /* late parks */
	CHECK_OK(pthread_mutex_unlock(&rm));             /* not made consistent */
	CHECK_OK(pthread_join(late, &r));
	CHECK_EQ((intptr_t)r, ENOTRECOVERABLE);
	CHECK_EQ(pthread_mutex_lock(&rm), ENOTRECOVERABLE);
	CHECK_EQ(pthread_mutex_trylock(&rm), ENOTRECOVERABLE);
	struct timespec ts = { 0, 0 };
	CHECK_EQ(pthread_mutex_timedlock(&rm, &ts), ENOTRECOVERABLE);
	CHECK_OK(pthread_mutex_destroy(&rm));
}

/* A robust mutex held by someone else: unlock is EPERM, as for any robust
 * mutex, and consistent by a non-owner is EINVAL. */
static void *foreign_unlock(void *arg)
{
	CHECK_EQ(pthread_mutex_consistent(&rm), EINVAL);
	return (void *)(intptr_t)pthread_mutex_unlock(&rm);
}

static void robust_non_owner(void)
{
	pthread_t t;
	void *r;
	init_robust(PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_mutex_lock(&rm));
	CHECK_OK(pthread_create(&t, NULL, foreign_unlock, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((intptr_t)r, EPERM);
	CHECK_OK(pthread_mutex_unlock(&rm));
	CHECK_OK(pthread_mutex_destroy(&rm));
}

/* Several robust mutexes held at exit, released in any order before. */
static pthread_mutex_t many[4];
static void *lock_many_release_some(void *arg)
{
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_mutex_lock(&many[i]));
	CHECK_OK(pthread_mutex_unlock(&many[1]));
	CHECK_OK(pthread_mutex_unlock(&many[2]));
	return NULL;
}

static void robust_list_tracks_each_mutex(void)
{
	pthread_mutexattr_t a;
	pthread_t t;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_mutex_init(&many[i], &a));
	CHECK_OK(pthread_create(&t, NULL, lock_many_release_some, NULL));
	CHECK_OK(pthread_join(t, NULL));
	const int want[] = { EOWNERDEAD, 0, 0, EOWNERDEAD };
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(pthread_mutex_lock(&many[i]), want[i]);
		if (want[i])
			CHECK_OK(pthread_mutex_consistent(&many[i]));
		CHECK_OK(pthread_mutex_unlock(&many[i]));
		CHECK_OK(pthread_mutex_destroy(&many[i]));
	}
}

/* ---- static initialisers ---- */
static pthread_mutex_t s_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_err = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adapt = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t s_cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t s_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t s_rwnr = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static atomic_int counter[4], rw_counter[2], in_cs[4];
static atomic_int ready_n;
#define NS 8
#define ITER 2000

static void critical(pthread_mutex_t *m, int i)
{
	CHECK_OK(pthread_mutex_lock(m));
	CHECK_EQ(in_cs[i], 0);
	in_cs[i] = 1;
	int v = counter[i];
	test_yield_while_ready(1000);   /* invite the others in (they must not enter) */
	counter[i] = v + 1;
	in_cs[i] = 0;
	CHECK_OK(pthread_mutex_unlock(m));
}

static void *static_user(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&s_default));
	ready_n++;
	CHECK_OK(pthread_cond_broadcast(&s_cond));
	while (ready_n < NS)
		CHECK_OK(pthread_cond_wait(&s_cond, &s_default));
	CHECK_OK(pthread_mutex_unlock(&s_default));
	for (int k = 0; k < test_iters(ITER); k++) {
		critical(&s_default, 0);
		CHECK_OK(pthread_mutex_lock(&s_rec));     /* recursive: twice */
		critical(&s_rec, 1);
		CHECK_OK(pthread_mutex_unlock(&s_rec));
		critical(&s_err, 2);
		critical(&s_adapt, 3);
		pthread_rwlock_t *l = (k & 1) ? &s_rw : &s_rwnr;
		CHECK_OK(pthread_rwlock_wrlock(l));
		int v = rw_counter[k & 1];
		sched_yield();
		rw_counter[k & 1] = v + 1;
		CHECK_OK(pthread_rwlock_unlock(l));
		CHECK_OK(pthread_rwlock_rdlock(l));
		sched_yield();
		CHECK_OK(pthread_rwlock_unlock(l));
	}
	CHECK_EQ(pthread_mutex_lock(&s_err) == 0 && pthread_mutex_lock(&s_err) == EDEADLK, 1);
	CHECK_OK(pthread_mutex_unlock(&s_err));
	return NULL;
}

static void static_initialisers_shared_by_many(void)
{
	pthread_t t[NS];
	for (int i = 0; i < NS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, static_user, NULL));
	for (int i = 0; i < NS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	for (int i = 0; i < 4; i++)
		CHECK_EQ(counter[i], NS * (test_iters(ITER)));
	CHECK_EQ(rw_counter[0] + rw_counter[1], NS * (test_iters(ITER)));
	CHECK_OK(pthread_mutex_destroy(&s_default));
	CHECK_OK(pthread_rwlock_destroy(&s_rw));
	CHECK_OK(pthread_cond_destroy(&s_cond));
}

int main(void)
{
	robust_owner_died_then_consistent(PTHREAD_MUTEX_NORMAL);
	robust_owner_died_then_consistent(PTHREAD_MUTEX_RECURSIVE);
	robust_owner_died_then_consistent(PTHREAD_MUTEX_ERRORCHECK);
	robust_waiter_gets_eownerdead_then_notrecoverable();
	robust_non_owner();
	robust_list_tracks_each_mutex();
	static_initialisers_shared_by_many();
	return 0;
}
