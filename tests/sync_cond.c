/* Condition variables: 1,000,000 ping-pong round trips with no lost
 * wake-up, broadcast wakes every one of N waiters (and the mutex then goes
 * to them one at a time), signal wakes the highest-priority waiter, timed
 * waits on both clocks return ETIMEDOUT no earlier than the deadline and
 * with the mutex held, and the error codes. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* NULL the compiler cannot see through (glibc's headers declare these
 * nonnull); PASSES_NULL keeps UBSan's nonnull check out of the callers. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* ---- ping-pong ---- */
static pthread_cond_t ping = PTHREAD_COND_INITIALIZER, pong = PTHREAD_COND_INITIALIZER;
static long turn;              /* even: ping's move, odd: pong's */
static long rounds;

static void *ponger(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	for (long i = 0; i < rounds; i++) {
		while (!(turn & 1))
			CHECK_OK(pthread_cond_wait(&pong, &m));
		turn++;
		CHECK_OK(pthread_cond_signal(&ping));
	}
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void cond_ping_pong(void)
{
	rounds = test_iters(1000000);
	turn = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, ponger, NULL));
	CHECK_OK(pthread_mutex_lock(&m));
	for (long i = 0; i < rounds; i++) {
		while (turn & 1)
			CHECK_OK(pthread_cond_wait(&ping, &m));
		turn++;
		CHECK_OK(pthread_cond_signal(&pong));
	}
	while (turn != 2 * rounds)
		CHECK_OK(pthread_cond_wait(&ping, &m));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(turn, 2 * rounds);
}

/* ---- broadcast ---- */
#define N 64
/* C11 atomics: go is set without the mutex too (below) */
static atomic_int go, woke, inside, max_inside;

static void *wait_for_go(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!go)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	woke++;
	inside++;
	if (inside > max_inside)
		max_inside = inside;
	sched_yield();                 /* holding m: nobody else may be in here */
	inside--;
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void cond_broadcast_wakes_all(void)
{
	pthread_t t[N];
	go = woke = inside = max_inside = 0;
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], NULL, wait_for_go, NULL));
	test_settle();                 /* all N park on cv */
	CHECK_OK(pthread_mutex_lock(&m));
	go = 1;
	CHECK_OK(pthread_cond_broadcast(&cv));
	CHECK_OK(pthread_cond_destroy(&cv));   /* no waiter left on cv itself */
	CHECK_OK(pthread_cond_init(&cv, NULL));
	CHECK_EQ(woke, 0);
	CHECK_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(woke, N);
	CHECK_EQ(max_inside, 1);
	/* broadcast without holding the mutex, the mutex free */
	go = woke = 0;
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], NULL, wait_for_go, NULL));
	test_settle();
	go = 1;
	CHECK_OK(pthread_cond_broadcast(&cv));
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(woke, N);
	CHECK_EQ(max_inside, 1);
}

/* ---- signal by priority ---- */
static atomic_int order[8], norder;   /* read by main without the mutex */
static int tokens;

static void *wait_token(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!tokens)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	tokens--;
	order[norder++] = (int)(intptr_t)arg;
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void cond_signal_wakes_highest_priority(void)
{
	const int prio[] = { 3, 7, 3, 7, 1 };
	const int want[] = { 2, 4, 1, 3, 5 };
	pthread_t t[5];
	norder = 0;
	tokens = 0;
	/* Each runs and parks before the next is made: on one VP it outranks
	 * main and runs at once; with several it may start on another VP, and
	 * two could otherwise park out of creation order (FIFO within a level
	 * is by arrival). */
	for (int i = 0; i < 5; i++) {
		uint64_t parks = test_stats().parks;
		t[i] = test_spawn_prio(prio[i], wait_token, i + 1);
		test_await_park(parks);        /* on cv: nothing else parks */
		test_settle();
	}
	for (int i = 0; i < 5; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		tokens++;
		CHECK_OK(pthread_cond_signal(&cv));
		CHECK_OK(pthread_mutex_unlock(&m));   /* the woken one runs now */
		test_await_on_many_vps(&norder, i + 1);   /* (or on the other VP) */
		CHECK_EQ(norder, i + 1);
	}
	for (int i = 0; i < 5; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		CHECK_EQ(order[i], want[i]);
	}
}

