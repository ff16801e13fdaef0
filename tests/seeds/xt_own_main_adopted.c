/* A program with its own main (no xmain) that links libweft-xthreads keeps
 * its main, and its initial thread becomes an xthread at its first call:
 * XTHREAD_DEFAULT_PRIO, so Figure 16's ping-pong between it and a created
 * thread works from main too.  A plain pthread that makes an Xthreads call
 * is adopted the same way, keeping a FIFO priority it already had. */
#include "../check.h"
#include <weft/xthreads.h>

static xthread_t xmain_like, partner;
static int n, turns[2];

static void partner_fn(void)
{
	while (--n > 0) {
		turns[1]++;
		CHECK_EQ(xthread_yield(xmain_like), XTOK);
	}
}

static void *plain(void *arg)
{
	xthread_t self;
	CHECK_EQ(xthread_self(&self), XTOK);
	CHECK_EQ(xthread_getprio(self), (XTCALL)(intptr_t)arg);
	return NULL;
}

int main(void)
{
	int policy;
	struct sched_param sp;
	CHECK_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	CHECK_EQ(policy, SCHED_OTHER);
	CHECK_EQ(xthread_self(&xmain_like), XTOK);
	CHECK_EQ(xthread_getprio(xmain_like), XTHREAD_DEFAULT_PRIO);
	CHECK_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	CHECK_EQ(policy, SCHED_FIFO);
	CHECK_EQ(sp.sched_priority, XTHREAD_DEFAULT_PRIO);

	n = 1001;
	CHECK_EQ(xthread_create(&partner, NULL, partner_fn, 0), XTOK);
	while (--n > 0) {
		turns[0]++;
		CHECK_EQ(xthread_yield(partner), XTOK);
	}
	CHECK_EQ(turns[0], 500);
	CHECK_EQ(turns[1], 500);

	pthread_t t = test_spawn_prio(33, plain, 33);
	CHECK_OK(pthread_join(t, NULL));
	t = test_spawn_prio(0, plain, XTHREAD_DEFAULT_PRIO);
	CHECK_OK(pthread_join(t, NULL));
	return 0;
}
