/*
 * sig_blocked_everywhere_stays_in_kernel — a signal sent to the process
 * while every thread blocks it stays pending in the kernel, where another
 * process sees it (/proc/PID/status ShdPnd), until a thread unmasks it;
 * its handler then runs on that thread before pthread_sigmask returns.
 * Asserted after 200 threads have been made and ended with the mask
 * empty (Weft's tally of masks once lost count of such threads and let
 * such a signal through to a queue of its own), then with 8 threads alive
 * that all block it.
 */
#include "sig_test.h"

static volatile int ran;
static pthread_t ran_on;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	ran_on = pthread_self();
	ran++;
}

/* Is sig pending on the process, in the kernel? */
static bool kernel_pending(int sig)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	char line[256];
	unsigned long long m = 0;
	bool found = false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "ShdPnd: %llx", &m) == 1) {
			found = true;
			break;
		}
	fclose(f);
	CHECK(found);
	return (m >> (sig - 1)) & 1;
}

static void *nothing(void *arg) { return arg; }

static volatile int hold;
static void *blocked_waiter(void *arg)
{
	while (!hold)
		sched_yield();
	return arg;
}

static void one_round(int alive)
{
	pthread_t t[8];
	hold = 0;
	for (int i = 0; i < alive; i++)
		CHECK_OK(pthread_create(&t[i], NULL, blocked_waiter, NULL));   /* inherit the block */
	int before = ran;
	CHECK_OK(kill(getpid(), SIGUSR1));
	sig_sleep_ms(20);
	CHECK_EQ(ran, before);                       /* nobody lets it through */
	CHECK(kernel_pending(SIGUSR1));
	sig_mask1(SIG_UNBLOCK, SIGUSR1);             /* main takes it, now */
	CHECK_EQ(ran, before + 1);
	CHECK(pthread_equal(ran_on, pthread_self()));
	CHECK(!kernel_pending(SIGUSR1));
	sig_mask1(SIG_BLOCK, SIGUSR1);
	hold = 1;
	for (int i = 0; i < alive; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

int main(void)
{
	sig_on(SIGUSR1, on_usr1, 0, 0);
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, nothing, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	sig_mask1(SIG_BLOCK, SIGUSR1);
	one_round(0);
	one_round(8);
	return 0;
}
