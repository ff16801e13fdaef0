/*
 * vfork_child_calls — a UT's vfork child may call Weft's entries (dup2,
 * close, sigprocmask, signal, sched_yield, nanosleep) before it execs or
 * _exits, as programs do: each is the plain call, and none runs another
 * UT in the child's process or changes the parent's state.
 *
 * Invariant, for one spawner UT (SIGUSR2 blocked) beside two busy UTs
 * that yield after every step, so that one is always ready, under a
 * 100 us time slice:
 *   - a child that calls all of those (sigprocmask: the empty mask;
 *     signal: SIGPIPE ignored, SIGUSR1 default) and then execs this
 *     program with "--child K" wrote "child K ign=1 usr2=0\n" to the pipe
 *     it dup2'd onto its stdout (the image saw SIGPIPE ignored and
 *     SIGUSR2 unblocked, as the child left them): the parent reads
 *     exactly that, and waitpid finds the child exited 0; 60 rounds;
 *   - a child that makes the same calls and _exits 7: status 7, and the
 *     pipe holds nothing;
 *   - a child that sleeps 20 ms first — longer than the monitor's two
 *     looks at a parent asleep in vfork — and makes no signal calls: its
 *     image reports "ign=0 usr2=1" (the UT's mask and actions);
 *   - no busy UT ever runs in a process other than the test's (the
 *     child's sched_yield switched to one), and the monitor never took
 *     the VP (weft_stats' takeovers stays 0: the only unwrapped wait here
 *     is the parent's vfork);
 *   - after each round the spawner's mask still blocks SIGUSR2 and
 *     SIGUSR1's action is still its handler, SIGPIPE's still default.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

static char self_path[4096];
static pid_t test_pid;
static volatile unsigned long busy_count;
static volatile int stop, ran_elsewhere;

static void *busy(void *arg)
{
	(void)arg;
	while (!stop) {
		if (getpid() != test_pid)
			ran_elsewhere = 1;    /* shared memory: the parent sees it */
		busy_count++;
		sched_yield();
	}
	return NULL;
}

static void on_usr1(int sig) { (void)sig; }

/* One vfork round: `mode` 0 execs at once, 1 _exits 7, 2 sleeps 20 ms
 * first and makes no signal calls. */
static void round_trip(int k, int mode)
{
	int p[2];
	CHECK_OK(pipe(p));
	char arg[16];
	snprintf(arg, sizeof arg, "%d", k);
	pid_t pid = vfork();
	if (pid == 0) {
		/* the child: every call here is one of Weft's entries */
		sched_yield();
		if (dup2(p[1], 1) != 1)
			_exit(30);
		if (close(p[0]) != 0 || close(p[1]) != 0)
			_exit(31);
		if (mode == 2) {
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			if (nanosleep(&ts, NULL) != 0)
				_exit(34);
		} else {
			sigset_t none;
			sigemptyset(&none);
			if (sigprocmask(SIG_SETMASK, &none, NULL) != 0)
				_exit(32);
			if (signal(SIGUSR1, SIG_DFL) == SIG_ERR || signal(SIGPIPE, SIG_IGN) == SIG_ERR)
				_exit(33);
		}
		sched_yield();
		if (mode == 1)
			_exit(7);
		execl(self_path, self_path, "--child", arg, (char *)NULL);
		_exit(35);
	}
	CHECK(pid > 0);
	CHECK_OK(close(p[1]));
	char buf[64] = { 0 }, want[64];
	size_t got = 0;
	ssize_t n;
	while ((n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)n;
	CHECK_EQ(n, 0);
	CHECK_OK(close(p[0]));
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	if (mode == 1) {
		CHECK_EQ(WEXITSTATUS(st), 7);
		CHECK_EQ(got, 0);
	} else {
		CHECK_EQ(WEXITSTATUS(st), 0);
		snprintf(want, sizeof want, "child %d %s\n", k, mode == 2 ? "ign=0 usr2=1" : "ign=1 usr2=0");
		if (strcmp(buf, want) != 0) {
			fprintf(stderr, "round %d: the image wrote \"%s\", not \"%s\"\n", k, buf, want);
			exit(1);
		}
	}
}

static void *spawner(void *arg)
{
	(void)arg;
	sigset_t m, now;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &m, NULL));
	for (int k = 0; k < 66; k++) {
		int mode = k < 60 ? 0 : k < 63 ? 1 : 2;
		round_trip(k, mode);
		CHECK_EQ(ran_elsewhere, 0);
		CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &now));
		CHECK_EQ(sigismember(&now, SIGUSR2), 1);
		struct sigaction sa;
		CHECK_OK(sigaction(SIGUSR1, NULL, &sa));
		CHECK(sa.sa_handler == on_usr1);
		CHECK_OK(sigaction(SIGPIPE, NULL, &sa));
		CHECK(sa.sa_handler == SIG_DFL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		struct sigaction sa;
		sigset_t m;
		if (sigaction(SIGPIPE, NULL, &sa) != 0 || sigprocmask(SIG_BLOCK, NULL, &m) != 0)
			return 41;
		printf("child %s ign=%d usr2=%d\n", argv[2], sa.sa_handler == SIG_IGN, sigismember(&m, SIGUSR2));
		return fflush(stdout) == 0 ? 0 : 40;
	}
	test_pid = getpid();
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	CHECK(n > 0);
	self_path[n] = 0;
	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);
	/* a 100 us slice where Weft can slice (libweft.so): a tick due in
	 * the child's calls was what switched it to another UT */
	int e = weft_timeslice_set(100 * 1000);
	CHECK(e == 0 || e == ENOTSUP);
	pthread_t b1, b2, s;
	CHECK_OK(pthread_create(&b1, NULL, busy, NULL));
	CHECK_OK(pthread_create(&b2, NULL, busy, NULL));
	CHECK_OK(pthread_create(&s, NULL, spawner, NULL));
	CHECK_OK(pthread_join(s, NULL));
	stop = 1;
	CHECK_OK(pthread_join(b1, NULL));
	CHECK_OK(pthread_join(b2, NULL));
	CHECK(busy_count > 0);
	struct weft_stats st;
	CHECK_OK(weft_stats_get(&st, sizeof st));
	CHECK_EQ(st.takeovers, 0);
	return 0;
}
