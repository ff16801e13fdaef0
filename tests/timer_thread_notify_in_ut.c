/*
 * timer_thread_notify_in_ut — timer_create(SIGEV_THREAD) runs its notify
 * function in a user thread of Weft's, once per expiry, with the value
 * given, while the other UTs keep running.
 *
 * Invariant:
 *  - a periodic 20 ms timer watched for 500 ms notifies between 10 and 26
 *    times (25 expiries; a late look merges some into overruns), each time
 *    with sigev_value; every expiry is accounted for: notifications plus
 *    their overruns are 25 give or take a period at either end;
 *  - each notification runs in a UT (weft_thread_stats_get accepts its
 *    pthread_self()), not the creator, detached, named as its creator was
 *    at timer_create; threads_created grew by at least one per
 *    notification;
 *  - a counting UT runs meanwhile (the timer's service UT waits parked);
 *  - the timer holds one descriptor: a close-on-exec timerfd, kept out of
 *    the lowest free number (the program's next open still gets it);
 *  - timer_delete returns with the descriptor closed and no UT of the
 *    timer's left; no notification comes after it.
 */
#include "timer_test.h"

#include <fcntl.h>

static pthread_t creator;
static volatile int notified, overruns, bad_value, not_ut, on_creator, bad_name, joinable;
static timer_t tm;

static void notify(union sigval v)
{
	if (v.sival_int != 4242)
		bad_value = 1;
	struct weft_thread_stats ts;
	if (weft_thread_stats_get(pthread_self(), &ts, sizeof ts) != 0)
		not_ut = 1;
	if (pthread_equal(pthread_self(), creator))
		on_creator = 1;
	char name[16] = "";
	pthread_getname_np(pthread_self(), name, sizeof name);
	if (strcmp(name, "tt-creator") != 0)
		bad_name = 1;
	pthread_attr_t a;
	int ds = -1;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getdetachstate(&a, &ds);
		pthread_attr_destroy(&a);
	}
	if (ds != PTHREAD_CREATE_DETACHED)
		joinable = 1;
	__atomic_add_fetch(&overruns, timer_getoverrun(tm), __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&notified, 1, __ATOMIC_SEQ_CST);
}

int main(void)
{
	creator = pthread_self();
	CHECK_OK(pthread_setname_np(creator, "tt-creator"));
	struct test_counter ctr = { 1, 0 };
	pthread_t cnt;
	CHECK_OK(pthread_create(&cnt, NULL, test_counting, &ctr));
	struct weft_stats before = test_stats();

	int probe = open("/dev/null", O_RDONLY);
	CHECK(probe >= 0);
	CHECK_OK(close(probe));
	CHECK_EQ(tt_timerfds(NULL), 0);
	tm = tt_make(CLOCK_MONOTONIC, notify, 4242, NULL);
	CHECK(((intptr_t)tm) < 0);               /* not a kernel timer id */
	CHECK_OK(pthread_setname_np(creator, "renamed"));   /* copied at create */

	/* one descriptor, close-on-exec, not the lowest free number */
	int tfd;
	CHECK_EQ(tt_timerfds(&tfd), 1);
	CHECK(tfd > probe);
	CHECK(fcntl(tfd, F_GETFD) & FD_CLOEXEC);
	int again = open("/dev/null", O_RDONLY);
	CHECK_EQ(again, probe);
	CHECK_OK(close(again));

	unsigned long counted = ctr.count;
	tt_arm(tm, 20 * TT_MS, 20 * TT_MS);
	tt_sleep_ms(500);
	int n = notified;
	CHECK(n >= 10 && n <= 26);
	int expiries = n + overruns;
	CHECK(expiries >= 23 && expiries <= 27);
	CHECK_EQ(bad_value, 0);
	CHECK_EQ(not_ut, 0);
	CHECK_EQ(on_creator, 0);
	CHECK_EQ(bad_name, 0);
	CHECK_EQ(joinable, 0);
	CHECK(ctr.count - counted >= 100);       /* the VP ran the counter meanwhile */
	struct weft_stats during = test_stats();
	CHECK(during.threads_created - before.threads_created >= (uint64_t)n + 1);

	CHECK_OK(timer_delete(tm));
	CHECK_EQ(tt_timerfds(NULL), 0);          /* closed before timer_delete returned */
	int after = notified;
	tt_sleep_ms(100);
	CHECK_EQ(notified, after);
	CHECK_EQ(tt_settle_live(before.threads_live, 10000),
		 before.threads_live);   /* main and the counter */

	ctr.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));
	return 0;
}
