/*
 * pshared_wait_parks_only_caller — a UT that waits for a process-shared
 * object held by another process sleeps in the kernel alone: the other UTs
 * keep running.  The NPTL peer holds the mutex for 300 ms; one UT here
 * locks it (and must wait for the peer), another counts meanwhile.  The
 * counter must move while the first UT waits, and the lock must not
 * return before the peer let go.  The same for a semaphore wait, a
 * condition wait and a barrier wait that only the peer can end.
 */
#include "pshared_test.h"

static volatile long count;
static volatile int waiting_done;

static void *counter_ut(void *arg)
{
	while (!waiting_done) {
		count++;
		sched_yield();
	}
	return arg;
}

static void *lock_m(void *arg)
{
	int64_t t0 = test_now_ns();
	CHECK_OK(pthread_mutex_lock(&sh->m));
	CHECK(test_now_ns() - t0 > 100 * 1000000ll);     /* the peer held it */
	CHECK_OK(pthread_mutex_unlock(&sh->m));
	return arg;
}

static void *wait_sem(void *arg)
{
	while (sem_wait(&sh->s) != 0)
		CHECK_EQ(errno, EINTR);
	return arg;
}

/* While `waiter` runs, `counter_ut` must count; returns the count seen
 * during the wait. */
static long while_waiting(void *(*waiter)(void *), void (*release)(void))
{
	count = 0;
	waiting_done = 0;
	pthread_t w, c;
	CHECK_OK(pthread_create(&w, NULL, waiter, NULL));
	CHECK_OK(pthread_create(&c, NULL, counter_ut, NULL));
	ps_nap(100 * 1000000);          /* main sleeps; the counter runs */
	long during = count;
	if (release)
		release();
	CHECK_OK(pthread_join(w, NULL));
	waiting_done = 1;
	CHECK_OK(pthread_join(c, NULL));
	return during;
}

/* What only the peer can do (n is 1 for all of them). */
static void post_sem(void)
{
	peer_run("sem", 1, 1, 1);       /* posts once */
}

static void produce_one(void)
{
	peer_run("produce", 1, 1, 1);   /* one item, signalled */
}

static void barrier_round(void)
{
	peer_run("barrier", 1, 1, 2);   /* the second of two */
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	ps_init_all(2);

	/* the peer holds m for 300 ms */
	pid_t p = peer_start("hold", 300, 1, 0);
	while (!__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST))
		ps_nap(1000000);
	CHECK(while_waiting(lock_m, NULL) > 1000);
	peer_done(p);

	/* a semaphore only the peer posts */
	CHECK(while_waiting(wait_sem, post_sem) > 1000);
	int v;
	CHECK_OK(sem_getvalue(&sh->s, &v));
	CHECK_EQ(v, 0);

	/* a condition only the peer signals */
	n = 1;
	x = 1;
	CHECK(while_waiting(ps_consume, produce_one) > 1000);
	CHECK_EQ(sh->consumed, 1);

	/* a barrier the peer completes */
	x = 2;
	sh->counter = 0;
	CHECK(while_waiting(ps_barrier_part, barrier_round) > 1000);
	CHECK_EQ(sh->serial, 2);

	/* the waits were made off the VP (unless handing on is off, when
	 * they sleep in slices and yield: the counter ran all the same) */
	const char *act = getenv("WEFT_ACTIVATIONS");
	if (!act || strcmp(act, "off") != 0) {
		struct weft_stats st;
		CHECK_OK(weft_stats_get(&st, sizeof st));
		CHECK(st.handoffs >= 4);
	}
	return 0;
}
