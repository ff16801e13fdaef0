/*
 * sig_timers — the process's timers deliver to the right thread, and
 * SIGEV_THREAD runs its function in a thread of the library's own.
 *
 * Invariant:
 *  - alarm(1), setitimer(ITIMER_REAL, 50 ms) and timer_create(SIGEV_SIGNAL)
 *    deliver to the one thread that has the signal unmasked (it is parked,
 *    and others run): the handler's pthread_self() is that thread; the
 *    timer's si_code is SI_TIMER and its si_value the sigev_value given.
 *  - timer_create(SIGEV_THREAD): the notify function runs once per expiry
 *    with the sigev_value given, in a thread whose pthread_self() every
 *    pthread call accepts (pthread_getschedparam returns 0), other than
 *    the caller; under Weft it is a UT: weft_thread_stats_get accepts its
 *    handle and threads_created grew.
 *  - timer_create(SIGEV_THREAD_ID) with the tid that gettid() gave a thread:
 *    the handler runs on that thread, although another thread with the
 *    signal unmasked is running busy.  What this asserts under M:1: a UT
 *    that names itself by its own gettid() value gets the timer's signal.
 *    The kernel sees one tid for all UTs of a VP, so Weft must either give
 *    each UT its own gettid() value and translate, or send a
 *    SIGEV_THREAD_ID timer's signal to the UT that armed it (Mueller's rule
 *    3, "the thread which armed the timer"); either passes.
 */
#include "sig_test.h"

#include <semaphore.h>
#include <sys/time.h>

static sem_t sem;
static volatile int parked;

/* Unmask arg (a signal) and park until posted. */
static void *taker(void *arg)
{
	sig_mask1(SIG_UNBLOCK, (int)(intptr_t)arg);
	parked = 1;
	while (sem_wait(&sem) != 0)
		CHECK_EQ(errno, EINTR);
	return NULL;
}

static void expect_on(pthread_t t, int before, long within_ms, const char *what)
{
	if (!sig_wait_for(&hits, before + 1, within_ms)) {
		fprintf(stderr, "%s: no handler ran\n", what);
		exit(1);
	}
	if (!pthread_equal(hit_self, t)) {
		fprintf(stderr, "%s: the handler ran on another thread\n", what);
		exit(1);
	}
}

static pthread_t start_taker(int sig)
{
	pthread_t t;
	parked = 0;
	CHECK_OK(pthread_create(&t, NULL, taker, (void *)(intptr_t)sig));
	CHECK(sig_wait_for(&parked, 1, 2000));
	return t;
}

static void stop_taker(pthread_t t)
{
	CHECK_OK(sem_post(&sem));
	CHECK_OK(pthread_join(t, NULL));
}

/* ---- SIGEV_THREAD ---- */
static volatile int notified, notify_value, notify_sched_ok, notify_is_ut = -1;
static volatile pthread_t notify_self;

static void notify(union sigval v)
{
	struct sched_param sp;
	int pol;
	notify_self = pthread_self();
	notify_value = v.sival_int;
	notify_sched_ok = pthread_getschedparam(pthread_self(), &pol, &sp) == 0;
#ifndef SIG_NPTL
	struct weft_thread_stats ts;
	notify_is_ut = weft_thread_stats_get(pthread_self(), &ts, sizeof ts) == 0;
#endif
	__atomic_add_fetch(&notified, 1, __ATOMIC_SEQ_CST);
}

/* ---- SIGEV_THREAD_ID ---- */
static volatile int armed, stop_busy;

static void *arms_itself(void *arg)
{
	int sig = (int)(intptr_t)arg;
	sig_mask1(SIG_UNBLOCK, sig);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = sig;
	ev._sigev_un._tid = gettid();
	ev.sigev_value.sival_int = 77;
	timer_t tm;
	CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &tm));
	struct itimerspec its = { .it_value = { 0, 50 * SIG_MS } };
	int before = hits;
	CHECK_OK(timer_settime(tm, 0, &its, NULL));
	armed = 1;
	while (sem_wait(&sem) != 0)
		CHECK_EQ(errno, EINTR);
	CHECK_EQ(hits, before + 1);
	CHECK_OK(timer_delete(tm));
	return NULL;
}

