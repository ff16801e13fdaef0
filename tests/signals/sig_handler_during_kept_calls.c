/*
 * sig_handler_during_kept_calls — a handler runs while the call it
 * interrupts waits, not when the call returns, for the blocking calls
 * that Weft makes with the VP held (the caller is the process's only
 * thread: nothing else could use the VP, runtime/handoff.c, kept_call).
 *
 * Invariant (Linux, man 7 signal): an interval timer's SIGALRM, every
 * 40 ms, interrupts waitpid(WUNTRACED), waitpid, flock and fcntl(F_SETLKW)
 * while a child keeps them waiting for 300 ms, and semop while nobody
 * posts.  With SA_RESTART the handler runs while the call waits (its first
 * run long before the child lets go, several runs in all) and the call is
 * made again: waitpid returns the child, flock and F_SETLKW return 0 once
 * the child's lock is gone; semop fails with EINTR all the same (System V
 * IPC is never restarted).  Without SA_RESTART each call fails with EINTR
 * at the first signal, its handler run.
 *
 * Before the fix the kernel restarted Weft's kept call behind its
 * dispatcher, which had deferred the handler to the call's end: a
 * waitpid(WUNTRACED) of a shell-like process ran its timer's handler once,
 * 300 ms late.
 */
#include "sig_test.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/time.h>
#include <sys/wait.h>

#define PERIOD_MS 40
#define HOLD_MS 300

enum call { C_WAIT_STOPPED, C_WAIT, C_FLOCK, C_SETLKW, C_SEMOP, NCALL };
static const char *const names[] = { "waitpid(WUNTRACED)", "waitpid", "flock", "fcntl(F_SETLKW)", "semop" };

static volatile int runs;
static volatile int64_t first_ns;
static char path[64];

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	if (runs++ == 0)
		first_ns = test_now_ns();
}

static void timer_every(long ms)
{
	struct itimerval it = { { 0, ms * 1000 }, { 0, ms * 1000 } };
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/* A child that holds what the call waits for (a lock, or just its life)
 * for HOLD_MS, and says when it holds it. */
static pid_t holder(enum call c)
{
	int go[2];
	CHECK_EQ(pipe(go), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0)
			_exit(2);
		if (c == C_FLOCK && flock(fd, LOCK_EX) != 0)
			_exit(3);
		if (c == C_SETLKW) {
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			if (fcntl(fd, F_SETLK, &fl) != 0)
				_exit(4);
		}
		if (write(go[1], "x", 1) != 1)
			_exit(5);
		struct timespec ts = { 0, HOLD_MS * SIG_MS };
		nanosleep(&ts, NULL);
		_exit(0);
	}
	char ch;
	CHECK_EQ(read(go[0], &ch, 1), 1);
	close(go[0]);
	close(go[1]);
	return pid;
}

static void one(enum call c, bool restart)
{
	sig_on(SIGALRM, on_alarm, restart ? SA_RESTART : 0, 0);
	int semid = -1;
	pid_t pid = 0;
	if (c == C_SEMOP) {
		semid = semget(IPC_PRIVATE, 1, 0600);
		CHECK(semid >= 0);
	} else {
		pid = holder(c);
	}
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	runs = 0;
	first_ns = 0;
	int64_t t0 = test_now_ns();
	timer_every(PERIOD_MS);
	long r;
	int st = 0;
	errno = 0;
	switch (c) {
	case C_WAIT_STOPPED:
		r = waitpid(pid, &st, WUNTRACED);
		break;
	case C_WAIT:
		r = waitpid(pid, &st, 0);
		break;
	case C_FLOCK:
		r = flock(fd, LOCK_EX);
		break;
	case C_SETLKW: {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		r = fcntl(fd, F_SETLKW, &fl);
		break;
	}
	default: {
		struct sembuf op = { 0, -1, 0 };
		r = semop(semid, &op, 1);
		break;
	}
	}
	int err = errno;
	int64_t t1 = test_now_ns();
	timer_every(0);
	int n = runs;
	printf("%-20s %s: returned %ld (%s) after %lld ms; handler ran %d times, first after %lld ms\n", names[c],
	       restart ? "SA_RESTART" : "no restart", r, r < 0 ? strerror(err) : "ok", (long long)((t1 - t0) / SIG_MS),
	       n, n ? (long long)((first_ns - t0) / SIG_MS) : -1LL);
	/* the handler ran while the call waited, its first run at the first
	 * signal (bound: 5 periods) */
	CHECK(n >= 1);
	CHECK(first_ns - t0 < 5 * PERIOD_MS * SIG_MS);
	if (restart && c != C_SEMOP) {
		/* made again after each handler: the call's own result, after
		 * the child let go, and several handlers before that */
		if (c == C_WAIT_STOPPED || c == C_WAIT) {
			CHECK_EQ(r, pid);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			pid = 0;
		} else {
			CHECK_EQ(r, 0);
		}
		CHECK(t1 - t0 >= (HOLD_MS / 2) * SIG_MS);
		CHECK(n >= 3);
	} else {
		/* ended by the first signal, its handler run */
		CHECK_EQ(r, -1);
		CHECK_EQ(err, EINTR);
		CHECK(t1 - t0 < 5 * PERIOD_MS * SIG_MS);
	}
	close(fd);
	if (pid > 0)
		CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (semid >= 0)
		CHECK_EQ(semctl(semid, 0, IPC_RMID), 0);
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/sig_kept_calls.%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "lock", 4), 4);
	close(fd);
	for (int c = 0; c < NCALL; c++) {
		one((enum call)c, true);
		one((enum call)c, false);
	}
	unlink(path);
	printf("ok: handlers ran while the calls waited\n");
	return 0;
}
