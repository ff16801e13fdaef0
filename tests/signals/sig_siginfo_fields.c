/*
 * sig_siginfo_fields — SA_SIGINFO data reaches the handler intact.
 *
 * Invariant: si_signo is the signal; si_code is SI_TKILL for pthread_kill
 * and raise, SI_QUEUE for pthread_sigqueue and sigqueue (with si_value as
 * sent, int and pointer), SI_USER for kill(); si_pid is this process and
 * si_uid our uid for all of them; the third argument is a ucontext_t whose
 * uc_sigmask is the interrupted thread's mask (it had SIGHUP blocked).
 */
#include "sig_test.h"

#include <ucontext.h>

static volatile int hits;
static siginfo_t last;
static volatile int ctx_hup_blocked;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	last = *si;
	ctx_hup_blocked = sigismember(&((ucontext_t *)uc)->uc_sigmask, SIGHUP);
	hits = hits + 1;
}

static void expect(int sig, int code)
{
	CHECK(sig_wait_for(&hits, 1, 2000));
	CHECK_EQ(hits, 1);
	CHECK_EQ(last.si_signo, sig);
	CHECK_EQ(last.si_code, code);
	CHECK_EQ(last.si_pid, getpid());
	CHECK_EQ(last.si_uid, getuid());
	CHECK_EQ(ctx_hup_blocked, 1);
	hits = 0;
}

static int cookie;

int main(void)
{
	sig_mask1(SIG_BLOCK, SIGHUP);
	sig_on(SIGUSR1, on_sig, 0, 0);
	sig_on(SIGUSR2, on_sig, 0, 0);
	sig_on(SIGRTMIN + 1, on_sig, 0, 0);

	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	expect(SIGUSR1, SI_TKILL);

	CHECK_OK(raise(SIGUSR2));
	expect(SIGUSR2, SI_TKILL);

	union sigval v = { .sival_int = -77 };
	CHECK_OK(pthread_sigqueue(pthread_self(), SIGRTMIN + 1, v));
	expect(SIGRTMIN + 1, SI_QUEUE);
	CHECK_EQ(last.si_value.sival_int, -77);

	v.sival_ptr = &cookie;
	CHECK_OK(sigqueue(getpid(), SIGRTMIN + 1, v));
	expect(SIGRTMIN + 1, SI_QUEUE);
	CHECK(last.si_value.sival_ptr == &cookie);

	CHECK_OK(kill(getpid(), SIGUSR2));
	expect(SIGUSR2, SI_USER);
	return 0;
}
