/*
 * exhaust.h — what the exhaustion tests check once thread creation has run
 * out of address space or mappings: every synchronisation object still
 * works, and (once the threads are gone) threads can be created again.
 */
#ifndef WEFT_TEST_EXHAUST_H
#define WEFT_TEST_EXHAUST_H

#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>
#include <weft.h>

/* Parked threads: each waits on exhaust_gate, then returns its argument. */
static sem_t exhaust_gate;

static void *exhaust_parked(void *arg)
{
	while (sem_wait(&exhaust_gate) != 0)
		;
	return arg;
}

static void exhaust_once_fn(void) {}

/* Every object, used by the caller alone; needs no memory except for a
 * key's value (ENOMEM allowed when memory_ok is false). */
static void exhaust_sync_works(bool memory_ok)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_EQ(pthread_mutex_trylock(&m), EBUSY);
	struct timespec past = { 0, 0 };
	CHECK_EQ(pthread_mutex_timedlock(&m, &past), ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_lock(&r));
	CHECK_OK(pthread_mutex_lock(&r));
	CHECK_OK(pthread_mutex_unlock(&r));
	CHECK_OK(pthread_mutex_unlock(&r));
	CHECK_OK(pthread_mutex_lock(&e));
	CHECK_EQ(pthread_mutex_lock(&e), EDEADLK);
	CHECK_OK(pthread_mutex_unlock(&e));

	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	CHECK_OK(pthread_mutex_lock(&m));
	struct timespec soon = test_time_in(CLOCK_REALTIME, 1000000);
	CHECK_EQ(pthread_cond_timedwait(&c, &m, &soon), ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_cond_signal(&c));
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_cond_destroy(&c));

	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	CHECK_EQ(pthread_rwlock_trywrlock(&rw), EBUSY);
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_rwlock_wrlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));

	sem_t s;
	CHECK_OK(sem_init(&s, 0, 1));
	CHECK_OK(sem_wait(&s));
	CHECK_EQ(sem_trywait(&s), -1);
	CHECK_EQ(errno, EAGAIN);
	soon = test_time_in(CLOCK_REALTIME, 1000000);
	CHECK_EQ(sem_timedwait(&s, &soon), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_OK(sem_post(&s));
	CHECK_OK(sem_destroy(&s));

	pthread_spinlock_t sp;
	CHECK_OK(pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_spin_lock(&sp));
	CHECK_EQ(pthread_spin_trylock(&sp), EBUSY);
	CHECK_OK(pthread_spin_unlock(&sp));

	pthread_barrier_t b;
	CHECK_OK(pthread_barrier_init(&b, NULL, 1));
	CHECK_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_OK(pthread_barrier_destroy(&b));

	static pthread_once_t once = PTHREAD_ONCE_INIT;
	CHECK_OK(pthread_once(&once, exhaust_once_fn));

	weft_event_t ev = WEFT_EVENT_INITIALIZER;
	CHECK_OK(weft_event_set(&ev));
	CHECK_OK(weft_event_wait(&ev));

	pthread_key_t k;
	int kr = pthread_key_create(&k, NULL);
	if (kr == 0) {
		int sr = pthread_setspecific(k, &k);
		if (sr == 0)
			CHECK(pthread_getspecific(k) == &k);
		else
			CHECK(!memory_ok && sr == ENOMEM);
		CHECK_OK(pthread_key_delete(k));
	} else {
		CHECK(!memory_ok && kr == EAGAIN);
	}

	struct timespec ms = { 0, 1000000 };
	CHECK_OK(nanosleep(&ms, NULL));
	CHECK_OK(sched_yield());
}

/* n threads meet at a barrier, count under a mutex and signal a
 * condition; all are joined. */
struct exhaust_meet {
	pthread_barrier_t bar;
	pthread_mutex_t m;
	pthread_cond_t c;
	int count;
};

static void *exhaust_meeter(void *arg)
{
	struct exhaust_meet *x = arg;
	pthread_barrier_wait(&x->bar);
	pthread_mutex_lock(&x->m);
	x->count++;
	pthread_cond_signal(&x->c);
	pthread_mutex_unlock(&x->m);
	return NULL;
}

static void exhaust_threads_work(int n)
{
	static pthread_t t[1000];
	struct exhaust_meet x = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };
	CHECK(n <= 1000);
	CHECK_OK(pthread_barrier_init(&x.bar, NULL, (unsigned)n));
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], NULL, exhaust_meeter, &x));
	CHECK_OK(pthread_mutex_lock(&x.m));
	while (x.count < n)
		CHECK_OK(pthread_cond_wait(&x.c, &x.m));
	CHECK_OK(pthread_mutex_unlock(&x.m));
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_barrier_destroy(&x.bar));
}

/* A fresh mapping of `bytes` can be had, and used. */
static void exhaust_mmap_works(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "a %zu MiB mmap fails: %s\n", bytes >> 20, strerror(errno));
		CHECK(0);
	}
	p[0] = p[bytes - 1] = 1;
	CHECK_OK(munmap(p, bytes));
}

#endif
