/*
 * timer_thread_delete_fork — deleting SIGEV_THREAD timers, many of them,
 * more than the descriptors allow, and fork.
 *
 * Invariant:
 *  - timer_delete while a notification runs returns at once (the notify UT
 *    finishes normally, and no notification follows); timer_delete from a
 *    timer's own notify function succeeds;
 *  - 200 timers, each fired once with its own value, notify each value
 *    exactly once; deleting them all leaves no descriptor and no UT;
 *  - four UTs that make 320 timers at once get distinct, valid handles;
 *  - out of descriptors, timer_create says EAGAIN (not EMFILE) and leaves
 *    nothing behind;
 *  - in a forked child the parent's timers do not exist (EINVAL for each
 *    call), the child holds none of their descriptors and gets none of
 *    their notifications, and can make timers of its own; meanwhile the
 *    parent's periodic timer keeps notifying at its rate (the child took
 *    none of its expirations).
 */
#include "timer_test.h"

#include <sys/resource.h>

static volatile int started, finished, after_delete;
static volatile int deleting;

static void slow(union sigval v)
{
	(void)v;
	if (deleting)
		after_delete = 1;
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	tt_sleep_ms(100);
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
}

static timer_t self_timer;
static volatile int self_deleted = -1;

static void delete_myself(union sigval v)
{
	(void)v;
	self_deleted = timer_delete(self_timer);
}

#define MANY 200
static volatile int hits[MANY];

static void hit(union sigval v) { __atomic_add_fetch(&hits[v.sival_int], 1, __ATOMIC_SEQ_CST); }

static volatile int ticks;

static void tick(union sigval v)
{
	(void)v;
	__atomic_add_fetch(&ticks, 1, __ATOMIC_SEQ_CST);
}

static void delete_cases(void)
{
	uint64_t live = test_stats().threads_live;
	timer_t tm = tt_make(CLOCK_MONOTONIC, slow, 0, NULL);
	tt_arm(tm, 5 * TT_MS, 5 * TT_MS);
	CHECK(tt_wait_for(&started, 1, 3000));
	deleting = 1;
	int64_t t0 = test_now_ns();
	CHECK_OK(timer_delete(tm));
	CHECK(test_now_ns() - t0 < 50 * TT_MS);  /* not held up by the notification */
	int s = started;
	CHECK(tt_wait_for(&finished, s, 3000));
	tt_sleep_ms(30);
	CHECK_EQ(started, s);
	CHECK_EQ(after_delete, 0);

	self_timer = tt_make(CLOCK_MONOTONIC, delete_myself, 0, NULL);
	tt_arm(self_timer, 2 * TT_MS, 2 * TT_MS);
	int64_t end = test_now_ns() + 3000 * TT_MS;
	while (self_deleted < 0 && test_now_ns() < end)
		tt_sleep_ms(1);
	CHECK_EQ(self_deleted, 0);
	CHECK_FAILS(timer_delete(self_timer), EINVAL);
	/* Both notify UTs end: the slow one finished, the self-deleting one
	 * returned (ci: a WEFT_VPS=2 run saw one still exiting here). */
	CHECK_EQ(tt_settle_live(live, 10000), live);
}

static void many(void)
{
	struct weft_stats before = test_stats();
	static timer_t tms[MANY];
	for (int i = 0; i < MANY; i++) {
		tms[i] = tt_make(CLOCK_MONOTONIC, hit, i, NULL);
		tt_arm(tms[i], (5 + i % 10) * TT_MS, 0);
	}
	CHECK_EQ(tt_timerfds(NULL), MANY);
	int64_t end = test_now_ns() + 5000 * TT_MS;
	for (int i = 0; i < MANY; i++)
		while (!hits[i] && test_now_ns() < end)
			tt_sleep_ms(1);
	tt_sleep_ms(30);
	for (int i = 0; i < MANY; i++)
		CHECK_EQ(hits[i], 1);
	for (int i = 0; i < MANY; i++)
		CHECK_OK(timer_delete(tms[i]));
	CHECK_EQ(tt_timerfds(NULL), 0);
	CHECK_EQ(tt_settle_live(before.threads_live, 10000), before.threads_live);
}

