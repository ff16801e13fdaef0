/*
 * sigtimedwait_signal_at_entry — a signal that arrives while sigtimedwait
 * is getting ready to wait (after its first look, as the kernel mask lets
 * it in) is returned at once, not after the timeout (runtime/sigdeliver.c,
 * __weft_sig_wait: it was left pending for the process and the UT slept to
 * its deadline; api_fuzz's SIGCHLD waits took 10 s now and then).
 *
 * Invariants checked: 400 times, a child that exits after a delay spread
 * over the window (0 to ~150 us) is followed by sigtimedwait(SIGCHLD, 5 s)
 * returning SIGCHLD with that child's pid, each within 2 s (it takes well
 * under a millisecond); waitpid then reaps it.
 */
#include "check.h"

#include <errno.h>
#include <signal.h>

int main(void)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &chld, NULL));
	for (int i = 0; i < 400; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			for (volatile int spin = 0; spin < (i % 40) * 400; spin++)
				;
			_exit(0);
		}
		int64_t t0 = test_now_ns();
		struct timespec five = { 5, 0 };
		siginfo_t si;
		int sig;
		do
			sig = sigtimedwait(&chld, &si, &five);
		while (sig < 0 && errno == EINTR);
		CHECK_EQ(sig, SIGCHLD);
		CHECK_EQ(si.si_pid, pid);
		CHECK(test_now_ns() - t0 < 2000000000ll);
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return 0;
}
