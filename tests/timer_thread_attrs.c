/*
 * timer_thread_attrs — a SIGEV_THREAD notification runs with the
 * sigev_notify_attributes given to timer_create, copied then.
 *
 * Invariant:
 *  - with attributes (1 MiB stack, SCHED_FIFO 7 explicitly, joinable): the
 *    notify UT has a stack of at least 1 MiB and its frame lies in it, runs
 *    at SCHED_FIFO 7, and is detached all the same (as glibc forces);
 *    destroying the attribute object and making it anew with other values
 *    after timer_create changes nothing;
 *  - without attributes: the notify UT inherits the scheduling its creator
 *    had at timer_create (SCHED_FIFO 3 here, though the creator went back
 *    to SCHED_OTHER since), and its name;
 *  - a stack of the program's own (pthread_attr_setstack) is the notify
 *    UT's stack;
 *  - an explicit priority the policy does not have is EINVAL at
 *    timer_create.
 */
#include "timer_test.h"

struct seen {
	volatile int done;
	int policy, prio, detach;
	size_t stacksize;
	char *stackaddr, *local;
	char name[16];
};

static void look(union sigval v)
{
	struct seen *s = v.sival_ptr;
	struct sched_param sp;
	pthread_getschedparam(pthread_self(), &s->policy, &sp);
	s->prio = sp.sched_priority;
	pthread_attr_t a;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	void *addr;
	CHECK_OK(pthread_attr_getstack(&a, &addr, &s->stacksize));
	s->stackaddr = addr;
	CHECK_OK(pthread_attr_getdetachstate(&a, &s->detach));
	CHECK_OK(pthread_attr_destroy(&a));
	pthread_getname_np(pthread_self(), s->name, sizeof s->name);
	s->local = TEST_HERE();
	__atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
}

static timer_t make(pthread_attr_t *a, struct seen *s)
{
	return tt_make_value(CLOCK_MONOTONIC, look, (union sigval){ .sival_ptr = s }, a);
}

static void fire_and_wait(timer_t tm, struct seen *s)
{
	tt_arm(tm, 2 * TT_MS, 0);
	CHECK(tt_wait_for(&s->done, 1, 3000));
	CHECK_OK(timer_delete(tm));
}

static bool inside(const struct seen *s)
{
	return s->local >= s->stackaddr && s->local < s->stackaddr + s->stacksize;
}

int main(void)
{
	/* explicit attributes, copied at create */
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = 7 };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 1 << 20));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_FIFO));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE));
	struct seen s1 = { 0 };
	timer_t t1 = make(&a, &s1);
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_OK(pthread_attr_init(&a));          /* other values in the same object */
	CHECK_OK(pthread_attr_setstacksize(&a, 64 << 10));
	fire_and_wait(t1, &s1);
	CHECK_EQ(s1.policy, SCHED_FIFO);
	CHECK_EQ(s1.prio, 7);
	CHECK(s1.stacksize >= (size_t)1 << 20);
	CHECK(inside(&s1));
	CHECK_EQ(s1.detach, PTHREAD_CREATE_DETACHED);
	CHECK_OK(pthread_attr_destroy(&a));

	/* no attributes: the creator's scheduling and name at create */
	sp.sched_priority = 3;
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
	CHECK_OK(pthread_setname_np(pthread_self(), "maker"));
	struct seen s2 = { 0 };
	timer_t t2 = make(NULL, &s2);
	sp.sched_priority = 0;
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp));
	CHECK_OK(pthread_setname_np(pthread_self(), "changed"));
	fire_and_wait(t2, &s2);
	CHECK_EQ(s2.policy, SCHED_FIFO);
	CHECK_EQ(s2.prio, 3);
	CHECK_EQ(s2.detach, PTHREAD_CREATE_DETACHED);
	CHECK(strcmp(s2.name, "maker") == 0);

	/* the program's own stack */
	size_t size = 256 << 10;
	char *mine = aligned_alloc(4096, size);
	CHECK(mine != NULL);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstack(&a, mine, size));
	struct seen s3 = { 0 };
	timer_t t3 = make(&a, &s3);
	CHECK_OK(pthread_attr_destroy(&a));
	fire_and_wait(t3, &s3);
	CHECK(s3.local >= mine && s3.local < mine + size);
	tt_sleep_ms(20);                          /* the notify UT has left the stack */
	free(mine);

	/* a priority SCHED_FIFO does not have */
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_OTHER));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_FIFO));   /* prio 0 stays */
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = look;
	ev.sigev_notify_attributes = &a;
	timer_t t4;
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, &t4), EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_EQ(tt_timerfds(NULL), 0);
	return 0;
}
