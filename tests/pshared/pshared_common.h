/*
 * pshared_common.h — what a Weft test process and its NPTL peer
 * (pshared_nptl_peer.c, linked with plain -pthread, never with Weft) share:
 * the layout of the shared page they both map, and the code both run on
 * it.  The page is a memfd the test creates and the peer inherits across
 * exec (its descriptor number is in argv).  Each side compiles this same
 * code against its own library — glibc's NPTL in the peer, Weft in the
 * test — so every object is worked on by both implementations at once,
 * and either side may initialise what the other uses.
 *
 * Before including, define PS_SIDE (the name failures print).  The
 * workers take no argument that matters; they read `sh`, `n` (iterations)
 * and `x` (a mode's extra), set once before any thread starts.
 */
#ifndef WEFT_TEST_PSHARED_COMMON_H
#define WEFT_TEST_PSHARED_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct shared {
	pthread_mutex_t m;              /* normal, process-shared */
	pthread_mutex_t rm;             /* robust, process-shared */
	pthread_mutex_t em;             /* errorcheck, process-shared */
	pthread_cond_t c;               /* producers wait here (not full) ... */
	pthread_cond_t c2;              /* ... consumers here (not empty); CLOCK_MONOTONIC */
	pthread_rwlock_t rw;
	pthread_barrier_t b;
	sem_t s, s2;
	pthread_spinlock_t sp;
	long counter, counter2;         /* guarded by the object under test */
	volatile int items;             /* producer/consumer: items queued (under m) */
	long produced, consumed;        /* under m */
	volatile int ready;             /* peer -> test: it holds / waits */
	int serial;                     /* barrier serial returns, both sides */
	char name[64];                  /* a named semaphore's name */
};

static struct shared *sh;
static long n, x;

#define PS_FAIL(what)                                                                   \
	do {                                                                            \
		fprintf(stderr, "%s:%d: %s\n", PS_SIDE, __LINE__, what);               \
		exit(1);                                                                \
	} while (0)
#define PS_OK(call)                                                                     \
	do {                                                                            \
		int r_ = (call);                                                        \
		if (r_ != 0) {                                                          \
			fprintf(stderr, "%s:%d: %s = %d\n", PS_SIDE, __LINE__, #call, r_);   \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static inline struct shared *ps_map(int fd)
{
	void *p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static inline void ps_nap(long ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };
	nanosleep(&ts, NULL);
}

/* Every object of the page, process-shared (barrier of `count`). */
static inline void ps_init_all(unsigned count)
{
	pthread_mutexattr_t ma;
	PS_OK(pthread_mutexattr_init(&ma));
	PS_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
	PS_OK(pthread_mutex_init(&sh->m, &ma));
	PS_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	PS_OK(pthread_mutex_init(&sh->em, &ma));
	PS_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_NORMAL));
	PS_OK(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST));
	PS_OK(pthread_mutex_init(&sh->rm, &ma));
	pthread_condattr_t ca;
	PS_OK(pthread_condattr_init(&ca));
	PS_OK(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED));
	PS_OK(pthread_cond_init(&sh->c, &ca));
	PS_OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
	PS_OK(pthread_cond_init(&sh->c2, &ca));
	pthread_rwlockattr_t ra;
	PS_OK(pthread_rwlockattr_init(&ra));
	PS_OK(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED));
	PS_OK(pthread_rwlock_init(&sh->rw, &ra));
	pthread_barrierattr_t ba;
	PS_OK(pthread_barrierattr_init(&ba));
	PS_OK(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED));
	PS_OK(pthread_barrier_init(&sh->b, &ba, count));
	PS_OK(sem_init(&sh->s, 1, 0));
	PS_OK(sem_init(&sh->s2, 1, 0));
	PS_OK(pthread_spin_init(&sh->sp, PTHREAD_PROCESS_SHARED));
}

/* ---- the workers: each runs n times ---- */

/* counter += 1 under the mutex `arg` (m or em), read and written apart. */
static inline void *ps_mutex_part(void *arg)
{
	pthread_mutex_t *m = arg;
	for (long i = 0; i < n; i++) {
		PS_OK(pthread_mutex_lock(m));
		long v = sh->counter;
		if ((i & 7) == 0)
			sched_yield();  /* widen the window a lost update needs */
		sh->counter = v + 1;
		PS_OK(pthread_mutex_unlock(m));
	}
	return NULL;
}

/* counter2 += 1 under the robust mutex. */
static inline void *ps_robust_part(void *arg)
{
	for (long i = 0; i < n; i++) {
		int r = pthread_mutex_lock(&sh->rm);
		if (r == EOWNERDEAD)
			PS_OK(pthread_mutex_consistent(&sh->rm));
		else
			PS_OK(r);
		long v = sh->counter2;
		if ((i & 7) == 0)
			sched_yield();
		sh->counter2 = v + 1;
		PS_OK(pthread_mutex_unlock(&sh->rm));
	}
	return arg;
}

