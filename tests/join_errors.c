/* Every join and detach error path, and the try/timed/clock variants:
 * self-join is EDEADLK, so is joining one's own joiner; a detached UT is
 * EINVAL, as is a second joiner; a handle already joined and random 64-bit
 * values are ESRCH and never crash; tryjoin on a live UT is EBUSY; a timed
 * join that expires is ETIMEDOUT and leaves the UT joinable. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

/* NULL passed on purpose: hidden from the compiler (glibc's headers declare
 * nonnull) and from UBSan's nonnull check in the functions marked so. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

static void *ret_arg(void *arg) { return arg; }

static void *sleep_then_ret(void *arg)
{
	usleep(20000);
	return arg;
}

static int self_detached;
static void *detach_self(void *arg)
{
	CHECK_OK(pthread_detach(pthread_self()));
	__atomic_store_n(&self_detached, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void nested_exit(void *v) { pthread_exit(v); }
static void *exit_from_depth(void *arg)
{
	nested_exit(arg);
	return NULL;
}

static void test_self_and_dead(void)
{
	pthread_t self = pthread_self();
	CHECK_EQ(pthread_join(self, NULL), EDEADLK);
	CHECK_EQ(pthread_tryjoin_np(self, NULL), EDEADLK);
	struct timespec ts = { 0, 0 };
	CHECK_EQ(pthread_timedjoin_np(self, NULL, &ts), EDEADLK);

	pthread_t t;
	void *r = NULL;
	CHECK_OK(pthread_create(&t, NULL, ret_arg, (void *)0x1234));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == (void *)0x1234);
	CHECK_EQ(pthread_join(t, NULL), ESRCH);
	CHECK_EQ(pthread_tryjoin_np(t, NULL), ESRCH);
	CHECK_EQ(pthread_timedjoin_np(t, NULL, &ts), ESRCH);
	CHECK_EQ(pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, &ts), ESRCH);
	CHECK_EQ(pthread_detach(t), ESRCH);

	/* the slot is reused by the next UT, under a new handle */
	pthread_t u;
	CHECK_OK(pthread_create(&u, NULL, ret_arg, NULL));
	CHECK(u != t);
	CHECK_EQ(pthread_join(t, NULL), ESRCH);
	CHECK_OK(pthread_join(u, NULL));

	/* pthread_exit from deep inside delivers its value */
	CHECK_OK(pthread_create(&t, NULL, exit_from_depth, (void *)0x77));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == (void *)0x77);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random handles, and handles near live ones, are ESRCH for every entry
 * point that takes a pthread_t. */
static void test_random_handles(void)
{
	pthread_t live;
	CHECK_OK(pthread_create(&live, NULL, sleep_then_ret, NULL));
	uint64_t h = (uint64_t)live;
	uint64_t near[] = { 0, ~0ull, h + 1, h ^ (1ull << 32), h & 0xffffffffull,
			    h | 0xffffffffull, (uint64_t)(uint32_t)h + (5ull << 32) };
	struct timespec ts = { 0, 0 };
	struct sched_param sp = { 0 };
	int policy;
	char name[16];
	for (int i = 0; i < 20000 / TEST_SCALE; i++) {
		pthread_t bad = (pthread_t)(i < 7 ? near[i] : next_random());
		if (bad == live || bad == pthread_self())
			continue;
		CHECK_EQ(pthread_join(bad, NULL), ESRCH);
		CHECK_EQ(pthread_tryjoin_np(bad, NULL), ESRCH);
		CHECK_EQ(pthread_timedjoin_np(bad, NULL, &ts), ESRCH);
		CHECK_EQ(pthread_detach(bad), ESRCH);
		CHECK_EQ(pthread_getschedparam(bad, &policy, &sp), ESRCH);
		CHECK_EQ(pthread_setschedprio(bad, 0), ESRCH);
		CHECK_EQ(pthread_setname_np(bad, "x"), ESRCH);
		CHECK_EQ(pthread_getname_np(bad, name, sizeof name), ESRCH);
		pthread_attr_t a;
		CHECK_EQ(pthread_getattr_np(bad, &a), ESRCH);
	}
	CHECK_OK(pthread_join(live, NULL));
}

