/*
 * pshared_local_wait_parks — when the VP cannot be handed on
 * (WEFT_ACTIVATIONS=off; the test re-executes itself so), a UT waiting for
 * a process-shared object parks on the process's own table of waits:
 *   - it is not ready while it waits (weft_stats says no UT is ready), so
 *     a program that waits for its threads to park sees them parked —
 *     before, such waiters yielded for ever and api_fuzz's barrier case
 *     hung under a loaded machine;
 *   - a wake by a UT of this process reaches it at once: 20,000 round
 *     trips on two process-shared semaphores take a small fraction of what
 *     they would at one poll (50 us) each;
 *   - a wake from another process reaches it at the next look (within a
 *     few ms), a timed wait ends with ETIMEDOUT at its time, and a cancel
 *     ends a cancellable wait (its cleanup handler runs);
 *   - a barrier round of three works, with one serial thread.
 */
#include "pshared_test.h"

#include <stdbool.h>
#include <sys/mman.h>

struct page {
	pthread_barrier_t bar;
	sem_t ping, pong, child_post, timed, cancel_sem;
	int serial;
};
static struct page *pg;

static void *bar_waiter(void *arg)
{
	int r = pthread_barrier_wait(&pg->bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	if (r == PTHREAD_BARRIER_SERIAL_THREAD)
		__atomic_add_fetch(&pg->serial, 1, __ATOMIC_SEQ_CST);
	return arg;
}

/* Yield until no other UT is ready: bounded at about a second. */
static bool others_park(void)
{
	struct weft_stats s;
	for (int i = 0; i < 20000; i++) {
		CHECK_OK(weft_stats_get(&s, sizeof s));
		if (s.threads_ready == 0)
			return true;
		if (i < 1000)
			sched_yield();
		else
			ps_nap(50000);
	}
	return false;
}

static long rounds;

static void *ponger(void *arg)
{
	for (long i = 0; i < rounds; i++) {
		while (sem_wait(&pg->ping) != 0)
			CHECK_EQ(errno, EINTR);
		CHECK_OK(sem_post(&pg->pong));
	}
	return arg;
}

static volatile long counted;
static volatile int stop_counting;

static void *counter(void *arg)
{
	while (!stop_counting) {
		counted++;
		sched_yield();
	}
	return arg;
}

static int cleaned;

static void cleanup(void *arg)
{
	*(int *)arg = 1;
}

static void *cancel_waiter(void *arg)
{
	pthread_cleanup_push(cleanup, &cleaned);
	sem_wait(&pg->cancel_sem);
	pthread_cleanup_pop(0);
	return arg;
}

int main(int argc, char **argv)
{
	const char *act = getenv("WEFT_ACTIVATIONS");
	if (!act || strcmp(act, "off") != 0) {
		setenv("WEFT_ACTIVATIONS", "off", 1);
		execv("/proc/self/exe", argv);
		CHECK(!"execv");
	}
	(void)argc;
	pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(pg != MAP_FAILED);

	/* A barrier of three: two UTs wait, parked, not ready. */
	pthread_barrierattr_t ba;
	CHECK_OK(pthread_barrierattr_init(&ba));
	CHECK_OK(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_barrier_init(&pg->bar, &ba, 3));
	pthread_t b1, b2;
	CHECK_OK(pthread_create(&b1, NULL, bar_waiter, NULL));
	CHECK_OK(pthread_create(&b2, NULL, bar_waiter, NULL));
	CHECK(others_park());
	CHECK_EQ(pthread_barrier_destroy(&pg->bar), EBUSY);   /* they wait in it */
	int r = pthread_barrier_wait(&pg->bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	if (r == PTHREAD_BARRIER_SERIAL_THREAD)
		__atomic_add_fetch(&pg->serial, 1, __ATOMIC_SEQ_CST);
	CHECK_OK(pthread_join(b1, NULL));
	CHECK_OK(pthread_join(b2, NULL));
	CHECK_EQ(pg->serial, 1);
	CHECK_OK(pthread_barrier_destroy(&pg->bar));

	/* Ping-pong: each wake is made here and must be at once.  At one
	 * 50 us poll per wait the rounds would take 2 s or more. */
	CHECK_OK(sem_init(&pg->ping, 1, 0));
	CHECK_OK(sem_init(&pg->pong, 1, 0));
	rounds = 20000;
	pthread_t p;
	CHECK_OK(pthread_create(&p, NULL, ponger, NULL));
	int64_t t0 = test_now_ns();
	for (long i = 0; i < rounds; i++) {
		CHECK_OK(sem_post(&pg->ping));
		while (sem_wait(&pg->pong) != 0)
			CHECK_EQ(errno, EINTR);
	}
	int64_t took = test_now_ns() - t0;
	CHECK_OK(pthread_join(p, NULL));
	fprintf(stderr, "20000 round trips: %.1f ms\n", took / 1e6);
	CHECK(took < 1000 * 1000000ll);
	int v = -1;
	CHECK_OK(sem_getvalue(&pg->ping, &v));
	CHECK_EQ(v, 0);
	CHECK_OK(sem_getvalue(&pg->pong, &v));
	CHECK_EQ(v, 0);

	/* Another process posts after 100 ms; the counter runs meanwhile,
	 * and the wait ends soon after the post. */
	CHECK_OK(sem_init(&pg->child_post, 1, 0));
	stop_counting = 0;
	pthread_t c;
	CHECK_OK(pthread_create(&c, NULL, counter, NULL));
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		struct timespec d = { 0, 100 * 1000000 };
		nanosleep(&d, NULL);
		_exit(sem_post(&pg->child_post) == 0 ? 0 : 1);
	}
	t0 = test_now_ns();
	while (sem_wait(&pg->child_post) != 0)
		CHECK_EQ(errno, EINTR);
	took = test_now_ns() - t0;
	int st;
	CHECK_EQ(waitpid(kid, &st, 0), kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(took >= 90 * 1000000ll);
	CHECK(took < 2000 * 1000000ll);
	CHECK(counted > 100);

	/* A timed wait nobody ends: ETIMEDOUT at its time, others running. */
	CHECK_OK(sem_init(&pg->timed, 1, 0));
	long before = counted;
	t0 = test_now_ns();                   /* first: see sync_barrier_sem.c */
	struct timespec at = test_time_in(CLOCK_REALTIME, 50 * 1000000);
	CHECK_EQ(sem_timedwait(&pg->timed, &at), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	took = test_now_ns() - t0;
	CHECK(took >= 45 * 1000000ll);
	CHECK(took < 1000 * 1000000ll);
	CHECK(counted > before);
	stop_counting = 1;
	CHECK_OK(pthread_join(c, NULL));

	/* Cancel a UT parked in a process-shared sem_wait. */
	CHECK_OK(sem_init(&pg->cancel_sem, 1, 0));
	pthread_t cw;
	CHECK_OK(pthread_create(&cw, NULL, cancel_waiter, NULL));
	CHECK(others_park());
	CHECK_OK(pthread_cancel(cw));
	void *res = NULL;
	CHECK_OK(pthread_join(cw, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(cleaned, 1);
	CHECK_OK(sem_getvalue(&pg->cancel_sem, &v));
	CHECK_EQ(v, 0);
	return 0;
}
