/* Deferred cancellation acts at every cancellation point: a UT blocked in
 * pthread_join (plain, timed, clock), pthread_cond_wait/timedwait/clockwait,
 * sem_wait/timedwait/clockwait, nanosleep, clock_nanosleep, usleep, sleep or
 * looping on pthread_testcancel is woken by pthread_cancel, runs its cleanup
 * handler and is joined with PTHREAD_CANCELED; a request made before the
 * point is reached acts at the point without blocking (even a sem_wait that
 * would not block).  A condition waiter holds its mutex again when its
 * handler runs, and a cancelled waiter does not swallow a signal.  Blocking
 * mutex locks and sem_trywait are not cancellation points. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

static pthread_mutex_t em;             /* error-checking: unlock tells who owns it */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static pthread_t sleeper;              /* joined by the join points */
static atomic_int reached, handler_ran, handler_owned_mutex;

static void far_future(clockid_t clk, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += 1000;
}

static void on_cancel(void *arg)
{
	handler_ran = 1;
	if (arg == &em)
		handler_owned_mutex = pthread_mutex_unlock(&em) == 0;
}

/* ---- the cancellation points, each called so that it blocks ---- */
static void p_join(void) { pthread_join(sleeper, NULL); }
static void p_timedjoin(void)
{
	struct timespec ts;
	far_future(CLOCK_REALTIME, &ts);
	pthread_timedjoin_np(sleeper, NULL, &ts);
}
static void p_clockjoin(void)
{
	struct timespec ts;
	far_future(CLOCK_MONOTONIC, &ts);
	pthread_clockjoin_np(sleeper, NULL, CLOCK_MONOTONIC, &ts);
}
static void p_sem_wait(void) { sem_wait(&sem); }
static void p_sem_timedwait(void)
{
	struct timespec ts;
	far_future(CLOCK_REALTIME, &ts);
	sem_timedwait(&sem, &ts);
}
static void p_sem_clockwait(void)
{
	struct timespec ts;
	far_future(CLOCK_MONOTONIC, &ts);
	sem_clockwait(&sem, CLOCK_MONOTONIC, &ts);
}
static void p_nanosleep(void)
{
	struct timespec ts = { 1000, 0 };
	nanosleep(&ts, NULL);
}
static void p_clock_nanosleep(void)
{
	struct timespec ts;
	far_future(CLOCK_MONOTONIC, &ts);
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}
static void p_usleep(void) { usleep(999999); }
static void p_sleep(void) { sleep(1000); }
static void p_testcancel(void)
{
	for (;;) {
		pthread_testcancel();
		sched_yield();
	}
}

static void (*const points[])(void) = {
	p_join, p_timedjoin, p_clockjoin, p_sem_wait, p_sem_timedwait, p_sem_clockwait,
	p_nanosleep, p_clock_nanosleep, p_usleep, p_sleep, p_testcancel,
};

struct job {
	void (*point)(void);
	int self_first;                 /* cancel itself before the point */
};

static void *at_point(void *arg)
{
	struct job *j = arg;
	pthread_cleanup_push(on_cancel, NULL);
	if (j->self_first)
		CHECK_OK(pthread_cancel(pthread_self()));
	reached = 1;
	j->point();
	pthread_cleanup_pop(0);
	return (void *)1;               /* not reached: the point acted */
}

static void *sleep_long(void *arg)
{
	sleep(1000);
	return NULL;
}

static void run(struct job *j)
{
	pthread_t t;
	void *ret = NULL;
	reached = handler_ran = 0;
	CHECK_OK(pthread_create(&t, NULL, at_point, j));
	while (!reached)
		sched_yield();
	sched_yield();                   /* let it block at the point */
	if (!j->self_first)
		CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(handler_ran);
}

static void every_point_blocked_and_pending(void)
{
	for (unsigned i = 0; i < sizeof points / sizeof points[0]; i++) {
		for (int self_first = 0; self_first < 2; self_first++) {
			struct job j = { points[i], self_first };
			run(&j);
		}
	}
	/* the cancelled joiners left the sleeper joinable */
	CHECK_OK(pthread_cancel(sleeper));
	void *ret;
	CHECK_OK(pthread_join(sleeper, &ret));
	CHECK(ret == PTHREAD_CANCELED);
}

/* sem_wait acts even with a unit free, and does not take it. */
static void *sem_wait_with_unit(void *arg)
{
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	sem_wait(&sem);
	pthread_cleanup_pop(0);
	return NULL;
}

static void sem_wait_acts_without_blocking(void)
{
	pthread_t t;
	void *ret;
	int v;
	handler_ran = 0;
	CHECK_OK(sem_post(&sem));
	CHECK_OK(pthread_create(&t, NULL, sem_wait_with_unit, NULL));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(handler_ran);
	CHECK_OK(sem_getvalue(&sem, &v));
	CHECK_EQ(v, 1);
	CHECK_OK(sem_wait(&sem));
}

/* ---- condition waits: the mutex is held when the handler runs ---- */
enum { WAIT_PLAIN, WAIT_TIMED, WAIT_CLOCK };

