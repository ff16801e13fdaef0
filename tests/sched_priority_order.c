/* The scheduler's ordering rules on one VP: the highest-priority ready UT
 * runs, FIFO within a level (across both words of the ready bitmap), a
 * higher-priority UT made ready by pthread_create runs before its creator
 * continues, sched_yield rotates a level, pthread_setschedprio lowering puts
 * a UT at the head of its new level while pthread_setschedparam puts it at
 * the tail, and the scheduling calls' error paths. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>

/* NULL passed on purpose: hidden from the compiler (glibc's headers declare
 * nonnull) and from UBSan's nonnull check in the functions marked so. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

/* volatile: glibc declares sched_yield "leaf", so without it GCC may keep
 * these in registers across a yield that runs another UT's record(). */
static volatile int order[64];
static volatile int norder;

static void record(int v)
{
	CHECK(norder < 64);
	order[norder++] = v;
}

static void reset(void) { norder = 0; }

static void check_order(const int *want, int n)
{
	CHECK_EQ(norder, n);
	for (int i = 0; i < n; i++)
		if (order[i] != want[i]) {
			fprintf(stderr, "order[%d] = %d, want %d\n", i, order[i], want[i]);
			CHECK(order[i] == want[i]);
		}
}

static void *record_arg(void *arg)
{
	record((int)(intptr_t)arg);
	return NULL;
}

static void set_self(int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_setschedparam(pthread_self(), policy, &sp));
}

static void join_all(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

/* A child that outranks its creator runs inside pthread_create; one that
 * does not waits until the creator blocks. */
static void test_create_preempts_creator(void)
{
	reset();
	set_self(SCHED_FIFO, 10);
	pthread_t hi = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)20);
	int want1[] = { 20 };
	check_order(want1, 1);
	pthread_t eq = test_spawn_sched(SCHED_FIFO, 10, record_arg, (void *)(intptr_t)10);
	pthread_t lo = test_spawn_sched(SCHED_FIFO, 5, record_arg, (void *)(intptr_t)5);
	check_order(want1, 1);
	CHECK_OK(pthread_join(hi, NULL));
	CHECK_OK(pthread_join(lo, NULL));   /* blocks: eq then lo run */
	CHECK_OK(pthread_join(eq, NULL));
	int want2[] = { 20, 10, 5 };
	check_order(want2, 3);
}

/* Highest level first, FIFO within a level; levels on both sides of the
 * bitmap's 64-bit word boundary and SCHED_OTHER at the bottom. */
static void test_priority_then_fifo(void)
{
	reset();
	set_self(SCHED_FIFO, 99);
	static const int prios[] = { 64, 1, 99, 63, 64, 1, 99, 0, 63 };
	enum { N = sizeof prios / sizeof prios[0] };
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = test_spawn_prio(prios[i], record_arg, prios[i] * 100 + i);
	CHECK_EQ(norder, 0);               /* none outranks main */
	join_all(t, N);
	int want[] = { 9902, 9906, 6400, 6404, 6303, 6308, 101, 105, 7 };
	check_order(want, N);
}

static void *yielder(void *arg)
{
	for (int i = 0; i < 3; i++) {
		record((int)(intptr_t)arg);
		CHECK_OK(sched_yield());
	}
	return NULL;
}

/* Three UTs of one level yielding take turns; a yield with only
 * lower-priority UTs ready returns at once. */
static void test_yield_rotation(void)
{
	reset();
	set_self(SCHED_FIFO, 50);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = test_spawn_sched(SCHED_FIFO, 10, yielder, (void *)(intptr_t)i + 1);
	pthread_t low = test_spawn_sched(SCHED_FIFO, 5, record_arg, (void *)(intptr_t)99);
	CHECK_OK(sched_yield());
	CHECK_EQ(norder, 0);
	join_all(t, 3);
	int want[] = { 1, 2, 3, 1, 2, 3, 1, 2, 3 };
	check_order(want, 9);
	CHECK_OK(pthread_join(low, NULL));
	CHECK_EQ(order[9], 99);

	/* main yields among equals too: it goes behind them */
	reset();
	set_self(SCHED_FIFO, 10);
	for (int i = 0; i < 2; i++)
		t[i] = test_spawn_sched(SCHED_FIFO, 10, record_arg, (void *)(intptr_t)i + 1);
	CHECK_EQ(norder, 0);
	CHECK_OK(sched_yield());
	int want2[] = { 1, 2 };
	check_order(want2, 2);
	join_all(t, 2);
}

/* pthread_setschedprio lowering a ready UT puts it at the head of its new
 * level; pthread_setschedparam puts it at the tail; raising a ready UT
 * above the caller runs it at once. */
