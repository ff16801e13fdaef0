/*
 * storm_signals_handlers — program signal handlers that call
 * async-signal-safe Weft functions, under a storm of signals from another
 * process, while UTs lock, wait, sleep and run libc and their own code
 * under a short time slice.  The handlers have no SA_ONSTACK, so they run on
 * whatever UT's stack is interrupted, in Weft's code, in libc or in the
 * program's; the tick interrupts them in turn.
 *
 * Before the signal contract, sem_post from a handler that interrupted a
 * Weft call corrupted the ready queues in every run, and the tick switched
 * UTs inside handlers that had interrupted Weft's code ("thread ran after
 * it exited", SIGSEGV, a lost ready UT and the VP asleep for ever).
 *
 * Asserted: every queued real-time signal's sem_post arrives exactly once
 * (the consumer takes exactly as many as were sent and no more remain);
 * every SIGUSR1 the handler saw was posted and consumed; the mutex-guarded
 * counter is exact; a semaphore ping-pong between two UTs completes every
 * round; no EINTR leaks out of mutex or condition waits; and it all ends (a
 * hang fails the test by its time limit).  Four copies at once.  UTs that
 * only yield keep the VP inside Weft's queue changes most of the time.
 */
#include "preempt_test.h"
#include "storm.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>

enum { COPIES = 4, LOCKERS = 4, YIELDERS = 4 };

static long n_rt, n_rounds;
static sem_t rt_sem, usr1_sem;
/* Counted atomically: a UT away in a blocking call runs on its own kernel
 * thread with the program's mask, so the kernel may run two handlers at once
 * (one there, one on the VP), as NPTL would.  A plain ++ lost 5 of 20,000. */
static long rt_seen, usr1_seen;
static volatile int done;
static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long counter, cond_turn;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	int saved = errno;
	if (si->si_value.sival_int == 42)
		__atomic_fetch_add(&rt_seen, 1, __ATOMIC_RELAXED);
	sem_post(&rt_sem);
	errno = saved;
}

static void on_usr1(int sig)
{
	(void)sig;
	int saved = errno;
	__atomic_fetch_add(&usr1_seen, 1, __ATOMIC_RELAXED);
	sem_post(&usr1_sem);
	errno = saved;
}

static void *locker(void *arg)
{
	intptr_t me = (intptr_t)arg;
	for (long i = 0; i < n_rounds; i++) {
		CHECK_OK(pthread_mutex_lock(&mx));
		counter++;
		if (i % 16 == 0) {
			/* a turn-taking wait: signals land inside cond waits too */
			cond_turn = me;
			CHECK_OK(pthread_cond_broadcast(&cv));
		}
		CHECK_OK(pthread_mutex_unlock(&mx));
		if (i % 128 == 0) {
			/* a handler run for this UT ends its sleep (EINTR) */
			struct timespec ts = { 0, 20000 };
			while (nanosleep(&ts, &ts) != 0)
				CHECK_EQ(errno, EINTR);
		}
	}
	return NULL;
}

static void *libc_worker(void *arg)
{
	char buf[128];
	for (long i = 0; !done; i++) {
		void *p = malloc(64 + (size_t)(rand() % 512));
		CHECK(p);
		snprintf(buf, sizeof buf, "%p %ld", p, counter);
		free(p);
		if (i % 256 == 0)
			sched_yield();   /* mostly in libc, but not a CPU hog */
	}
	return arg;
}

static void *spinner(void *arg)
{
	volatile unsigned long x = 0;
	while (!done) {
		for (int i = 0; i < 20000; i++)
			x += (unsigned long)i * 2654435761u;
		sched_yield();
	}
	return arg;
}

/* Waits on the condition until the lockers are done: signals land inside
 * condition waits, which must never return EINTR. */
static void *waiter(void *arg)
{
	long seen = 0;
	CHECK_OK(pthread_mutex_lock(&mx));
	while (!done) {
		CHECK_OK(pthread_cond_wait(&cv, &mx));
		seen++;
	}
	CHECK_OK(pthread_mutex_unlock(&mx));
	return (void *)seen;
}

/* UTs that live in Weft's switch path: most signals land in the middle of
 * ready-queue changes, where a handler's sem_post must not run. */
static void *yielder(void *arg)
{
	while (!done)
		sched_yield();
	return arg;
}

static sem_t ping, pong;

static void *pinger(void *arg)
{
	for (long i = 0; i < n_rounds; i++) {
		CHECK_OK(sem_post(&ping));
		while (sem_wait(&pong) != 0)
			CHECK_EQ(errno, EINTR);
	}
	return arg;
}

static void *ponger(void *arg)
{
	for (long i = 0; i < n_rounds; i++) {
		while (sem_wait(&ping) != 0)
			CHECK_EQ(errno, EINTR);
		CHECK_OK(sem_post(&pong));
	}
	return arg;
}

static void *consumer(void *arg)
{
	for (long i = 0; i < n_rt; i++)
		while (sem_wait(&rt_sem) != 0)
			CHECK_EQ(errno, EINTR);
	return arg;
}

