/*
 * sig_cpu_clocks_per_thread — CPU-time clocks measure one thread each.
 *
 * Invariant: a thread that spins while the others sleep, until the process
 * has used 50 ms more CPU, reads >= 40 ms on CLOCK_THREAD_CPUTIME_ID, and
 * main, reading it later through pthread_getcpuclockid, reads at least as
 * much (and less than a second more); a thread that only sleeps 100 ms
 * reads < 5 ms on its own clock and through pthread_getcpuclockid, however
 * much the spinner used meanwhile.
 */
#include "sig_test.h"

#include <semaphore.h>

static sem_t spun, sleep_done, go_home;
static volatile int64_t spinner_own, sleeper_own;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	CHECK_OK(clock_gettime(c, &ts));
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *spinner(void *arg)
{
	int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0 < 50 * SIG_MS)
		__asm__ volatile("" ::: "memory");
	spinner_own = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	CHECK_OK(sem_post(&spun));
	while (sem_wait(&go_home) != 0) {}
	return NULL;
}

static void *sleeper(void *arg)
{
	sig_sleep_ms(100);
	sleeper_own = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	CHECK_OK(sem_post(&sleep_done));
	while (sem_wait(&go_home) != 0) {}
	return NULL;
}

int main(void)
{
	CHECK_OK(sem_init(&spun, 0, 0));
	CHECK_OK(sem_init(&sleep_done, 0, 0));
	CHECK_OK(sem_init(&go_home, 0, 0));
	pthread_t sp, sl;
	CHECK_OK(pthread_create(&sl, NULL, sleeper, NULL));
	CHECK_OK(pthread_create(&sp, NULL, spinner, NULL));
	CHECK_OK(sem_wait(&spun));
	CHECK_OK(sem_wait(&sleep_done));
	clockid_t csp, csl;
	CHECK_OK(pthread_getcpuclockid(sp, &csp));
	CHECK_OK(pthread_getcpuclockid(sl, &csl));
	int64_t sp_seen = clock_ns(csp), sl_seen = clock_ns(csl);
	if (spinner_own < 40 * SIG_MS || sleeper_own >= 5 * SIG_MS || sp_seen < 40 * SIG_MS ||
	    sl_seen >= 5 * SIG_MS) {
		fprintf(stderr, "spinner %.1f ms (own clock) %.1f ms (getcpuclockid); "
			"sleeper %.1f ms (own) %.1f ms (getcpuclockid)\n",
			spinner_own / 1e6, sp_seen / 1e6, sleeper_own / 1e6, sl_seen / 1e6);
		exit(1);
	}
	CHECK(sp_seen >= spinner_own);
	CHECK(sp_seen < spinner_own + 1000 * SIG_MS);
	CHECK_OK(sem_post(&go_home));
	CHECK_OK(sem_post(&go_home));
	CHECK_OK(pthread_join(sp, NULL));
	CHECK_OK(pthread_join(sl, NULL));
	return 0;
}
