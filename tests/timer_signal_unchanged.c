/*
 * timer_signal_unchanged — the POSIX timers that do not notify by thread
 * are glibc's, unchanged, now that Weft defines timer_create.
 *
 * Invariant:
 *  - SIGEV_SIGNAL: the handler runs with si_code SI_TIMER and the
 *    sigev_value given; the timer_t is the kernel's id (non-negative), as
 *    glibc returns it; with the signal blocked while a 1 ms periodic timer
 *    runs for 50 ms, one signal arrives once unblocked and
 *    timer_getoverrun in its handler counts the rest (>= 10);
 *  - no sigevent at all: SIGALRM, with a NULL value (glibc's default, not
 *    the kernel's, which would be the id);
 *  - SIGEV_NONE: nothing is delivered, timer_gettime counts down;
 *  - SIGEV_THREAD_ID naming the caller's kernel thread delivers the signal;
 *  - a deleted kernel timer is EINVAL; a bad clock is EINVAL; the CPU-time
 *    clocks work (glibc's clock ids, as the kernel spells them); a NULL
 *    timer_t pointer is EINVAL (Weft is stricter there: glibc crashes).
 */
#include "timer_test.h"

#include <sys/syscall.h>

static volatile int hits, code, value, overrun = -1;
static volatile void *ptr = (void *)1;
static timer_t watched;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	code = si->si_code;
	value = si->si_value.sival_int;
	ptr = si->si_value.sival_ptr;
	/* the first instance after the unblock stands for the expiries
	 * while blocked; the 1 ms timer's later ones (it runs until main
	 * deletes it, which a loaded machine may delay by a tick) count 0 */
	if (sig == SIGUSR2 && overrun < 0)
		overrun = timer_getoverrun(watched);
	__atomic_add_fetch(&hits, 1, __ATOMIC_SEQ_CST);
}

static void handle(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	CHECK_OK(sigaction(sig, &sa, NULL));
}

static timer_t make(clockid_t clk, int notify, int sig, int val)
{
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = notify;
	ev.sigev_signo = sig;
	ev.sigev_value.sival_int = val;
	if (notify == SIGEV_THREAD_ID)
		ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	CHECK_OK(timer_create(clk, &ev, &tm));
	CHECK((intptr_t)tm >= 0);
	return tm;
}

int main(void)
{
	handle(SIGUSR1);
	handle(SIGUSR2);
	handle(SIGALRM);

	timer_t tm = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGUSR1, 1234);
	tt_arm(tm, 5 * TT_MS, 0);
	CHECK(tt_wait_for(&hits, 1, 2000));
	CHECK_EQ(code, SI_TIMER);
	CHECK_EQ(value, 1234);
	CHECK_OK(timer_delete(tm));
	CHECK_FAILS(timer_delete(tm), EINVAL);
	struct itimerspec cur;
	CHECK_FAILS(timer_gettime(tm, &cur), EINVAL);

	/* overrun, counted by the kernel while the signal was blocked */
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr2, NULL));
	watched = make(CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGUSR2, 5);
	tt_arm(watched, TT_MS, TT_MS);
	tt_sleep_ms(50);
	int before = hits;
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &usr2, NULL));
	CHECK(tt_wait_for(&hits, before + 1, 2000));
	CHECK(overrun >= 10);
	CHECK_OK(timer_delete(watched));

	/* no sigevent: SIGALRM with a NULL value */
	before = hits;
	CHECK_OK(timer_create(CLOCK_REALTIME, NULL, &tm));
	CHECK((intptr_t)tm >= 0);
	tt_arm(tm, 5 * TT_MS, 0);
	CHECK(tt_wait_for(&hits, before + 1, 2000));
	CHECK_EQ(code, SI_TIMER);
	CHECK(ptr == NULL);
	CHECK_OK(timer_delete(tm));

	/* SIGEV_NONE */
	before = hits;
	tm = make(CLOCK_MONOTONIC, SIGEV_NONE, 0, 0);
	tt_arm(tm, 2000 * TT_MS, 0);
	CHECK_OK(timer_gettime(tm, &cur));
	CHECK(cur.it_value.tv_sec == 1 || (cur.it_value.tv_sec == 2 && cur.it_value.tv_nsec == 0));
	CHECK_EQ(timer_getoverrun(tm), 0);
	CHECK_OK(timer_delete(tm));

	/* SIGEV_THREAD_ID, to this kernel thread */
	tm = make(CLOCK_MONOTONIC, SIGEV_THREAD_ID, SIGUSR1, 77);
	tt_arm(tm, 5 * TT_MS, 0);
	CHECK(tt_wait_for(&hits, before + 1, 2000));
	CHECK_EQ(value, 77);
	CHECK_OK(timer_delete(tm));

	/* clocks */
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_NONE;
	CHECK_FAILS(timer_create((clockid_t)12345, &ev, &tm), EINVAL);
	CHECK_FAILS(timer_create(CLOCK_MONOTONIC, &ev, NULL), EINVAL);   /* glibc: SIGSEGV */
	CHECK_OK(timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &tm));
	CHECK_OK(timer_delete(tm));
	CHECK_OK(timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm));
	CHECK_OK(timer_delete(tm));
	CHECK_EQ(tt_timerfds(NULL), 0);
	return 0;
}