/* A queue of at most 4 items under m.  x 1: signal, producers on c and
 * consumers on c2; x 0: one condition (c2), broadcast. */
static inline void *ps_produce(void *arg)
{
	pthread_cond_t *wait_on = x ? &sh->c : &sh->c2;
	for (long i = 0; i < n; i++) {
		PS_OK(pthread_mutex_lock(&sh->m));
		while (sh->items >= 4)
			PS_OK(pthread_cond_wait(wait_on, &sh->m));
		sh->items++;
		sh->produced++;
		PS_OK(x ? pthread_cond_signal(&sh->c2) : pthread_cond_broadcast(&sh->c2));
		PS_OK(pthread_mutex_unlock(&sh->m));
	}
	return arg;
}

static inline void *ps_consume(void *arg)
{
	for (long i = 0; i < n; i++) {
		PS_OK(pthread_mutex_lock(&sh->m));
		while (sh->items == 0)
			PS_OK(pthread_cond_wait(&sh->c2, &sh->m));
		sh->items--;
		sh->consumed++;
		PS_OK(x ? pthread_cond_signal(&sh->c) : pthread_cond_broadcast(&sh->c2));
		PS_OK(pthread_mutex_unlock(&sh->m));
	}
	return arg;
}

/* One write in four (counter and counter2 moved apart), else a read that
 * must see them equal. */
static inline void *ps_rw_part(void *arg)
{
	for (long i = 0; i < n; i++) {
		if (i % 4 == 0) {
			PS_OK(pthread_rwlock_wrlock(&sh->rw));
			sh->counter++;
			sched_yield();
			sh->counter2++;
		} else {
			PS_OK(pthread_rwlock_rdlock(&sh->rw));
			if (sh->counter != sh->counter2)
				PS_FAIL("a reader saw a writer half done");
		}
		PS_OK(pthread_rwlock_unlock(&sh->rw));
	}
	return arg;
}

static inline void ps_barrier_wait(void)
{
	int e = pthread_barrier_wait(&sh->b);
	if (e == PTHREAD_BARRIER_SERIAL_THREAD)
		__atomic_add_fetch(&sh->serial, 1, __ATOMIC_SEQ_CST);
	else if (e)
		PS_FAIL("pthread_barrier_wait");
}

/* n rounds of x participants: arrive (counter += 1), wait, check that all
 * x of the round arrived, wait again. */
static inline void *ps_barrier_part(void *arg)
{
	for (long r = 0; r < n; r++) {
		__atomic_add_fetch(&sh->counter, 1, __ATOMIC_SEQ_CST);
		ps_barrier_wait();
		if (__atomic_load_n(&sh->counter, __ATOMIC_SEQ_CST) != (r + 1) * x)
			PS_FAIL("a round ended before everyone arrived");
		ps_barrier_wait();
	}
	return arg;
}

/* x 0: wait on s, 1: post on s, 2: wait on s2, 3: post on s2; each wait
 * counts in counter. */
static inline void *ps_sem_part(void *arg)
{
	sem_t *s = x < 2 ? &sh->s : &sh->s2;
	for (long i = 0; i < n; i++) {
		if (x & 1) {
			PS_OK(sem_post(s));
			continue;
		}
		while (sem_wait(s) != 0)
			if (errno != EINTR)
				PS_FAIL("sem_wait");
		__atomic_add_fetch(&sh->counter, 1, __ATOMIC_SEQ_CST);
	}
	return arg;
}

/* counter += 1 under the spinlock. */
static inline void *ps_spin_part(void *arg)
{
	for (long i = 0; i < n; i++) {
		PS_OK(pthread_spin_lock(&sh->sp));
		long v = sh->counter;
		if ((i & 15) == 0)
			sched_yield();
		sh->counter = v + 1;
		PS_OK(pthread_spin_unlock(&sh->sp));
	}
	return arg;
}

/* A named semaphore (sh->name): x 0 posts n times, x 1 waits n times. */
static inline void *ps_named_part(void *arg)
{
	sem_t *s = sem_open(sh->name, 0);
	if (s == SEM_FAILED)
		PS_FAIL("sem_open");
	for (long i = 0; i < n; i++) {
		if (!x) {
			PS_OK(sem_post(s));
			continue;
		}
		while (sem_wait(s) != 0)
			if (errno != EINTR)
				PS_FAIL("sem_wait");
	}
	PS_OK(sem_close(s));
	return arg;
}

/* Run `threads` threads of fn(arg) and join them. */
static inline void ps_run_threads(int threads, void *(*fn)(void *), void *arg)
{
	pthread_t t[16];
	if (threads < 1 || threads > 16)
		threads = 1;
	for (int i = 0; i < threads; i++)
		PS_OK(pthread_create(&t[i], NULL, fn, arg));
	for (int i = 0; i < threads; i++)
		PS_OK(pthread_join(t[i], NULL));
}

#endif
