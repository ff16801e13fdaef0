/*
 * io_poller_woken_by_rejoin — a UT coming back from a call that handed the
 * VP on (flock, runtime/handoff.c) runs at once even while the VP sleeps in
 * the io layer's poller: its kernel thread's kick wakes the poller (the
 * poller's wake(vp), called from preempt.c's kick), not only the futex word
 * the plain idle sleep waits on.
 *
 * A reader UT waits in read() on a pipe nobody writes yet and main waits to
 * join a locker UT, so the VP sleeps in epoll with no timer and nothing of
 * the poller's will become ready; the locker waits in flock() for a lock a
 * child process holds for 100 ms (and then lives on).  When the child lets
 * go, the locker must run within a short time — only the rejoin's kick can
 * wake the VP — and it then writes the byte the reader waits for.  Skipped
 * where the VP was not handed on (static builds, activations off).
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int p[2], lockfd;
static volatile int64_t locked_at;

static void *reader(void *arg)
{
	char c;
	return (void *)read(p[0], &c, 1);
}

static void *locker(void *arg)
{
	CHECK_OK(flock(lockfd, LOCK_EX));
	locked_at = test_now_ns();
	return arg;
}

int main(void)
{
	char path[] = "/tmp/weft-rejoin-XXXXXX";
	lockfd = mkstemp(path);
	CHECK(lockfd >= 0);
	CHECK_OK(pipe(p));
	int gate[2];
	CHECK_OK(pipe(gate));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0 || flock(fd, LOCK_EX) != 0)
			_exit(1);
		if (write(gate[1], "l", 1) != 1)
			_exit(2);
		usleep(100000);
		flock(fd, LOCK_UN);
		sleep(3);
		_exit(0);
	}
	char c;
	CHECK_EQ(read(gate[0], &c, 1), 1);        /* the child holds the lock */
	struct weft_stats before, after;
	CHECK_OK(weft_stats_get(&before, sizeof before));

	pthread_t r, l;
	int64_t t0 = test_now_ns();
	CHECK_OK(pthread_create(&r, NULL, reader, NULL));
	CHECK_OK(pthread_create(&l, NULL, locker, NULL));
	CHECK_OK(pthread_join(l, NULL));          /* the VP sleeps in epoll meanwhile */
	CHECK_OK(weft_stats_get(&after, sizeof after));
	CHECK_EQ(write(p[1], "x", 1), 1);
	void *n;
	CHECK_OK(pthread_join(r, &n));
	CHECK_EQ((long)n, 1);
	kill(pid, SIGKILL);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	unlink(path);
	if (after.handoffs == before.handoffs)
		SKIP("flock did not hand the VP on here (static build or activations off)");
	int64_t took = locked_at - t0;
	if (took > 1000000000) {
		fprintf(stderr, "the locker got the lock %lld ms after start (held 100 ms)\n",
			(long long)(took / 1000000));
		return 1;
	}
	return 0;
}
