/*
 * sig_process_directed — where a signal sent to the whole process goes
 * (Mueller's rules 5 and 6, with sigwait as "just another case where the
 * signal is unmasked").
 *
 * Invariant: kill(getpid(), sig) is taken by a thread waiting for sig in
 * sigwait (no handler runs) while every thread blocks it; else its handler
 * runs on the one thread that has it unmasked, even when that thread is
 * parked (in sem_wait) and the sender runs; else it stays pending on the
 * process, no handler runs, and the handler runs on the first thread that
 * unmasks it, before that thread's pthread_sigmask returns.
 */
#include "sig_test.h"

#include <semaphore.h>

/* ---- rule: a sigwait-er takes it ---- */
static volatile int waited_sig, waiting;

static void *waiter(void *arg)
{
	sigset_t w;
	sigemptyset(&w);
	sigaddset(&w, SIGUSR1);
	waiting = 1;
	int sig = 0;
	CHECK_OK(sigwait(&w, &sig));
	waited_sig = sig;
	return NULL;
}

/* ---- rule: a thread that has it unmasked ---- */
static sem_t sem;
static volatile int parked;

static void *unmasked(void *arg)
{
	sig_mask1(SIG_UNBLOCK, SIGUSR2);
	parked = 1;
	while (sem_wait(&sem) != 0)
		CHECK_EQ(errno, EINTR);
	return NULL;
}

/* ---- rule: pending until one unmasks ---- */
static volatile int go_unmask;
static volatile int hits_at_return;

static void *late(void *arg)
{
	CHECK(sig_wait_for(&go_unmask, 1, 5000));
	sig_mask1(SIG_UNBLOCK, SIGHUP);
	hits_at_return = hits;
	CHECK(pthread_equal(hit_self, pthread_self()));
	return NULL;
}

int main(void)
{
	CHECK_OK(sem_init(&sem, 0, 0));
	sig_on(SIGUSR1, on_record, SA_RESTART, 0);
	sig_on(SIGUSR2, on_record, SA_RESTART, 0);
	sig_on(SIGHUP, on_record, SA_RESTART, 0);
	sig_mask_list(SIG_BLOCK, (const int[]){ SIGUSR1, SIGUSR2, SIGHUP, 0 });   /* inherited by all */

	/* 1. sigwait. A busy bystander (it blocks SIGUSR1 too) runs meanwhile. */
	struct test_counter ctr = { 1, 0 };
	pthread_t cnt, w;
	CHECK_OK(pthread_create(&cnt, NULL, test_counting, &ctr));
	CHECK_OK(pthread_create(&w, NULL, waiter, NULL));
	CHECK(sig_wait_for(&waiting, 1, 2000));
	sig_sleep_ms(20);
	CHECK_OK(kill(getpid(), SIGUSR1));
	CHECK_OK(pthread_join(w, NULL));
	CHECK_EQ(waited_sig, SIGUSR1);
	CHECK_EQ(hits, 0);
	ctr.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));

	/* 2. Only `u` has SIGUSR2 unmasked; it is parked, we send. */
	pthread_t u;
	CHECK_OK(pthread_create(&u, NULL, unmasked, NULL));
	CHECK(sig_wait_for(&parked, 1, 2000));
	sig_sleep_ms(20);
	CHECK_OK(kill(getpid(), SIGUSR2));
	if (!sig_wait_for(&hits, 1, 2000)) {
		fprintf(stderr, "SIGUSR2 never handled by the thread that unmasks it\n");
		exit(1);
	}
	CHECK_EQ(hits, 1);
	CHECK(pthread_equal(hit_self, u));
	CHECK_OK(sem_post(&sem));
	CHECK_OK(pthread_join(u, NULL));

	/* 3. Nobody has SIGHUP unmasked: pending on the process. */
	pthread_t l;
	CHECK_OK(pthread_create(&l, NULL, late, NULL));
	CHECK_OK(kill(getpid(), SIGHUP));
	sig_sleep_ms(50);
	CHECK_EQ(hits, 1);
	sigset_t p;
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGHUP), 1);
	go_unmask = 1;
	CHECK_OK(pthread_join(l, NULL));
	CHECK_EQ(hits_at_return, 2);        /* delivered within pthread_sigmask */
	CHECK_EQ(hits, 2);
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGHUP), 0);
	return 0;
}