/* Four UTs make and delete timers at once, past the table's first chunk
 * of 256 slots (a creator may lose the processor while its timer's UT is
 * made: under WEFT_SCHED=random another creator runs meanwhile). */
#define RACERS 4
#define EACH 80

static void *racer(void *arg)
{
	timer_t *mine = arg;
	for (int i = 0; i < EACH; i++) {
		mine[i] = tt_make(CLOCK_MONOTONIC, hit, 0, NULL);
		if (i % 8 == 7)
			sched_yield();
	}
	for (int i = 0; i < EACH; i++)
		for (int j = 0; j < EACH; j++)
			CHECK(i == j || mine[i] != mine[j]);
	return NULL;
}

static void racing_creators(void)
{
	static timer_t made[RACERS][EACH];
	pthread_t t[RACERS];
	for (int r = 0; r < RACERS; r++)
		CHECK_OK(pthread_create(&t[r], NULL, racer, made[r]));
	for (int r = 0; r < RACERS; r++)
		CHECK_OK(pthread_join(t[r], NULL));
	CHECK_EQ(tt_timerfds(NULL), RACERS * EACH);
	for (int r = 0; r < RACERS; r++)
		for (int i = 0; i < EACH; i++) {
			struct itimerspec cur;
			CHECK_OK(timer_gettime(made[r][i], &cur));
			CHECK_OK(timer_delete(made[r][i]));
		}
	CHECK_EQ(tt_timerfds(NULL), 0);
}

static void out_of_descriptors(void)
{
	struct rlimit old, low;
	CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = 64;
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
	timer_t tms[64];
	int made = 0;
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = hit;
	while (made < 64 && timer_create(CLOCK_MONOTONIC, &ev, &tms[made]) == 0)
		made++;
	CHECK(made > 0 && made < 64);
	CHECK_EQ(errno, EAGAIN);
	struct weft_stats full = test_stats();
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, &tms[made]), EAGAIN);
	CHECK_EQ(test_stats().threads_live, full.threads_live);
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
	CHECK_EQ(tt_timerfds(NULL), made);        /* the failures left none */
	while (made)
		CHECK_OK(timer_delete(tms[--made]));
	CHECK_EQ(tt_timerfds(NULL), 0);
}

static void child(void *arg)
{
	timer_t parents = *(timer_t *)arg;
	struct itimerspec its = { .it_value = { 1, 0 } }, cur;
	CHECK_FAILS(timer_gettime(parents, &cur), EINVAL);
	CHECK_FAILS(timer_settime(parents, 0, &its, NULL), EINVAL);
	CHECK_FAILS(timer_getoverrun(parents), EINVAL);
	CHECK_FAILS(timer_delete(parents), EINVAL);
	CHECK_EQ(tt_timerfds(NULL), 0);
	int seen = ticks;
	tt_sleep_ms(100);
	CHECK_EQ(ticks, seen);                   /* no notification of the parent's */
	timer_t mine = tt_make(CLOCK_MONOTONIC, tick, 0, NULL);
	tt_arm(mine, 5 * TT_MS, 5 * TT_MS);
	CHECK(tt_wait_for(&ticks, seen + 3, 3000));
	CHECK_OK(timer_delete(mine));
	CHECK_EQ(tt_timerfds(NULL), 0);
}

static void fork_case(void)
{
	timer_t tm = tt_make(CLOCK_MONOTONIC, tick, 0, NULL);
	tt_arm(tm, 10 * TT_MS, 10 * TT_MS);
	CHECK(tt_wait_for(&ticks, 2, 3000));
	int64_t t0 = test_now_ns();
	int before = ticks;
	char err[512];
	int st = test_in_child(child, &tm, err, sizeof err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child failed (status %#x): %s\n", st, err);
		exit(1);
	}
	tt_sleep_ms(50);
	long periods = (test_now_ns() - t0) / (10 * TT_MS);
	CHECK(ticks - before >= periods / 2);
	CHECK_EQ(tt_timerfds(NULL), 1);
	CHECK_OK(timer_delete(tm));
}

int main(void)
{
	delete_cases();
	many();
	racing_creators();
	out_of_descriptors();
	fork_case();
	CHECK_EQ(tt_timerfds(NULL), 0);
	return 0;
}
