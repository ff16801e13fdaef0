/*
 * mn_cpu_clock_parked — a UT's CPU clock keeps the time it ran after it
 * parks on a VP that then has nothing to run.
 *
 * A UT spins until its own CLOCK_THREAD_CPUTIME_ID reads 30 ms, notes that
 * reading and parks on a semaphore; main never parks meanwhile (with two
 * VPs the UT runs on the other one, which goes idle when it parks).  Main
 * then reads the UT's clock through pthread_getcpuclockid: at least what
 * the UT read itself, and less than a second more.  Before the fix the
 * idle switch charged nothing and main read 0.
 */
#include "mn_test.h"

#include <semaphore.h>
#include <time.h>

static sem_t go_home;
static volatile int64_t own_ns;
static volatile int parking;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	CHECK_OK(clock_gettime(c, &ts));
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *spinner(void *arg)
{
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < 30000000)
		__asm__ volatile("" ::: "memory");
	own_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	__atomic_store_n(&parking, 1, __ATOMIC_RELEASE);
	while (sem_wait(&go_home) != 0) {}
	return arg;
}

int main(void)
{
	CHECK_OK(sem_init(&go_home, 0, 0));
	for (int round = 0; round < 5; round++) {
		parking = 0;
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, spinner, NULL));
		while (!__atomic_load_n(&parking, __ATOMIC_ACQUIRE))
			__asm__ volatile("" ::: "memory");     /* main stays on its VP */
		test_settle();                                  /* until it has parked */
		clockid_t c;
		CHECK_OK(pthread_getcpuclockid(t, &c));
		int64_t seen = clock_ns(c);
		if (seen < own_ns || seen >= own_ns + 1000000000) {
			fprintf(stderr, "round %d: the UT read %.1f ms itself, main reads %.1f ms\n", round,
				own_ns / 1e6, seen / 1e6);
			CHECK(seen >= own_ns && seen < own_ns + 1000000000);
		}
		CHECK_OK(sem_post(&go_home));
		CHECK_OK(pthread_join(t, NULL));
	}
	return 0;
}