static void test_detached(void)
{
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_create(&t, &a, sleep_then_ret, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_EQ(pthread_join(t, NULL), EINVAL);
	CHECK_EQ(pthread_tryjoin_np(t, NULL), EINVAL);
	CHECK_EQ(pthread_detach(t), EINVAL);
	usleep(60000);                     /* it ends and its slot is freed */
	CHECK_EQ(pthread_join(t, NULL), ESRCH);
	CHECK_EQ(pthread_detach(t), ESRCH);

	/* detach after create; detach of a UT that already exited (a zombie)
	 * frees it at once */
	CHECK_OK(pthread_create(&t, NULL, sleep_then_ret, NULL));
	CHECK_OK(pthread_detach(t));
	CHECK_EQ(pthread_join(t, NULL), EINVAL);
	CHECK_EQ(pthread_detach(t), EINVAL);
	CHECK_OK(pthread_create(&t, NULL, ret_arg, NULL));
	test_settle();                     /* it runs and exits: a zombie (several VPs:
					    * wherever it runs) */
	CHECK_OK(pthread_detach(t));
	CHECK_EQ(pthread_join(t, NULL), ESRCH);
	usleep(60000);

	/* a UT can detach itself; its slot is freed when it ends */
	CHECK_OK(pthread_create(&t, NULL, detach_self, NULL));
	/* Under several VPs it may not have run yet, and a join before its
	 * detach would make the detach EINVAL: wait for the detach. Then the
	 * handle is EINVAL while the UT lives (detached) and ESRCH once it has
	 * ended and its slot is free. */
	while (!__atomic_load_n(&self_detached, __ATOMIC_ACQUIRE))
		sched_yield();
	int r;
	while ((r = pthread_join(t, NULL)) == EINVAL)
		sched_yield();
	CHECK_EQ(r, ESRCH);
}

static pthread_t main_thread, first_target;
static atomic_int second_done;

static void *join_main(void *arg)
{
	/* main is parked joining us (several VPs: this may run before main
	 * parks; tryjoin says EBUSY until then): joining it back would
	 * deadlock */
	int r;
	while ((r = pthread_tryjoin_np(main_thread, NULL)) == EBUSY)
		sched_yield();
	CHECK_EQ(r, EDEADLK);
	CHECK_EQ(pthread_join(main_thread, NULL), EDEADLK);
	return (void *)0x5;
}

/* first_target lives until second_joiner is done with it */
static void *wait_then_ret(void *arg)
{
	while (!atomic_load(&second_done))
		usleep(1000);
	return arg;
}

static void *second_joiner(void *arg)
{
	/* main already waits to join first_target (several VPs: this may run
	 * before main parks; first_target cannot end before we let it) */
	int r;
	while ((r = pthread_tryjoin_np(first_target, NULL)) == EBUSY)
		sched_yield();
	CHECK_EQ(r, EINVAL);
	CHECK_EQ(pthread_join(first_target, NULL), EINVAL);
	CHECK_EQ(pthread_detach(first_target), EINVAL);
	atomic_store(&second_done, 1);
	return NULL;
}

static void test_join_conflicts(void)
{
	main_thread = pthread_self();
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, join_main, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == (void *)0x5);

	pthread_t s;
	CHECK_OK(pthread_create(&first_target, NULL, wait_then_ret, (void *)0x9));
	CHECK_OK(pthread_create(&s, NULL, second_joiner, NULL));
	CHECK_OK(pthread_join(first_target, &r));
	CHECK(r == (void *)0x9);
	CHECK_OK(pthread_join(s, NULL));
}

PASSES_NULL static void test_try_and_timed(void)
{
	pthread_t t;
	void *r = NULL;
	CHECK_OK(pthread_create(&t, NULL, sleep_then_ret, (void *)0x42));
	CHECK_EQ(pthread_tryjoin_np(t, &r), EBUSY);

	struct timespec past = { 1, 0 }, bad = { 0, 1000000000 }, neg = { 0, -1 };
	CHECK_EQ(pthread_timedjoin_np(t, &r, &past), ETIMEDOUT);
	CHECK_EQ(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &past), ETIMEDOUT);
	CHECK_EQ(pthread_timedjoin_np(t, &r, &bad), EINVAL);
	CHECK_EQ(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &neg), EINVAL);
	CHECK_EQ(pthread_clockjoin_np(t, &r, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);

	/* a deadline 2 ms away expires, and no earlier */
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	int64_t start = test_now_ns();
	dl.tv_nsec += 2000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	CHECK_EQ(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
	CHECK(test_now_ns() - start >= 2000000);

	/* the realtime clock too; then the UT is still joinable */
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	CHECK_OK(pthread_timedjoin_np(t, &r, &dl));
	CHECK(r == (void *)0x42);
	CHECK(test_now_ns() - start < 5000000000ll);

	/* tryjoin of an exited UT collects it; a NULL timeout means "forever" */
	CHECK_OK(pthread_create(&t, NULL, ret_arg, (void *)0x43));
	sched_yield();
	/* one VP: it has run and exited; on several (WEFT_VPS) it may still
	 * be running on another, and tryjoin says EBUSY until it is done */
	int busy = 0, rc;
	while ((rc = pthread_tryjoin_np(t, &r)) == EBUSY && busy++ < 1000000)
		sched_yield();
	CHECK_OK(rc);
	CHECK(r == (void *)0x43);
	CHECK_OK(pthread_create(&t, NULL, sleep_then_ret, (void *)0x44));
	CHECK_OK(pthread_timedjoin_np(t, &r, NUL(const struct timespec *)));
	CHECK(r == (void *)0x44);
	/* as glibc (tst-join14): clockjoin with a NULL time waits forever too */
	CHECK_OK(pthread_create(&t, NULL, sleep_then_ret, (void *)0x45));
	CHECK_OK(pthread_clockjoin_np(t, &r, CLOCK_MONOTONIC, NUL(const struct timespec *)));
	CHECK(r == (void *)0x45);
}

int main(void)
{
	test_self_and_dead();
	test_random_handles();
	test_detached();
	test_join_conflicts();
	test_try_and_timed();
	return 0;
}
