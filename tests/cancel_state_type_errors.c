/* Cancel state and type: PTHREAD_CANCEL_DISABLE holds a request pending
 * across cancellation points until it is enabled again, and then (deferred)
 * it acts at the next point, not at the enabling call; with the
 * asynchronous type, enabling — or switching to asynchronous with a request
 * pending — acts at once.  The old values come back, NULL old pointers are
 * accepted, bad values are EINVAL, a dead handle is ESRCH, an exited but
 * unjoined thread can be cancelled (0, as glibc) and keeps its own return
 * value, and cancelling twice is harmless. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>

static atomic_int stage, handler_ran;

static void on_cancel(void *arg) { handler_ran = 1; }

static void *disabled_then_enabled(void *arg)
{
	int old;
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
	CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
	stage = 1;
	while (stage == 1)
		sched_yield();
	/* cancelled while disabled: points do not act */
	pthread_testcancel();
	usleep(1);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
	stage = 3;                          /* enabling (deferred) did not act */
	pthread_testcancel();
	stage = 4;
	pthread_cleanup_pop(0);
	return NULL;
}

static void disable_holds_request_until_next_point(void)
{
	pthread_t t;
	void *ret;
	stage = handler_ran = 0;
	CHECK_OK(pthread_create(&t, NULL, disabled_then_enabled, NULL));
	while (stage != 1)
		sched_yield();
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_cancel(t));           /* twice: no harm */
	stage = 2;
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(stage, 3);
	CHECK(handler_ran);
}

static void *enable_async_acts_at_once(void *arg)
{
	int old;
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL));
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
	CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
	CHECK_OK(pthread_cancel(pthread_self()));
	stage = 1;
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
	stage = 2;                               /* not reached */
	pthread_cleanup_pop(0);
	return NULL;
}

static void *async_type_acts_at_once(void *arg)
{
	int old;
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	stage = 1;
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
	stage = 2;                               /* not reached */
	pthread_cleanup_pop(0);
	return NULL;
}

static void *self_cancel_async(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	stage = 1;
	pthread_cancel(pthread_self());
	stage = 2;                               /* not reached */
	pthread_cleanup_pop(0);
	return NULL;
}

static void *self_cancel_deferred(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	stage = 1;                               /* deferred: goes on */
	pthread_testcancel();
	stage = 2;                               /* not reached */
	pthread_cleanup_pop(0);
	return NULL;
}

static void expect_cancelled_at_stage_1(void *(*fn)(void *))
{
	pthread_t t;
	void *ret;
	stage = handler_ran = 0;
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(stage, 1);
	CHECK(handler_ran);
}

static void *returns_7(void *arg) { return (void *)7; }

static void error_codes(void)
{
	int old = -1;
	CHECK_EQ(pthread_setcancelstate(2, &old), EINVAL);
	CHECK_EQ(pthread_setcancelstate(-1, NULL), EINVAL);
	CHECK_EQ(pthread_setcanceltype(2, &old), EINVAL);
	CHECK_EQ(pthread_setcanceltype(-1, NULL), EINVAL);
	CHECK_EQ(old, -1);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old));
	CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);

	pthread_t t;
	void *ret;
	CHECK_OK(pthread_create(&t, NULL, returns_7, NULL));
	usleep(1000);                              /* it exits: a zombie */
	CHECK_OK(pthread_cancel(t));               /* glibc: 0, no effect */
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == (void *)7);
	CHECK_EQ(pthread_cancel(t), ESRCH);        /* joined: dead handle */
	CHECK_EQ(pthread_cancel((pthread_t)0), ESRCH);
	CHECK_EQ(pthread_cancel((pthread_t)0x7fffffff00001234ull), ESRCH);
}

int main(void)
{
	disable_holds_request_until_next_point();
	expect_cancelled_at_stage_1(enable_async_acts_at_once);
	expect_cancelled_at_stage_1(async_type_acts_at_once);
	expect_cancelled_at_stage_1(self_cancel_async);
	expect_cancelled_at_stage_1(self_cancel_deferred);
	error_codes();
	return 0;
}
