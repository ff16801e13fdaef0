/*
 * sig_masks_per_thread — every thread has its own signal mask and pending set.
 *
 * Invariant: pthread_sigmask (and sigprocmask) in one thread does not change
 * another's mask; a new thread starts with its creator's mask, or with the
 * one pthread_attr_setsigmask_np put in its attributes (read back by
 * pthread_attr_getsigmask_np); sigpending reports the signals pending on
 * the calling thread (sent to it with pthread_kill while it blocks them)
 * plus those pending on the process, never another thread's.
 */
#include "sig_test.h"

static volatile int step, ack;
static volatile int handled;

static void on_sig(int sig, siginfo_t *si, void *uc) { handled = handled + 1; }

/* Proceed in lock-step with main: wait for step s, then acknowledge it. */
static void at(int s) { CHECK(sig_wait_for(&step, s, 5000)); }
static void done_step(int s) { ack = s; }

static void *other(void *arg)
{
	/* Inherited main's mask: SIGHUP blocked, SIGUSR1 not. */
	CHECK(sig_blocked(SIGHUP));
	CHECK(!sig_blocked(SIGUSR1));
	/* Step 1: block SIGUSR1 here; main must not see it blocked. */
	sig_mask1(SIG_BLOCK, SIGUSR1);
	sig_mask1(SIG_UNBLOCK, SIGHUP);
	done_step(1);
	at(2);          /* main changed its own mask: ours is as we left it */
	CHECK(sig_blocked(SIGUSR1));
	CHECK(!sig_blocked(SIGHUP));
	CHECK(!sig_blocked(SIGTERM));
	done_step(2);
	at(3);          /* main sent us SIGUSR1 (blocked here): pending on us */
	sigset_t p;
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGUSR1), 1);
	CHECK_EQ(sigismember(&p, SIGUSR2), 0);
	done_step(3);
	at(4);          /* main sent itself SIGUSR2: not ours */
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGUSR2), 0);
	CHECK_EQ(sigismember(&p, SIGUSR1), 1);
	done_step(4);
	at(5);          /* kill(getpid(), SIGINT), blocked everywhere: process-pending */
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGINT), 1);
	CHECK_EQ(sigismember(&p, SIGUSR1), 1);
	/* Collect our own SIGUSR1; then the handler count is untouched. */
	sigset_t w;
	sigemptyset(&w);
	sigaddset(&w, SIGUSR1);
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	CHECK_EQ(sigtimedwait(&w, &si, &zero), SIGUSR1);
	CHECK_EQ(si.si_pid, getpid());
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGUSR1), 0);
	done_step(5);
	return NULL;
}

static void *report_mask(void *arg)
{
	sigset_t *out = arg;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, out));
	return NULL;
}

static void sync_step(int s)
{
	step = s;
	CHECK(sig_wait_for(&ack, s, 5000));
}

int main(void)
{
	sig_on(SIGUSR1, on_sig, 0, 0);
	sig_on(SIGUSR2, on_sig, 0, 0);
	sig_on(SIGINT, on_sig, 0, 0);
	sig_mask1(SIG_BLOCK, SIGHUP);
	sig_mask1(SIG_BLOCK, SIGINT);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, other, NULL));
	sync_step(1);
	CHECK(!sig_blocked(SIGUSR1));       /* its block did not reach us */
	CHECK(sig_blocked(SIGHUP));         /* nor its unblock */
	/* sigprocmask acts on the calling thread too. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGUSR2);
	CHECK_EQ(sigprocmask(SIG_BLOCK, &s, NULL), 0);
	sync_step(2);
	CHECK(sig_blocked(SIGTERM));
	CHECK_OK(pthread_kill(t, SIGUSR1));
	sync_step(3);
	CHECK_EQ(handled, 0);
	sigset_t p;
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGUSR1), 0);   /* the other thread's, not ours */
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR2));
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGUSR2), 1);
	sync_step(4);
	CHECK_OK(kill(getpid(), SIGINT));
	CHECK_OK(sigpending(&p));
	CHECK_EQ(sigismember(&p, SIGINT), 1);
	sync_step(5);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(handled, 0);
	/* Collect SIGUSR2 (ours) and SIGINT (the process's). */
	sigset_t w;
	sigemptyset(&w);
	sigaddset(&w, SIGUSR2);
	sigaddset(&w, SIGINT);
	struct timespec zero = { 0, 0 };
	int a = sigtimedwait(&w, NULL, &zero), b = sigtimedwait(&w, NULL, &zero);
	CHECK((a == SIGUSR2 && b == SIGINT) || (a == SIGINT && b == SIGUSR2));
	CHECK_EQ(sigtimedwait(&w, NULL, &zero), -1);
	CHECK_EQ(errno, EAGAIN);

	/* Inheritance: a child sees main's mask at creation time. */
	sigset_t child, mine;
	CHECK_OK(pthread_create(&t, NULL, report_mask, &child));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &mine));
	for (int sig = 1; sig < SIGRTMIN; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			CHECK_EQ(sigismember(&child, sig), sigismember(&mine, sig));

	/* pthread_attr_setsigmask_np: the new thread starts with that mask. */
	pthread_attr_t a_;
	CHECK_OK(pthread_attr_init(&a_));
	sigset_t want, got;
	sigemptyset(&want);
	sigaddset(&want, SIGQUIT);
	sigaddset(&want, SIGRTMIN + 3);
	CHECK_OK(pthread_attr_setsigmask_np(&a_, &want));
	sigemptyset(&got);
	CHECK_OK(pthread_attr_getsigmask_np(&a_, &got));
	CHECK_EQ(sigismember(&got, SIGQUIT), 1);
	CHECK_EQ(sigismember(&got, SIGRTMIN + 3), 1);
	CHECK_OK(pthread_create(&t, &a_, report_mask, &child));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(sigismember(&child, SIGQUIT), 1);
	CHECK_EQ(sigismember(&child, SIGRTMIN + 3), 1);
	CHECK_EQ(sigismember(&child, SIGHUP), 0);    /* not main's: the attribute's */
	CHECK_EQ(sigismember(&child, SIGTERM), 0);
	/* Without a mask in the attributes, getsigmask says so. */
	pthread_attr_t b_;
	CHECK_OK(pthread_attr_init(&b_));
	CHECK_EQ(pthread_attr_getsigmask_np(&b_, &got), PTHREAD_ATTR_NO_SIGMASK_NP);
	CHECK_OK(pthread_attr_destroy(&a_));
	CHECK_OK(pthread_attr_destroy(&b_));
	return 0;
}
