/* 4 UTs update shared state under a Weft mutex with a 100 us slice for 5 s
 * (longer on a loaded machine, until 10,000 preemptions: 2,000 in the
 * AddressSanitizer build, see WANTED).
 * Inside the critical section the state is briefly inconsistent (a, then
 * b), so a preemption there that let another UT in would show.  The
 * invariant holds, and the counters show >= WANTED preemptions and some
 * deferrals (ticks that found Weft's or libc's code running). */
#include "preempt_test.h"
#include <string.h>

#define NTH 4
/* Preemptions the run must see.  The ASan build asks for fewer: there
 * every UT has its own thread pointer (ASan's runtime has TLS), and on a
 * machine without FSGSBASE each switch is an arch_prctl of ~5 us, beside
 * ASan's own work; a PVM guest hands its timer signals over mostly as a
 * system call returns, so most ticks find Weft's switch running and are
 * deferred.  There 10,000 took the whole minute (CI, 2026-11-29). */
#if defined(__SANITIZE_ADDRESS__)
#define WANTED 2000
#else
#define WANTED 10000
#endif
/* Under M:N (WEFT_VPS=2) the UTs of the other VP hold the lock most of
 * the time: a UT that finds it taken parks, its VP often has no other
 * ready UT, and a tick then has no one to switch to (nor is it counted);
 * most ticks find Weft's park or libc's snprintf and are deferred (7,749
 * preemptions and 1.7 million deferrals in a minute on the PVM guest).
 * The invariants are the same; the count asked for is a tenth. */
#define WANTED_MN (WANTED / 10)
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t a, b, total;
static volatile int stop;
static uint64_t done[NTH];

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char buf[64];
	uint64_t n = 0;
	while (!stop) {
		CHECK_OK(pthread_mutex_lock(&m));
		CHECK_EQ(a, b);
		a = a + 1;
		for (volatile int k = 0; k < 200; k++)
			;                               /* widen the window */
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)a);   /* time in libc */
		b = strtoull(buf, NULL, 10);
		total = total + 1;
		CHECK_OK(pthread_mutex_unlock(&m));
		n++;
		for (volatile int k = 0; k < 200; k++)
			;
	}
	done[id] = n;
	return NULL;
}

int main(void)
{
	preempt_test_slice(100 * 1000);
	struct weft_stats s0 = preempt_test_stats();
	const uint64_t wanted = s0.vps > 1 ? WANTED_MN : WANTED;
	pthread_t t[NTH];
	for (int i = 0; i < NTH; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i));
	/* 5 s, and on a loaded machine (fewer ticks delivered) until WANTED
	 * preemptions have happened, for at most a minute. */
	int64_t t0 = test_now_ns();
	for (;;) {
		sched_yield();              /* main takes its turns too */
		int64_t ran = test_now_ns() - t0;
		if (ran >= 60LL * 1000 * 1000 * 1000)
			break;
		if (ran >= 5LL * 1000 * 1000 * 1000 &&
		    preempt_test_stats().preemptions - s0.preemptions >= wanted)
			break;
	}
	stop = 1;
	uint64_t sum = 0;
	for (int i = 0; i < NTH; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		CHECK(done[i] > 0);          /* nobody starved */
		sum += done[i];
	}
	CHECK_EQ(a, b);
	CHECK_EQ(total, sum);
	CHECK_EQ(a, sum);
	struct weft_stats s1 = preempt_test_stats();
	if (s1.preemptions - s0.preemptions < wanted || s1.deferrals == s0.deferrals) {
		fprintf(stderr, "preemptions %llu deferrals %llu ticks %llu\n",
			(unsigned long long)(s1.preemptions - s0.preemptions),
			(unsigned long long)(s1.deferrals - s0.deferrals),
			(unsigned long long)(s1.ticks - s0.ticks));
		CHECK(!"at least `wanted` preemptions and some deferrals");
	}
	return 0;
}
