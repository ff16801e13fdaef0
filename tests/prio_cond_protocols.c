/*
 * Condition variables and priorities: pthread_cond_signal wakes the
 * highest-priority waiter (the longest-waiting among equals); a waiter
 * signalled while a PRIO_INHERIT mutex is held lends its priority to the
 * holder at once; a waiter that released a PRIO_PROTECT mutex waits at its
 * own priority, not at the ceiling, and relocks with the ceiling applied.
 */
#include "prio_test.h"

static pthread_mutex_t m;
static pthread_cond_t cv;
static volatile int go;

/* Wait until `go`, then log the name. */
static void *waiter(void *name)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!go)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	go = 0;
	pt_event(name);
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void signal_one(void)
{
	CHECK_OK(pthread_mutex_lock(&m));
	go = 1;
	CHECK_OK(pthread_cond_signal(&cv));
	CHECK_OK(pthread_mutex_unlock(&m));    /* the woken waiter outranks us: runs now */
}

static void signal_wakes_highest_first(int protocol)
{
	pt_reset();
	go = 0;
	pt_mutex_init(&m, protocol, 60, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_cond_init(&cv, NULL));
	pt_set_self_fifo(5);               /* each waiter runs at once, up to its wait */
	static const struct { int prio; const char *name; } w[] = {
		{ 10, "W10" }, { 30, "W30" }, { 20, "W20a" }, { 20, "W20b" }, { 40, "W40" },
	};
	pthread_t t[5];
	for (int i = 0; i < 5; i++)
		t[i] = pt_spawn(w[i].prio, waiter, (void *)w[i].name);
	CHECK_EQ(pt_n, 0);
	for (int i = 0; i < 5; i++)
		signal_one();
	PT_EXPECT("W40", "W30", "W20a", "W20b", "W10");
	for (int i = 0; i < 5; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_cond_destroy(&cv));
	CHECK_OK(pthread_mutex_destroy(&m));
}

/* L (10) signals W (30) while holding a PRIO_INHERIT mutex: W moves onto
 * the mutex and L runs at 30 until it unlocks, so M (20) waits. */
static void *signaller(void *arg)
{
	bool broadcast = arg != NULL;
	CHECK_OK(pthread_mutex_lock(&m));
	go = 1;
	if (broadcast)
		CHECK_OK(pthread_cond_broadcast(&cv));
	else
		CHECK_OK(pthread_cond_signal(&cv));
	pthread_t md = pt_spawn(20, pt_logs, "M");
	pt_event("L:signalled");
	CHECK_OK(pthread_mutex_unlock(&m));
	pt_event("L:end");
	CHECK_OK(pthread_join(md, NULL));
	return NULL;
}

static void *waiter_stays(void *name)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!go)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pt_event(name);
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void signalled_waiter_lends_priority(bool broadcast)
{
	pt_reset();
	go = 0;
	pt_mutex_init(&m, PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_cond_init(&cv, NULL));
	pt_set_self_fifo(5);
	pthread_t w = pt_spawn(30, waiter_stays, "W30");
	pthread_t w2 = pt_spawn(25, waiter_stays, "W25");
	pthread_t l = pt_spawn(10, signaller, broadcast ? (void *)1 : NULL);
	CHECK_OK(pthread_join(l, NULL));
	if (broadcast) {
		PT_EXPECT("L:signalled", "W30", "W25", "M", "L:end");
	} else {
		PT_EXPECT("L:signalled", "W30", "M", "L:end");
		go = 1;
		CHECK_OK(pthread_cond_signal(&cv));
	}
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_join(w2, NULL));
	CHECK_OK(pthread_cond_destroy(&cv));
	CHECK_OK(pthread_mutex_destroy(&m));
}

int main(void)
{
	signal_wakes_highest_first(PTHREAD_PRIO_NONE);
	signal_wakes_highest_first(PTHREAD_PRIO_INHERIT);
	/* With a ceiling of 60 each waiter releases it before it parks, so it
	 * waits at its own priority and the order is the same. */
	signal_wakes_highest_first(PTHREAD_PRIO_PROTECT);
	signalled_waiter_lends_priority(false);
	signalled_waiter_lends_priority(true);
	return 0;
}
