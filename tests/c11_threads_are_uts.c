/*
 * c11_threads_are_uts — C11 <threads.h> runs on Weft's threads.
 *
 * Asserted: a thrd_create thread is a UT (weft_thread_stats_get accepts
 * thrd_current(); threads_created grew), other UTs run while it waits,
 * thrd_join gives its int result (negative ones too) and thrd_exit's;
 * it starts with its creator's signal mask, or the default attribute's
 * (pthread_setattr_default_np), as glibc's C11 threads do; mtx_* and
 * cnd_* hand a counter back and forth exactly; a recursive mtx relocks;
 * the error codes are C11's (thrd_busy from mtx_trylock, thrd_timedout
 * from mtx_timedlock and cnd_timedwait, thrd_error for a bad mtx type and
 * a second join); tss values are per thread and their destructor runs at
 * thread exit; call_once runs once across threads; thrd_sleep sleeps.
 */
#include "check.h"

#include <signal.h>
#include <stdint.h>
#include <threads.h>
#include <time.h>
#include <weft.h>
#include <stdatomic.h>

static mtx_t m;
static cnd_t c;
static int turn, rounds_done;
enum { ROUNDS = 10000 };

static int player(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_EQ(mtx_lock(&m), thrd_success);
		while (turn != me)
			CHECK_EQ(cnd_wait(&c, &m), thrd_success);
		turn = !me;
		rounds_done++;
		CHECK_EQ(cnd_broadcast(&c), thrd_success);
		CHECK_EQ(mtx_unlock(&m), thrd_success);
	}
	return 100 + me;
}

static int is_ut(void *arg)
{
	(void)arg;
	struct weft_thread_stats s;
	CHECK_OK(weft_thread_stats_get(thrd_current(), &s, sizeof s));
	CHECK(!thrd_equal(thrd_current(), *(thrd_t *)arg));
	return -7;
}

static int exits(void *arg)
{
	(void)arg;
	thrd_exit(42);
}

static int usr1_masked(void *arg)
{
	(void)arg;
	sigset_t now;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &now));
	return sigismember(&now, SIGUSR1) * 2 + sigismember(&now, SIGHUP);
}

static tss_t key;
static atomic_int dtor_runs;   /* each ending UT's destructor adds to it */
static void dtor(void *v) { CHECK(v == (void *)&key); dtor_runs++; }

static int uses_tss(void *arg)
{
	(void)arg;
	CHECK(tss_get(key) == NULL);
	CHECK_EQ(tss_set(key, &key), thrd_success);
	CHECK(tss_get(key) == (void *)&key);
	return 0;
}

static once_flag once = ONCE_FLAG_INIT;
static int once_runs;
static void init_once(void) { once_runs++; }
static int calls_once(void *arg) { (void)arg; call_once(&once, init_once); return 0; }

static atomic_int spins;
static int spinner(void *arg) { (void)arg; while (!spins) thrd_yield(); return 0; }

int main(void)
{
	struct weft_stats st0, st1;
	CHECK_OK(weft_stats_get(&st0, sizeof st0));
	thrd_t main_t = thrd_current(), t, u;
	CHECK_EQ(thrd_create(&t, is_ut, &main_t), thrd_success);
	int res = 0;
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, -7);
	CHECK_OK(weft_stats_get(&st1, sizeof st1));
	CHECK(st1.threads_created > st0.threads_created);
	CHECK_EQ(thrd_join(t, &res), thrd_error);             /* already joined */

	CHECK_EQ(thrd_create(&t, exits, NULL), thrd_success);
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, 42);

	/* a mutex and a condition, two players, exact */
	CHECK_EQ(mtx_init(&m, mtx_plain), thrd_success);
	CHECK_EQ(cnd_init(&c), thrd_success);
	CHECK_EQ(thrd_create(&t, player, (void *)0), thrd_success);
	CHECK_EQ(thrd_create(&u, player, (void *)1), thrd_success);
	int r0, r1;
	CHECK_EQ(thrd_join(t, &r0), thrd_success);
	CHECK_EQ(thrd_join(u, &r1), thrd_success);
	CHECK_EQ(r0 + r1, 201);
	CHECK_EQ(rounds_done, 2 * ROUNDS);

	/* error codes */
	CHECK_EQ(mtx_init(&m, 12345), thrd_error);
	CHECK_EQ(mtx_init(&m, mtx_timed), thrd_success);
	CHECK_EQ(mtx_lock(&m), thrd_success);
	CHECK_EQ(thrd_create(&t, spinner, NULL), thrd_success);   /* runs while we wait */
	struct timespec abs;
	CHECK_OK(clock_gettime(CLOCK_REALTIME, &abs));
	abs.tv_nsec += 20000000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	CHECK_EQ(cnd_timedwait(&c, &m, &abs), thrd_timedout);
	spins = 1;
	CHECK_EQ(thrd_join(t, NULL), thrd_success);
	mtx_t r;
	CHECK_EQ(mtx_init(&r, mtx_plain | mtx_recursive), thrd_success);
	CHECK_EQ(mtx_lock(&r), thrd_success);
	CHECK_EQ(mtx_lock(&r), thrd_success);                   /* recursive */
	CHECK_EQ(mtx_unlock(&r), thrd_success);
	CHECK_EQ(mtx_unlock(&r), thrd_success);
	mtx_destroy(&r);
	CHECK_EQ(mtx_unlock(&m), thrd_success);
	mtx_destroy(&m);
	cnd_destroy(&c);

	/* signal masks: the creator's, or the default attribute's */
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr1, &old));
	CHECK_EQ(thrd_create(&t, usr1_masked, NULL), thrd_success);
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, 2);                                     /* SIGUSR1 inherited */
	pthread_attr_t a;
	sigset_t hup;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setsigmask_np(&a, &hup));
	CHECK_OK(pthread_setattr_default_np(&a));
	CHECK_EQ(thrd_create(&t, usr1_masked, NULL), thrd_success);
	CHECK_EQ(thrd_join(t, &res), thrd_success);
	CHECK_EQ(res, 1);                                     /* the default's SIGHUP only */
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_setattr_default_np(&a));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &old, NULL));

	/* tss and call_once */
	CHECK_EQ(tss_create(&key, dtor), thrd_success);
	thrd_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(thrd_create(&th[i], i % 2 ? uses_tss : calls_once, NULL), thrd_success);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(thrd_join(th[i], NULL), thrd_success);
	CHECK_EQ(dtor_runs, 2);
	CHECK_EQ(once_runs, 1);
	CHECK(tss_get(key) == NULL);
	tss_delete(key);

	/* thrd_sleep */
	struct timespec t0, t1, nap = { 0, 10000000 };
	CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t0));
	CHECK_EQ(thrd_sleep(&nap, NULL), 0);
	CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &t1));
	int64_t ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
	CHECK(ns >= 10000000 && ns < 1000000000);
	return 0;
}
