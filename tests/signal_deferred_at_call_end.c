/*
 * signal_deferred_at_call_end — a signal that arrives in the last
 * instructions of a Weft call (after the call's epilogue looked for
 * deferred work, before it returned; or anywhere in an M:1 fast path) is
 * delivered soon even when the UT then runs only its own code and slicing
 * is off (one UT ready: no tick; CMakeLists.txt also sets WEFT_TIMESLICE=0
 * to be sure of it): runtime/signal.c's
 * defer() arms the retry timer, which fakes a call at the next safe point
 * (preempt.c, __weft_preempt_signal_deferred).  Before, the signal stayed
 * deferred, and blocked in the kernel, until the UT's next Weft call: a
 * loop that waits for a handler's flag waited for good.
 *
 * Each round: main locks and unlocks a mutex in a loop for ~200 µs (its
 * time is mostly in Weft's text) while an interval timer sends SIGALRM
 * every 50 µs, then waits in a loop of its own code, with no Weft call,
 * until the handler has run once more.  Asserted: every round's wait ends
 * within a generous 2 s, and the handler ran in every round.
 *
 * Two more ways to reach the same rounds (CMakeLists.txt):
 *   fork     the handler is installed, then the rounds run in a forked
 *            child: a fork's child has none of its parent's timers
 *            (preempt.c, __weft_preempt_after_fork makes its own);
 *   preinit  the handler is installed from the executable's
 *            .preinit_array, which runs before any library's
 *            constructor and so before the runtime starts
 *            (__weft_preempt_init makes the timers).
 * Without those, a deferred signal in them waited for the next Weft
 * call: the child's and the early program's rounds waited for good.
 */
#include "check.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/time.h>
#include <sys/wait.h>

#define ROUNDS (2000 / TEST_SCALE)

static atomic_long handled;

static void on_alrm(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alrm;
	sa.sa_flags = SA_RESTART;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
}

/* preinit mode: the handler from before any constructor; the flag says
 * it ran (an executable's .preinit_array is its own: no library has one) */
static bool installed_early;

static void early(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc > 1 && strcmp(argv[1], "preinit") == 0) {
		install();
		installed_early = true;
	}
}

__attribute__((section(".preinit_array"), used)) static void (*early_entry)(int, char **, char **) = early;

static void rounds(void)
{
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int64_t worst = 0;
	int slow = 0;                           /* waits over 1 ms */
	for (int r = 0; r < ROUNDS; r++) {
		int64_t t0 = test_now_ns();
		while (test_now_ns() - t0 < 200000) {
			for (int i = 0; i < 64; i++) {
				CHECK_OK(pthread_mutex_lock(&m));
				CHECK_OK(pthread_mutex_unlock(&m));
			}
		}
		long before = atomic_load_explicit(&handled, memory_order_relaxed);
		int64_t w0 = test_now_ns(), now = w0;
		/* the program's own code only: test_now_ns is clock_gettime,
		 * the vDSO's, which Weft does not wrap */
		while (atomic_load_explicit(&handled, memory_order_relaxed) == before) {
			now = test_now_ns();
			if (now - w0 > 2000000000ll) {
				fprintf(stderr, "round %d: no handler for 2 s after the calls (%ld handled before)\n",
					r, before);
				exit(1);
			}
		}
		if (now - w0 > worst)
			worst = now - w0;
		slow += now - w0 > 1000000;
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	CHECK(atomic_load(&handled) >= ROUNDS);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "%ld handled, longest wait %.1f us, %d waits over 1 ms\n",
			atomic_load(&handled), worst / 1e3, slow);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "preinit") == 0) {
		CHECK(installed_early);
		rounds();
		return 0;
	}
	install();
	if (strcmp(mode, "fork") != 0) {
		rounds();
		return 0;
	}
	/* the child's own interval timer (fork does not pass one on) */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		rounds();
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	return 0;
}