/* The other process: n_rt queued real-time signals, then bursts of SIGUSR1. */
static int sender(pid_t target)
{
	union sigval v = { .sival_int = 42 };
	for (long i = 0; i < n_rt; i++) {
		while (sigqueue(target, SIGRTMIN, v) != 0) {
			CHECK_EQ(errno, EAGAIN);
			usleep(100);
		}
		if (i % 8 == 0)
			kill(target, SIGUSR1);
	}
	return 0;
}

static int one_copy(void)
{
	preempt_test_slice(100000);
#ifdef WEFT_TEST_SANITIZE
	/* 600 signals and rounds a copy in the sanitizer build: it runs alone
	 * (RUN_SERIAL), and 2,000 took 124 s there in CI on a PVM guest */
	n_rt = test_iters(6000);
	n_rounds = test_iters(6000);
#else
	n_rt = test_iters(20000);
	n_rounds = test_iters(20000);
#endif
	CHECK_OK(sem_init(&rt_sem, 0, 0));
	CHECK_OK(sem_init(&usr1_sem, 0, 0));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGRTMIN, &sa, NULL));
	struct sigaction got;
	CHECK_OK(sigaction(SIGRTMIN, NULL, &got));
	CHECK(got.sa_sigaction == on_rt);             /* read back as set */
	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);

	pthread_t lockers[LOCKERS], yielders[YIELDERS], libc_t, spin_t, cons_t, wait_t, pi_t, po_t;
	CHECK_OK(sem_init(&ping, 0, 0));
	CHECK_OK(sem_init(&pong, 0, 0));
	CHECK_OK(pthread_create(&pi_t, NULL, pinger, NULL));
	CHECK_OK(pthread_create(&po_t, NULL, ponger, NULL));
	for (int i = 0; i < YIELDERS; i++)
		CHECK_OK(pthread_create(&yielders[i], NULL, yielder, NULL));
	CHECK_OK(pthread_create(&wait_t, NULL, waiter, NULL));
	for (intptr_t i = 0; i < LOCKERS; i++)
		CHECK_OK(pthread_create(&lockers[i], NULL, locker, (void *)i));
	CHECK_OK(pthread_create(&libc_t, NULL, libc_worker, NULL));
	CHECK_OK(pthread_create(&spin_t, NULL, spinner, NULL));
	CHECK_OK(pthread_create(&cons_t, NULL, consumer, NULL));

	/* the sender is a fresh process (fork from a UT is not supported yet) */
	char self[4096], target[32], count[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	snprintf(target, sizeof target, "%d", (int)getpid());
	snprintf(count, sizeof count, "%ld", n_rt);
	char *args[] = { self, "sender", target, count, NULL };
	pid_t child;
	CHECK_OK(posix_spawn(&child, self, NULL, NULL, args, environ));
	int st;
	pid_t w;
	while ((w = waitpid(child, &st, WNOHANG)) == 0)
		usleep(1000);                         /* a Weft sleep: the UTs run on */
	CHECK_EQ(w, child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	CHECK_OK(pthread_join(cons_t, NULL));         /* every queued signal posted */
	for (int i = 0; i < LOCKERS; i++)
		CHECK_OK(pthread_join(lockers[i], NULL));
	CHECK_OK(pthread_join(pi_t, NULL));
	CHECK_OK(pthread_join(po_t, NULL));
	CHECK_OK(pthread_mutex_lock(&mx));
	done = 1;
	CHECK_OK(pthread_cond_broadcast(&cv));
	CHECK_OK(pthread_mutex_unlock(&mx));
	void *woken;
	CHECK_OK(pthread_join(wait_t, &woken));
	CHECK((long)woken >= 1);
	CHECK_OK(pthread_join(libc_t, NULL));
	CHECK_OK(pthread_join(spin_t, NULL));
	for (int i = 0; i < YIELDERS; i++)
		CHECK_OK(pthread_join(yielders[i], NULL));

	CHECK_EQ(rt_seen, n_rt);
	int v;
	CHECK_OK(sem_getvalue(&rt_sem, &v));
	CHECK_EQ(v, 0);                               /* nothing posted twice */
	CHECK(usr1_seen >= 1 && usr1_seen <= n_rt / 8 + 1);
	for (long i = 0; i < usr1_seen; i++)
		CHECK_OK(sem_trywait(&usr1_sem));
	CHECK_EQ(sem_trywait(&usr1_sem), -1);
	CHECK_EQ(counter, LOCKERS * n_rounds);
	if (getenv("WEFT_TEST_VERBOSE")) {
		struct weft_stats st = preempt_test_stats();
		fprintf(stderr, "ticks %llu preemptions %llu deferrals %llu signals caught %ld+%ld, held back %llu\n",
			(unsigned long long)st.ticks, (unsigned long long)st.preemptions,
			(unsigned long long)st.deferrals, rt_seen, usr1_seen,
			(unsigned long long)st.signals_deferred);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "copy") == 0)
		return one_copy();
	if (argc == 4 && strcmp(argv[1], "sender") == 0) {
		n_rt = atol(argv[3]);
		return sender((pid_t)atol(argv[2]));
	}
	preempt_test_slice(100000);
	return storm_run(COPIES, 180) == 0 ? 0 : 1;
}
