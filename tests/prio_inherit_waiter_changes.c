/*
 * What a PRIO_INHERIT owner inherits follows its waiters: a waiter that
 * times out, one that is cancelled, and one whose priority is changed each
 * move the owner's priority at once; a change of the owner's own priority
 * while it is boosted changes its base only.
 *
 * In each scenario L (10) holds the mutex, H (30) waits for it, and a
 * medium UT M (20) is ready: M runs before L goes on if and only if L no
 * longer runs above 20.
 */
#include "prio_test.h"

#include <time.h>

enum { LOW = 10, MED = 20, HIGH = 30, DRIVER = 50 };

static pthread_mutex_t m;
static volatile int h_done;

/* ---- a waiter times out ---- */

static void *h_timed(void *arg)
{
	pt_event("H:waits");
	struct timespec ts = test_time_in(CLOCK_MONOTONIC, 20 * 1000 * 1000);
	CHECK_EQ(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	pt_event("H:timedout");
	h_done = 1;
	return arg;
}

static void *l_timed(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t h = pt_spawn(HIGH, h_timed, NULL);   /* blocks: we run at 30 */
	pthread_t md = pt_spawn(MED, pt_logs, "M");        /* waits for us */
	/* Yield until H's deadline passes: at 30 only H can take over, and
	 * when it does its timeout gives us back our 10. */
	while (!h_done)
		sched_yield();
	pt_event("L:after");
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_join(md, NULL));
	return arg;
}

/* ---- a waiter is cancelled (asynchronously: locking is not a
 * cancellation point) ---- */

static void cancelled(void *arg)
{
	(void)arg;
	pt_event("H:cancelled");
}

static void *h_cancel(void *arg)
{
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	pthread_cleanup_push(cancelled, NULL);
	pt_event("H:waits");
	pthread_mutex_lock(&m);
	pt_event("H:got");                         /* never */
	pthread_cleanup_pop(0);
	return arg;
}

static void *l_cancel(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t h = pt_spawn(HIGH, h_cancel, NULL);
	pthread_t md = pt_spawn(MED, pt_logs, "M");
	CHECK_OK(pthread_cancel(h));            /* H runs, unwinds; then M */
	pt_event("L:after");
	CHECK_OK(pthread_mutex_unlock(&m));
	void *r;
	CHECK_OK(pthread_join(h, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_OK(pthread_join(md, NULL));
	return arg;
}

/* ---- a waiter's priority changes; the owner's own changes ---- */

static void *h_plain(void *arg)
{
	pt_event("H:waits");
	CHECK_OK(pthread_mutex_lock(&m));
	pt_event("H:got");
	CHECK_OK(pthread_mutex_unlock(&m));
	return arg;
}

static void set_prio(pthread_t t, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_setschedparam(t, SCHED_FIFO, &sp));
}

static int base_prio(pthread_t t)
{
	struct sched_param sp;
	int policy;
	CHECK_OK(pthread_getschedparam(t, &policy, &sp));
	CHECK_EQ(policy, SCHED_FIFO);
	return sp.sched_priority;
}

static void *l_setsched(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t h = pt_spawn(HIGH, h_plain, NULL);   /* we run at 30 */
	pthread_t md = pt_spawn(MED, pt_logs, "M");
	set_prio(h, 15);                               /* we fall to 15: M runs */
	pt_event("L:lowered");
	set_prio(h, 40);                               /* we rise to 40 */
	pthread_t m2 = pt_spawn(35, pt_logs, "M35");      /* waits for us */
	/* Our own priority changes under the boost: the base only; we are
	 * not moved, so M35 still waits. */
	set_prio(pthread_self(), 5);
	CHECK_EQ(base_prio(pthread_self()), 5);
	pt_event("L:rebased");
	CHECK_OK(pthread_mutex_unlock(&m));            /* H (40), M35, then us at 5 */
	pt_event("L:end");
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_join(md, NULL));
	CHECK_OK(pthread_join(m2, NULL));
	return arg;
}

static void scenario(void *(*fn)(void *))
{
	pt_reset();
	h_done = 0;
	pt_mutex_init(&m, PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_join(pt_spawn(LOW, fn, NULL), NULL));
	CHECK_OK(pthread_mutex_destroy(&m));
}

int main(void)
{
	pt_set_self_fifo(DRIVER);

	scenario(l_timed);
	PT_EXPECT("H:waits", "H:timedout", "M", "L:after");

	scenario(l_cancel);
	PT_EXPECT("H:waits", "H:cancelled", "M", "L:after");

	scenario(l_setsched);
	PT_EXPECT("H:waits", "M", "L:lowered", "L:rebased", "H:got", "M35", "L:end");
	return 0;
}
