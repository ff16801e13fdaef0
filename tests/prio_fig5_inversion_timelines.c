/*
 * Mueller's Figure 5 as exact timelines on one VP under SCHED_FIFO: P1 (low)
 * locks a mutex; at t1 P3 (high) and P2 (medium) become ready at once (a
 * barrier releases them); P3 wants the mutex.
 *   (a) no protocol: P2 runs while P3 waits for P1 — priority inversion;
 *   (b) PRIO_INHERIT: P1 runs at P3's priority until it unlocks, then P3,
 *       then P2 — no inversion;
 *   (c) PRIO_PROTECT (ceiling = P3's priority): P1 runs at the ceiling, P3
 *       cannot even preempt it until the unlock, then P3, then P2 — no
 *       inversion, and two switches fewer than (b).
 * Switches are counted from P1's arrival at the barrier (t1) to its end.
 */
#include "prio_test.h"

enum { P1 = 10, P2 = 20, P3 = 30, DRIVER = 50 };

static pthread_mutex_t m;
static pthread_barrier_t t1;
static uint64_t sw_t1, sw_end;

static void *p1(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pt_event("1L");
	sw_t1 = pt_switches();
	pthread_barrier_wait(&t1);          /* P2 and P3 become ready together */
	pt_event("1U");
	CHECK_OK(pthread_mutex_unlock(&m));
	pt_event("1E");
	sw_end = pt_switches();
	return arg;
}

static void *p2(void *arg)
{
	pthread_barrier_wait(&t1);
	pt_event("2R");                     /* P2's whole run: it never blocks */
	return arg;
}

static void *p3(void *arg)
{
	pthread_barrier_wait(&t1);
	pt_event("3W");
	CHECK_OK(pthread_mutex_lock(&m));
	pt_event("3L");
	CHECK_OK(pthread_mutex_unlock(&m));
	pt_event("3E");
	return arg;
}

/* Run the scenario with `protocol`; the switches from t1 to P1's end. */
static uint64_t run(int protocol)
{
	pt_reset();
	pt_mutex_init(&m, protocol, P3, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_barrier_init(&t1, NULL, 3));
	/* The driver outranks them all: nothing runs until it joins P1, then
	 * P3 and P2 reach the barrier first and P1, the lowest, comes last. */
	pthread_t a = pt_spawn(P1, p1, NULL);
	pthread_t b = pt_spawn(P2, p2, NULL);
	pthread_t c = pt_spawn(P3, p3, NULL);
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK_OK(pthread_join(c, NULL));
	CHECK_OK(pthread_barrier_destroy(&t1));
	CHECK_OK(pthread_mutex_destroy(&m));
	return sw_end - sw_t1;
}

int main(void)
{
	int r = weft_timeslice_set(0);        /* SCHED_FIFO is never sliced; to be plain */
	CHECK(r == 0 || r == ENOTSUP);        /* ENOTSUP: libweft.a never slices */
	pt_set_self_fifo(DRIVER);

	/* (a) P2 runs before P3 gets the mutex: P3 waits for a lower priority. */
	run(PTHREAD_PRIO_NONE);
	PT_EXPECT("1L", "3W", "2R", "1U", "3L", "3E", "1E");

	/* (b) P1 inherits P3's priority when P3 blocks: P2 waits for both. */
	uint64_t sw_b = run(PTHREAD_PRIO_INHERIT);
	PT_EXPECT("1L", "3W", "1U", "3L", "3E", "2R", "1E");

	/* (c) P1 runs at the ceiling from its lock: P3, ready at t1, waits for
	 * the unlock; P2 waits for both. */
	uint64_t sw_c = run(PTHREAD_PRIO_PROTECT);
	PT_EXPECT("1L", "1U", "3W", "3L", "3E", "2R", "1E");

	/* (b): P1->P3 (t1), P3->P1 (P3 blocks), P1->P3 (unlock), P3->P2,
	 * P2->P1.  (c): P1->P3 (unlock), P3->P2, P2->P1. */
	CHECK_EQ(sw_b, 5);
	CHECK_EQ(sw_c, 3);
	return 0;
}