/* ---- timed waits ---- */
static int64_t ns_of(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cond_timed_waits_respect_deadline(void)
{
	pthread_condattr_t a;
	pthread_cond_t mono;
	clockid_t clk;
	CHECK_OK(pthread_condattr_init(&a));
	CHECK_OK(pthread_condattr_getclock(&a, &clk));
	CHECK_EQ(clk, CLOCK_REALTIME);
	CHECK_OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
	CHECK_OK(pthread_condattr_getclock(&a, &clk));
	CHECK_EQ(clk, CLOCK_MONOTONIC);
	CHECK_OK(pthread_cond_init(&mono, &a));
	CHECK_OK(pthread_condattr_destroy(&a));
	const long wait_ns = 20 * 1000 * 1000;
	for (int i = 0; i < 4; i++) {
		clockid_t c = (i & 1) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		struct timespec ts = test_time_in(c, wait_ns);
		int64_t deadline = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		int64_t t0 = test_now_ns();
		CHECK_OK(pthread_mutex_lock(&m));
		int r;
		if (i < 2)
			r = pthread_cond_timedwait(c == CLOCK_MONOTONIC ? &mono : &cv, &m, &ts);
		else
			r = pthread_cond_clockwait(&cv, &m, c, &ts);
		CHECK_EQ(r, ETIMEDOUT);
		CHECK(ns_of(c) >= deadline);
		CHECK_EQ(pthread_mutex_trylock(&m), EBUSY);   /* held again */
		CHECK_OK(pthread_mutex_unlock(&m));
		CHECK(test_now_ns() - t0 < 100 * wait_ns);   /* generous: loaded machines */
	}
	/* a deadline already past times out at once, mutex held */
	struct timespec past = { 1, 0 };
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_EQ(pthread_cond_timedwait(&cv, &m, &past), ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_cond_destroy(&mono));
}

/* ---- errors ---- */
static void *wait_forever_on_cv(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (!go)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

PASSES_NULL static void cond_errors(void)
{
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, other = PTHREAD_MUTEX_INITIALIZER;
	pthread_condattr_t a;
	struct timespec bad = { 0, 1000000000 };
	CHECK_EQ(pthread_cond_wait(&cv, &e), EPERM);             /* not locked */
	CHECK_OK(pthread_mutex_lock(&e));
	CHECK_EQ(pthread_cond_timedwait(&cv, &e, &bad), EINVAL);
	CHECK_EQ(pthread_cond_clockwait(&cv, &e, CLOCK_THREAD_CPUTIME_ID, &bad), EINVAL);
	CHECK_EQ(pthread_cond_timedwait(&cv, &e, NUL(const struct timespec *)), EINVAL);
	CHECK_OK(pthread_mutex_unlock(&e));
	CHECK_EQ(pthread_cond_wait(NUL(pthread_cond_t *), &m), EINVAL);
	CHECK_EQ(pthread_cond_wait(&cv, NUL(pthread_mutex_t *)), EINVAL);
	CHECK_EQ(pthread_cond_signal(NUL(pthread_cond_t *)), EINVAL);
	CHECK_EQ(pthread_cond_broadcast(NUL(pthread_cond_t *)), EINVAL);
	CHECK_EQ(pthread_cond_init(NUL(pthread_cond_t *), NULL), EINVAL);
	CHECK_OK(pthread_condattr_init(&a));
	CHECK_EQ(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	CHECK_EQ(pthread_condattr_setpshared(&a, 3), EINVAL);
	CHECK_OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_condattr_destroy(&a));
	/* destroy while waited on: EBUSY, and the waiter still wakes */
	go = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, wait_forever_on_cv, NULL));
	test_settle();
	CHECK_EQ(pthread_cond_destroy(&cv), EBUSY);
	CHECK_OK(pthread_mutex_lock(&other));
	CHECK_EQ(pthread_cond_wait(&cv, &other), EINVAL);         /* second mutex */
	CHECK_OK(pthread_mutex_unlock(&other));
	CHECK_OK(pthread_mutex_lock(&m));
	go = 1;
	CHECK_OK(pthread_cond_signal(&cv));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_cond_destroy(&cv));
	CHECK_OK(pthread_cond_init(&cv, NULL));
}

/* A recursive mutex locked 3 times is released fully by the wait and
 * comes back locked 3 times. */
static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void *signal_after_lock(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&rec));
	go = 1;
	CHECK_OK(pthread_cond_signal(&cv));
	CHECK_OK(pthread_mutex_unlock(&rec));
	return NULL;
}

static void cond_wait_releases_recursive_mutex_fully(void)
{
	go = 0;
	pthread_t t;
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_mutex_lock(&rec));
	CHECK_OK(pthread_create(&t, NULL, signal_after_lock, NULL));
	while (!go)
		CHECK_OK(pthread_cond_wait(&cv, &rec));
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_mutex_unlock(&rec));
	CHECK_EQ(pthread_mutex_unlock(&rec), EPERM);
	CHECK_OK(pthread_join(t, NULL));
}

int main(void)
{
	cond_ping_pong();
	cond_broadcast_wakes_all();
	cond_signal_wakes_highest_priority();
	cond_timed_waits_respect_deadline();
	cond_errors();
	cond_wait_releases_recursive_mutex_fully();
	return 0;
}
