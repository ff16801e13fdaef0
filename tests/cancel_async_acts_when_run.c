/* Asynchronous cancellation acts as soon as the target runs again: a UT
 * spinning in its own code (switched out by the time-slice tick) is
 * cancelled when the tick's trampoline returns into it; a UT that called
 * sched_yield is cancelled when that call returns; a UT blocked where no
 * cancellation point is (a mutex lock) is woken and cancelled at once.
 * Cleanup handlers run and the joiner sees PTHREAD_CANCELED each time.  The
 * spinning case needs time slicing (libweft.so) and is skipped without. */
#include "preempt_test.h"
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>

static atomic_int started, handler_ran;
static atomic_ulong spins;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void on_cancel(void *arg) { handler_ran = 1; }

static void *yielder(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	started = 1;
	for (;;)
		sched_yield();
	pthread_cleanup_pop(0);
	return NULL;
}

static void *mutex_waiter(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	started = 1;
	pthread_mutex_lock(&m);                  /* blocks: main holds it */
	started = 2;                             /* not reached */
	pthread_cleanup_pop(0);
	return NULL;
}

static void *spinner(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	started = 1;
	for (;;)
		spins++;                         /* no Weft call at all */
	pthread_cleanup_pop(0);
	return NULL;
}

static void cancel_and_join(pthread_t t)
{
	void *ret;
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(handler_ran);
}

static pthread_t start(void *(*fn)(void *))
{
	pthread_t t;
	started = handler_ran = 0;
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	while (!started)
		sched_yield();
	return t;
}

int main(void)
{
	cancel_and_join(start(yielder));

	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t w = start(mutex_waiter);
	sched_yield();
	cancel_and_join(w);
	CHECK_EQ(started, 1);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_trylock(&m));     /* the waiter never got it */
	CHECK_OK(pthread_mutex_unlock(&m));

	preempt_test_slice(1000000);             /* 1 ms */
	pthread_t s = start(spinner);
	unsigned long before = spins;
	usleep(20000);                           /* the spinner runs meanwhile */
	CHECK(spins != before);
	cancel_and_join(s);
	return 0;
}
