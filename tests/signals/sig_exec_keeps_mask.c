/*
 * sig_exec_keeps_mask — the image exec starts has the calling thread's
 * signal mask (POSIX: "the new process image inherits the calling thread's
 * signal mask"), whatever other threads block; an exec that fails leaves
 * every thread's signals working.
 *
 * Invariant:
 *   - a thread that blocked SIGUSR2 (and not SIGUSR1) calls execl, execv or
 *     execvp of this program with "--check": the new image finds SIGUSR2
 *     blocked and SIGUSR1 not, while main, which blocked SIGUSR1 and not
 *     SIGUSR2, waits in join (the new image's exit status says so);
 *   - the same from a vfork child of that thread (execl), whose image
 *     starts with the thread's mask; and a vfork child whose execv fails
 *     and _exits 127, after which the thread goes on (its status is 127);
 *   - the same from a vfork child that runs 30 ms before its execl: the
 *     parent sits in vfork longer than the monitor's two looks (1 ms
 *     apart), which must not give the VP to main meanwhile (the image
 *     started with main's mask: the monitor took the VP under the child);
 *   - a thread that blocked SIGUSR1 calls execv of a path that does not
 *     exist: -1 with ENOENT; then a SIGUSR1 sent to the process reaches
 *     main, which lets it through, within 10 s.
 */
#include "sig_test.h"

#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char self_path[4096];
static int form;

/* The exit status of vfork child k (22: vfork failed, 23: waitpid did,
 * 26: a signal ended it). */
static int child_status(pid_t k)
{
	if (k < 0)
		_exit(22);
	int st;
	while (waitpid(k, &st, 0) < 0)
		if (errno != EINTR)
			_exit(23);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 26;
}

/* Busy for 30 ms, not asleep, and no call of Weft's (clock_gettime of a
 * kernel clock is libc's): the vfork parent sits in the kernel meanwhile. */
static void busy_30ms(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 30000000L);
}

static void *exec_thread(void *arg)
{
	(void)arg;
	sig_mask1(SIG_BLOCK, SIGUSR2);
	sig_mask1(SIG_UNBLOCK, SIGUSR1);
	char *const argv[] = { self_path, (char *)"--check", NULL };
	if (form == 0)
		execl(self_path, self_path, "--check", (char *)NULL);
	else if (form == 1)
		execv(self_path, argv);
	else if (form == 2)
		execvp(self_path, argv);
	else {
		pid_t k;
		if (form == 3) {
			/* from a vfork child: one that fails, then one that works */
			char *const nowhere[] = { (char *)"/nonexistent/weft-no-such-program", NULL };
			k = vfork();
			if (k == 0) {
				execv(nowhere[0], nowhere);
				_exit(127);
			}
			if (child_status(k) != 127)
				_exit(24);
		}
		k = vfork();
		if (k == 0) {
			if (form == 4)
				busy_30ms();
			execl(self_path, self_path, "--check", (char *)NULL);
			_exit(25);
		}
		_exit(child_status(k));
	}
	_exit(20);                 /* the exec failed */
}

static int check_image(void)
{
	sigset_t s;
	if (sigprocmask(SIG_BLOCK, NULL, &s) != 0)
		return 10;
	if (sigismember(&s, SIGUSR2) != 1)
		return 11;
	if (sigismember(&s, SIGUSR1) != 0)
		return 12;
	return 0;
}

static volatile int got_usr1;
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	got_usr1 = 1;
}

static void *failing_exec(void *arg)
{
	(void)arg;
	sig_mask1(SIG_BLOCK, SIGUSR1);
	char *const argv[] = { (char *)"/nonexistent/weft-no-such-program", NULL };
	errno = 0;
	CHECK_EQ(execv(argv[0], argv), -1);
	CHECK_EQ(errno, ENOENT);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--check") == 0)
		return check_image();
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	CHECK(n > 0);
	self_path[n] = 0;

	for (form = 0; form < 5; form++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			sig_mask1(SIG_BLOCK, SIGUSR1);
			sig_mask1(SIG_UNBLOCK, SIGUSR2);
			pthread_t t;
			CHECK_OK(pthread_create(&t, NULL, exec_thread, NULL));
			pthread_join(t, NULL);
			_exit(21);         /* not reached: the exec ends every thread */
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			CHECK_EQ(errno, EINTR);
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), 0);
	}

	sig_on(SIGUSR1, on_usr1, 0, 0);
	sig_mask1(SIG_UNBLOCK, SIGUSR1);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, failing_exec, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(kill(getpid(), SIGUSR1));
	CHECK(sig_wait_for(&got_usr1, 1, 10000));
	return 0;
}
