/*
 * timer_thread_overrun — a SIGEV_THREAD timer notifies at most once per
 * look at its expirations; the ones that piled up meanwhile are that
 * notification's overrun (timer_getoverrun), as for a queued timer signal.
 *
 * Invariant:
 *  - a 1 ms periodic timer while main computes for 100 ms without a call
 *    into Weft: far fewer notifications than expiries, some notification
 *    has an overrun of at least 5, and notifications plus overruns account
 *    for every expiry (in one of three tries: see piled_up);
 *  - once main parks, notifications come one per expiry again;
 *  - notifications do not wait for each other: with a notify function
 *    that sleeps 20 ms and a 2 ms period, several run at once;
 *  - timer_settime resets the overrun to 0.
 */
#include "timer_test.h"

#define MAXN 4096
static timer_t tm;
static volatile int n;
static int over[MAXN];

static void record(union sigval v)
{
	(void)v;
	int i = __atomic_fetch_add(&n, 1, __ATOMIC_SEQ_CST);
	if (i < MAXN)
		over[i] = timer_getoverrun(tm);
}

static volatile int running, most_at_once, slow_done;

static void slow(union sigval v)
{
	(void)v;
	int now = __atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	if (now > most_at_once)
		most_at_once = now;
	tt_sleep_ms(20);
	__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&slow_done, 1, __ATOMIC_SEQ_CST);
}

/* One try: a 1 ms period while main computes for 100 ms without a call
 * into Weft, then parks for 20 ms.  The service UT looks at the timer only
 * when the VP idles or the poller's 10 ms quantum comes (or never, while
 * the tick cannot interrupt main): piles of about 10 expiries, or one of
 * 100.  The notify UTs run at SCHED_FIFO 10, before main, so each reads
 * its own overrun: POSIX gives the most recent notification's, and a
 * notify UT that ran after the next look would read that one's; three
 * tries allow for the rare look made before a notify UT ran. */
static bool piled_up(void)
{
	n = 0;
	int64_t t0 = test_now_ns();
	tt_arm(tm, TT_MS, TT_MS);
	while (test_now_ns() - t0 < 100 * TT_MS)
		for (volatile int k = 0; k < 20000; k++)
			;                               /* the program's own code */
	tt_sleep_ms(20);
	struct itimerspec zero = { 0 };
	CHECK_OK(timer_settime(tm, 0, &zero, NULL));
	CHECK_EQ(timer_getoverrun(tm), 0);       /* settime resets it */
	long expiries = (test_now_ns() - t0) / TT_MS;
	int got = n;
	CHECK(got > 0 && got < MAXN);
	CHECK(got < expiries * 2 / 3);           /* one notification per look */
	long accounted = 0;
	int most = 0;
	for (int i = 0; i < got; i++) {
		accounted += 1 + over[i];
		if (over[i] > most)
			most = over[i];
	}
	return most >= 5 && accounted >= expiries * 8 / 10 && accounted <= expiries + 2;
}

int main(void)
{
	pthread_attr_t fifo;
	struct sched_param sp = { .sched_priority = 10 };
	CHECK_OK(pthread_attr_init(&fifo));
	CHECK_OK(pthread_attr_setinheritsched(&fifo, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&fifo, SCHED_FIFO));
	CHECK_OK(pthread_attr_setschedparam(&fifo, &sp));
	tm = tt_make(CLOCK_MONOTONIC, record, 0, &fifo);
	CHECK_OK(pthread_attr_destroy(&fifo));
	int tries = 0;
	while (!piled_up())
		CHECK(++tries < 3);
	struct itimerspec zero = { 0 };

	/* parked: one notification per expiry, a 10 ms period over 200 ms */
	n = 0;
	tt_arm(tm, 10 * TT_MS, 10 * TT_MS);
	tt_sleep_ms(205);
	CHECK_OK(timer_settime(tm, 0, &zero, NULL));
	CHECK(n >= 15 && n <= 21);
	CHECK_OK(timer_delete(tm));

	/* notifications overlap */
	timer_t s = tt_make(CLOCK_MONOTONIC, slow, 0, NULL);
	tt_arm(s, 2 * TT_MS, 2 * TT_MS);
	tt_sleep_ms(60);
	CHECK_OK(timer_delete(s));
	CHECK(most_at_once >= 2);
	int64_t end = test_now_ns() + 2000 * TT_MS;
	while (running && test_now_ns() < end)
		tt_sleep_ms(5);
	CHECK_EQ(running, 0);
	CHECK(slow_done >= 2);
	return 0;
}