static void *cond_waiter(void *arg)
{
	int kind = (int)(long)arg;
	struct timespec ts;
	CHECK_OK(pthread_mutex_lock(&em));
	pthread_cleanup_push(on_cancel, &em);
	reached = 1;
	for (;;) {
		if (kind == WAIT_PLAIN) {
			pthread_cond_wait(&cv, &em);
		} else if (kind == WAIT_TIMED) {
			far_future(CLOCK_REALTIME, &ts);
			pthread_cond_timedwait(&cv, &em, &ts);
		} else {
			far_future(CLOCK_MONOTONIC, &ts);
			pthread_cond_clockwait(&cv, &em, CLOCK_MONOTONIC, &ts);
		}
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void cond_wait_relocks_before_handler(void)
{
	for (long kind = WAIT_PLAIN; kind <= WAIT_CLOCK; kind++) {
		pthread_t t;
		void *ret;
		reached = handler_ran = handler_owned_mutex = 0;
		CHECK_OK(pthread_create(&t, NULL, cond_waiter, (void *)kind));
		while (!reached)
			sched_yield();
		/* hold the mutex, so the cancelled waiter must wait for it */
		CHECK_OK(pthread_mutex_lock(&em));
		CHECK_OK(pthread_cancel(t));
		sched_yield();
		CHECK(!handler_ran);
		CHECK_OK(pthread_mutex_unlock(&em));
		CHECK_OK(pthread_join(t, &ret));
		CHECK(ret == PTHREAD_CANCELED);
		CHECK(handler_ran);
		CHECK(handler_owned_mutex);
	}
}

/* A cancelled waiter does not consume a signal meant for the others. */
static atomic_int woken;

static void *counting_waiter(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&em));
	pthread_cleanup_push(on_cancel, &em);
	reached++;
	while (!woken)
		CHECK_OK(pthread_cond_wait(&cv, &em));
	woken = 2;
	pthread_cleanup_pop(0);
	CHECK_OK(pthread_mutex_unlock(&em));
	return NULL;
}

static void cancelled_waiter_loses_no_signal(void)
{
	pthread_t first, second;
	void *ret;
	reached = woken = 0;
	CHECK_OK(pthread_create(&first, NULL, counting_waiter, NULL));
	CHECK_OK(pthread_create(&second, NULL, counting_waiter, NULL));
	while (reached < 2)
		sched_yield();
	CHECK_OK(pthread_cancel(first));
	CHECK_OK(pthread_mutex_lock(&em));
	woken = 1;
	CHECK_OK(pthread_cond_signal(&cv));
	CHECK_OK(pthread_mutex_unlock(&em));
	CHECK_OK(pthread_join(first, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_OK(pthread_join(second, &ret));
	CHECK(ret == NULL);
	CHECK_EQ(woken, 2);
}

/* Signalled (and moved onto the locked mutex) before the request: the
 * wait completes normally; the request acts at the next point. */
static atomic_int wait_result = -1;

static void *signalled_waiter(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&em));
	reached = 1;
	wait_result = pthread_cond_wait(&cv, &em);
	CHECK_OK(pthread_mutex_unlock(&em));
	pthread_testcancel();
	return NULL;
}

static void signalled_waiter_returns_then_acts(void)
{
	pthread_t t;
	void *ret;
	reached = 0;
	CHECK_OK(pthread_create(&t, NULL, signalled_waiter, NULL));
	while (!reached)
		sched_yield();
	CHECK_OK(pthread_mutex_lock(&em));
	CHECK_OK(pthread_cond_signal(&cv));
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_mutex_unlock(&em));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(wait_result, 0);
}

/* ---- not cancellation points ---- */
static atomic_int got_lock, trywait_result;

static void *mutex_locker(void *arg)
{
	reached = 1;
	CHECK_OK(pthread_mutex_lock(&em));
	got_lock = 1;
	CHECK_OK(pthread_mutex_unlock(&em));
	trywait_result = sem_trywait(&sem);
	pthread_testcancel();
	got_lock = 2;
	return NULL;
}

static void mutex_lock_and_trywait_are_not_points(void)
{
	pthread_t t;
	void *ret;
	reached = got_lock = 0;
	trywait_result = 1;
	CHECK_OK(pthread_mutex_lock(&em));
	CHECK_OK(pthread_create(&t, NULL, mutex_locker, NULL));
	while (!reached)
		sched_yield();
	CHECK_OK(pthread_cancel(t));
	sched_yield();
	CHECK_EQ(got_lock, 0);
	CHECK_OK(pthread_mutex_unlock(&em));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(got_lock, 1);
	CHECK_EQ(trywait_result, -1);
}

int main(void)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutex_init(&em, &a));
	CHECK_OK(sem_init(&sem, 0, 0));
	CHECK_OK(pthread_create(&sleeper, NULL, sleep_long, NULL));
	every_point_blocked_and_pending();
	sem_wait_acts_without_blocking();
	cond_wait_relocks_before_handler();
	cancelled_waiter_loses_no_signal();
	signalled_waiter_returns_then_acts();
	mutex_lock_and_trywait_are_not_points();
	return 0;
}
