// tls_values_per_ut — 1,000 UTs keep distinct thread_local and __thread
// values across yields, sleeps and preemption at a 100 us slice (the tick
// switches them in the middle of their own loops), and each UT's TLS starts
// from the initial values.  Without per-UT TLS the values cross between
// threads thousands of times.
#include "check.h"
#include "preempt_test.h"

#include <string>
#include <unistd.h>

enum { UTS = 1000 };

thread_local long tl_value = -1;
thread_local std::string tl_name = "initial";
static __thread unsigned long c_value = 42;
static long mismatches, wrong_initial;

static void *run(void *arg)
{
	long id = (long)arg;
	if (tl_value != -1 || tl_name != "initial" || c_value != 42)
		__atomic_fetch_add(&wrong_initial, 1, __ATOMIC_RELAXED);
	tl_value = id;
	tl_name = "ut-" + std::to_string(id);
	c_value = (unsigned long)id * 7919;
	std::string want = tl_name;
	long rounds = test_iters(200);
	for (long i = 0; i < rounds; i++) {
		switch (i % 3) {
		case 0:
			sched_yield();
			break;
		case 1:
			if (i % 30 == 1)
				usleep(50);
			break;
		default: {
			/* spin in our own code so the tick preempts us here */
			volatile unsigned long x = 0;
			for (int k = 0; k < 2000; k++)
				x = x + (unsigned long)k * c_value;
			break;
		}
		}
		if (tl_value != id || tl_name != want || c_value != (unsigned long)id * 7919)
			__atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);
	}
	return (void *)(tl_value + 1);
}

int main()
{
	preempt_test_slice(100000);
	static pthread_t t[UTS];
	for (long i = 0; i < UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, run, (void *)i));
	for (long i = 0; i < UTS; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK_EQ((long)r, i + 1);
	}
	CHECK_EQ(wrong_initial, 0);
	CHECK_EQ(mismatches, 0);
	/* main's own copies were never touched by the others */
	CHECK_EQ(tl_value, -1);
	CHECK(tl_name == "initial");
	CHECK_EQ(c_value, 42);
	struct weft_stats s = preempt_test_stats();
	CHECK(s.preemptions > 0);
	return 0;
}