static void *busy_unmasked(void *arg)
{
	sig_mask1(SIG_UNBLOCK, (int)(intptr_t)arg);
	while (!stop_busy)
		__asm__ volatile("" ::: "memory");
	return NULL;
}

int main(void)
{
	CHECK_OK(sem_init(&sem, 0, 0));
	int rt_sig = SIGRTMIN + 2, id_sig = SIGRTMIN + 3;
	sig_on(SIGALRM, on_record, SA_RESTART, 0);
	sig_on(rt_sig, on_record, SA_RESTART, 0);
	sig_on(id_sig, on_record, SA_RESTART, 0);
	sig_mask_list(SIG_BLOCK, (const int[]){ SIGALRM, rt_sig, id_sig, 0 });
	struct test_counter ctr = { 1, 0 };
	pthread_t cnt;
	CHECK_OK(pthread_create(&cnt, NULL, test_counting, &ctr));   /* others run */

	/* alarm */
	pthread_t t = start_taker(SIGALRM);
	int before = hits;
	alarm(1);
	expect_on(t, before, 3000, "alarm");
	stop_taker(t);

	/* setitimer(ITIMER_REAL) */
	t = start_taker(SIGALRM);
	before = hits;
	struct itimerval iv = { .it_value = { 0, 50000 } };
	CHECK_OK(setitimer(ITIMER_REAL, &iv, NULL));
	expect_on(t, before, 2000, "setitimer");
	stop_taker(t);

	/* timer_create(SIGEV_SIGNAL) */
	t = start_taker(rt_sig);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = rt_sig;
	ev.sigev_value.sival_int = 1234;
	timer_t tm;
	CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &tm));
	struct itimerspec its = { .it_value = { 0, 50 * SIG_MS } };
	before = hits;
	CHECK_OK(timer_settime(tm, 0, &its, NULL));
	expect_on(t, before, 2000, "timer_create SIGEV_SIGNAL");
	CHECK_EQ(hit_code, SI_TIMER);
	CHECK_EQ(hit_value, 1234);
	CHECK_OK(timer_delete(tm));
	stop_taker(t);

	/* timer_create(SIGEV_THREAD), three expiries */
	long created = sig_threads_created();
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = notify;
	ev.sigev_value.sival_int = 555;
	CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &tm));
	struct itimerspec per = { .it_value = { 0, 30 * SIG_MS }, .it_interval = { 0, 30 * SIG_MS } };
	CHECK_OK(timer_settime(tm, 0, &per, NULL));
	CHECK(sig_wait_for(&notified, 3, 3000));
	CHECK_OK(timer_delete(tm));
	CHECK_EQ(notify_value, 555);
	CHECK_EQ(notify_sched_ok, 1);
	CHECK(!pthread_equal(notify_self, pthread_self()));
#ifndef SIG_NPTL
	CHECK_EQ(notify_is_ut, 1);
	CHECK(sig_threads_created() > created);
#else
	(void)created;
#endif

	/* timer_create(SIGEV_THREAD_ID) naming the arming thread */
	pthread_t busy;
	CHECK_OK(pthread_create(&busy, NULL, busy_unmasked, (void *)(intptr_t)id_sig));
	armed = 0;
	before = hits;
	CHECK_OK(pthread_create(&t, NULL, arms_itself, (void *)(intptr_t)id_sig));
	CHECK(sig_wait_for(&armed, 1, 2000));
	expect_on(t, before, 2000, "timer_create SIGEV_THREAD_ID");
	CHECK_EQ(hit_code, SI_TIMER);
	CHECK_EQ(hit_value, 77);
	stop_taker(t);
	stop_busy = 1;
	CHECK_OK(pthread_join(busy, NULL));
	ctr.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));
	return 0;
}
