/*
 * mn_async_cancel_running_elsewhere — an asynchronous cancel of a UT that
 * runs its own code on another VP when the request comes (it is armed,
 * not woken) acts before that UT blocks where no cancellation point is:
 * it calls pthread_mutex_lock on a mutex main holds, and must be cancelled
 * there, not left parked for ever (the park acts on the armed request:
 * runtime/park.c).  Many rounds, so the request lands at every point
 * between the flag and the lock.  Under one VP the target is preempted by
 * the tick while it spins and acts when the trampoline returns into it.
 */
#include "../preempt_test.h"

#include <sched.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int spinning, go, handler_ran;

static void on_cancel(void *arg) { __atomic_store_n(&handler_ran, 1, __ATOMIC_RELEASE); }

static void *target(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	__atomic_store_n(&spinning, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;                                /* its own code, no Weft call */
	pthread_mutex_lock(&m);                 /* held by main: blocks, unless cancelled */
	pthread_cleanup_pop(0);
	return (void *)1;
}

int main(void)
{
	preempt_test_slice(1000000);            /* one VP: the tick lets main in */
	long rounds = test_iters(2000);
	for (long i = 0; i < rounds; i++) {
		spinning = go = handler_ran = 0;
		CHECK_OK(pthread_mutex_lock(&m));
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, target, NULL));
		while (!__atomic_load_n(&spinning, __ATOMIC_ACQUIRE))
			sched_yield();
		if (i & 1) {
			CHECK_OK(pthread_cancel(t));    /* armed while it spins ... */
			__atomic_store_n(&go, 1, __ATOMIC_RELEASE);   /* ... then it locks */
		} else {
			__atomic_store_n(&go, 1, __ATOMIC_RELEASE);   /* it may be parked already */
			CHECK_OK(pthread_cancel(t));
		}
		void *r;
		CHECK_OK(pthread_join(t, &r));
		CHECK(r == PTHREAD_CANCELED);
		CHECK(__atomic_load_n(&handler_ran, __ATOMIC_ACQUIRE));
		CHECK_OK(pthread_mutex_unlock(&m));
		CHECK_OK(pthread_mutex_trylock(&m));   /* the target never got it */
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	return 0;
}
