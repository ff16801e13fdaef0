// tls_destructors_once — C++ thread_local objects are constructed on first
// use in each UT and destroyed exactly once when that UT ends, whether it
// returns, calls pthread_exit or is cancelled; and, as glibc orders them,
// before the destructors of its pthread keys.
#include "check.h"

#include <atomic>
#include <vector>

enum { EACH = 50 };

static std::atomic<long> made, destroyed;
static pthread_key_t key;
static long order_wrong;

struct Tracked {
	long id;
	bool alive = true;
	Tracked() : id(made.fetch_add(1)) {}
	~Tracked()
	{
		if (!alive)
			__atomic_fetch_add(&order_wrong, 1, __ATOMIC_RELAXED);   /* twice */
		alive = false;
		destroyed.fetch_add(1);
	}
};

thread_local Tracked tracked;
thread_local int tl_flag;

/* A key destructor: the thread_local must already be gone. */
static void key_dtor(void *v)
{
	if ((long)(intptr_t)v != 0 && tl_flag != 2)
		__atomic_fetch_add(&order_wrong, 1, __ATOMIC_RELAXED);
}

struct MarkGone {
	~MarkGone() { tl_flag = 2; }
};
thread_local MarkGone mark_gone;

static void touch()
{
	(void)tracked.id;
	(void)&mark_gone;
	tl_flag = 1;
	CHECK_OK(pthread_setspecific(key, (void *)1));
}

static void *by_return(void *) { touch(); sched_yield(); return nullptr; }
static void *by_exit(void *) { touch(); sched_yield(); pthread_exit(nullptr); }
static void *by_cancel(void *)
{
	touch();
	for (;;)
		pthread_testcancel(), sched_yield();
}
static void *untouched(void *) { sched_yield(); return nullptr; }

int main()
{
	CHECK_OK(pthread_key_create(&key, key_dtor));
	std::vector<pthread_t> ts;
	for (int i = 0; i < EACH; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, by_return, NULL));
		ts.push_back(t);
		CHECK_OK(pthread_create(&t, NULL, by_exit, NULL));
		ts.push_back(t);
		CHECK_OK(pthread_create(&t, NULL, untouched, NULL));
		ts.push_back(t);
	}
	std::vector<pthread_t> cancelled;
	for (int i = 0; i < EACH; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, by_cancel, NULL));
		cancelled.push_back(t);
	}
	test_settle();
	for (pthread_t t : cancelled) {
		CHECK_OK(pthread_cancel(t));
		void *r;
		CHECK_OK(pthread_join(t, &r));
		CHECK(r == PTHREAD_CANCELED);
	}
	for (pthread_t t : ts)
		CHECK_OK(pthread_join(t, NULL));
	/* three kinds of UT touched it, EACH of each; untouched UTs made none */
	CHECK_EQ(made.load(), 3 * EACH);
	CHECK_EQ(destroyed.load(), 3 * EACH);
	CHECK_EQ(order_wrong, 0);
	return 0;
}