static void test_requeue_rules(void)
{
	reset();
	set_self(SCHED_FIFO, 50);
	pthread_t x = test_spawn_sched(SCHED_FIFO, 30, record_arg, (void *)(intptr_t)1);
	pthread_t y = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)2);
	pthread_t z = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)3);
	CHECK_OK(pthread_setschedprio(x, 20));
	pthread_t t1[] = { x, y, z };
	join_all(t1, 3);
	int want1[] = { 1, 2, 3 };
	check_order(want1, 3);

	reset();
	x = test_spawn_sched(SCHED_FIFO, 30, record_arg, (void *)(intptr_t)1);
	y = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)2);
	z = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)3);
	struct sched_param sp = { .sched_priority = 20 };
	CHECK_OK(pthread_setschedparam(x, SCHED_FIFO, &sp));
	int policy;
	CHECK_OK(pthread_getschedparam(x, &policy, &sp));
	CHECK_EQ(policy, SCHED_FIFO);
	CHECK_EQ(sp.sched_priority, 20);
	pthread_t t2[] = { x, y, z };
	join_all(t2, 3);
	int want2[] = { 2, 3, 1 };
	check_order(want2, 3);

	reset();
	y = test_spawn_sched(SCHED_FIFO, 20, record_arg, (void *)(intptr_t)2);
	CHECK_OK(pthread_setschedprio(y, 60));
	int want3[] = { 2 };
	check_order(want3, 1);
	CHECK_OK(pthread_join(y, NULL));
}

/* The running UT lowering itself below a ready UT gives way at once, and
 * then heads its new level: it runs before an equal that was already there. */
static void test_running_lowers_itself(void)
{
	reset();
	set_self(SCHED_FIFO, 50);
	pthread_t a = test_spawn_sched(SCHED_FIFO, 40, record_arg, (void *)(intptr_t)40);
	pthread_t b = test_spawn_sched(SCHED_FIFO, 30, record_arg, (void *)(intptr_t)30);
	CHECK_OK(pthread_setschedprio(pthread_self(), 30));
	int want[] = { 40 };
	check_order(want, 1);              /* a ran; b, behind main, did not */
	record(0);
	CHECK_OK(pthread_join(b, NULL));
	CHECK_OK(pthread_join(a, NULL));
	int want2[] = { 40, 0, 30 };
	check_order(want2, 3);
}

static void *report_sched(void *arg)
{
	int *out = arg;
	struct sched_param sp;
	CHECK_OK(pthread_getschedparam(pthread_self(), &out[0], &sp));
	out[1] = sp.sched_priority;
	return NULL;
}

/* Default attributes inherit the creator's policy and priority. */
static void test_inherit(void)
{
	set_self(SCHED_RR, 33);
	int got[2] = { -1, -1 };
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, report_sched, got));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got[0], SCHED_RR);
	CHECK_EQ(got[1], 33);
}

PASSES_NULL static void test_errors(void)
{
	struct sched_param sp = { .sched_priority = 0 };
	pthread_t self = pthread_self();
	CHECK_EQ(sched_get_priority_min(SCHED_FIFO), 1);
	CHECK_EQ(sched_get_priority_max(SCHED_FIFO), 99);
	CHECK_EQ(sched_get_priority_min(SCHED_RR), 1);
	CHECK_EQ(sched_get_priority_max(SCHED_RR), 99);
	CHECK_EQ(sched_get_priority_min(SCHED_OTHER), 0);
	CHECK_EQ(sched_get_priority_max(SCHED_OTHER), 0);
	errno = 0;
	CHECK_EQ(sched_get_priority_max(12345), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(sched_get_priority_min(-7), -1);
	CHECK_EQ(errno, EINVAL);

	CHECK_EQ(pthread_setschedparam(self, SCHED_FIFO, &sp), EINVAL);     /* prio 0 */
	sp.sched_priority = 100;
	CHECK_EQ(pthread_setschedparam(self, SCHED_FIFO, &sp), EINVAL);
	sp.sched_priority = 5;
	CHECK_EQ(pthread_setschedparam(self, SCHED_OTHER, &sp), EINVAL);
	CHECK_EQ(pthread_setschedparam(self, 12345, &sp), EINVAL);
	CHECK_EQ(pthread_setschedparam(self, SCHED_FIFO, NUL(struct sched_param *)), EINVAL);
	CHECK_EQ(pthread_setschedparam((pthread_t)0x123456789abcdefull, SCHED_FIFO, &sp), ESRCH);
	int policy;
	CHECK_EQ(pthread_getschedparam(self, NUL(int *), &sp), EINVAL);
	CHECK_EQ(pthread_getschedparam(self, &policy, NUL(struct sched_param *)), EINVAL);
	CHECK_EQ(pthread_getschedparam((pthread_t)0, &policy, &sp), ESRCH);
	CHECK_EQ(pthread_setschedprio((pthread_t)~0ull, 5), ESRCH);
	set_self(SCHED_FIFO, 10);
	CHECK_EQ(pthread_setschedprio(self, 0), EINVAL);
	CHECK_EQ(pthread_setschedprio(self, 100), EINVAL);
	set_self(SCHED_OTHER, 0);
	CHECK_EQ(pthread_setschedprio(self, 1), EINVAL);
	CHECK_OK(pthread_getschedparam(self, &policy, &sp));
	CHECK_EQ(policy, SCHED_OTHER);
	CHECK_EQ(sp.sched_priority, 0);

	/* explicit attributes with an invalid combination are refused at create */
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_FIFO));   /* priority still 0 */
	CHECK_EQ(pthread_create(&t, &a, record_arg, NULL), EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));
}

int main(void)
{
	test_errors();
	test_create_preempts_creator();
	test_priority_then_fifo();
	test_yield_rotation();
	test_requeue_rules();
	test_running_lowers_itself();
	test_inherit();
	set_self(SCHED_OTHER, 0);
	return 0;
}
