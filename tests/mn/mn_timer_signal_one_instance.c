/*
 * mn_timer_signal_one_instance — a kernel timer's signal that every UT
 * blocks is delivered once, with every expiry counted, also when the
 * kernel handed its first expiry to a VP's carrier whose kernel mask had
 * not yet followed the block (M:N: a sleeping VP's mask lags behind a
 * change made on another VP; runtime/sigdeliver.c, route).
 *
 * Invariant, as under NPTL: two UTs block SIGUSR2; a periodic 1 ms
 * SIGEV_SIGNAL timer, armed to expire at once, runs for 200 ms; when one UT
 * unblocks, the handler runs exactly once (it stops the timer at once, so
 * a second run could only be a duplicate instance), and timer_getoverrun
 * in it counts the expiries it stood for (>= 10).  Before the fix the
 * first expiry, taken by the lagging carrier and queued back to the
 * kernel as a copy, ran the handler a second time (27 runs in 40).
 * Registered with WEFT_VPS=2 and 1; also true on one VP, where the mask
 * never lags.
 */
#include "mn_test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int hits, first_overrun = -1;
static timer_t watched;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int stage;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	if (__atomic_add_fetch(&hits, 1, __ATOMIC_SEQ_CST) == 1) {
		first_overrun = timer_getoverrun(watched);
		struct itimerspec off;
		memset(&off, 0, sizeof off);
		timer_settime(watched, 0, &off, NULL);   /* async-signal-safe */
	}
}

static void block_usr2(int how)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(how, &s, NULL));
}

static void set_stage(int v)
{
	CHECK_OK(pthread_mutex_lock(&m));
	stage = v;
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
}

static void wait_stage(int v)
{
	CHECK_OK(pthread_mutex_lock(&m));
	while (stage != v)
		CHECK_OK(pthread_cond_wait(&c, &m));
	CHECK_OK(pthread_mutex_unlock(&m));
}

static void *other(void *p)
{
	(void)p;
	block_usr2(SIG_BLOCK);
	set_stage(1);
	wait_stage(2);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	CHECK_OK(sigaction(SIGUSR2, &sa, NULL));

	for (int round = 0; round < 5; round++) {
		hits = 0;
		first_overrun = -1;
		stage = 0;
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, other, NULL));
		wait_stage(1);
		usleep(20000);          /* the other VP goes to sleep in the kernel */
		block_usr2(SIG_BLOCK);
		struct sigevent ev;
		memset(&ev, 0, sizeof ev);
		ev.sigev_notify = SIGEV_SIGNAL;
		ev.sigev_signo = SIGUSR2;
		CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &watched));
		struct itimerspec its = { .it_value = { 0, 1000 },           /* at once */
					  .it_interval = { 0, 1000000 } };   /* then every 1 ms */
		CHECK_OK(timer_settime(watched, 0, &its, NULL));
		/* 200 expiries: a lagging carrier that the kernel handed the
		 * first one to, but that a loaded machine let run only much
		 * later, took it with the overruns counted until then, and the
		 * kernel's instance counts only those since (the known limit,
		 * docs/mn.md); the 10 asked for below leave it 190 ms */
		usleep(200000);
		CHECK_EQ(hits, 0);      /* blocked by every UT */
		block_usr2(SIG_UNBLOCK);
		for (int i = 0; i < 20000 && !hits; i++)
			usleep(100);
		usleep(20000);          /* room for a second instance, if there were one */
		if (hits != 1 || first_overrun < 10)
			fprintf(stderr, "round %d: %d runs of the handler, the first counting %d overruns\n",
				round, hits, first_overrun);
		CHECK_EQ(hits, 1);
		CHECK(first_overrun >= 10);
		CHECK_OK(timer_delete(watched));
		set_stage(2);
		CHECK_OK(pthread_join(t, NULL));
	}
	return 0;
}
