/*
 * io_fd_dup_fork_exec — the descriptor bookkeeping follows dup, dup2, dup3,
 * fcntl(F_DUPFD), fork and exec as the kernel's table does:
 *
 *  - a UT parks reading a dup of a pipe; closing the original number does
 *    not disturb it; data written to the pipe wakes it.
 *  - dup2 onto a number a UT waits on: as a close (Linux), the waiter keeps
 *    the old file and completes from it; the new file under the number is
 *    another one, read by the next call.
 *  - O_NONBLOCK set through one number of a shared description is seen
 *    through the others (F_DUPFD and dup3 copies): EAGAIN at once; cleared
 *    again, the read parks.
 *  - fork: the child has a poller of its own; a UT of the child parks in
 *    read while another computes, and is woken by its parent, while a UT of
 *    the parent is parked on another pipe and is woken by the child — no
 *    event goes to the wrong process.
 *  - exec: the program run sees only its own descriptors (Weft's epoll
 *    instance, eventfd and hidden duplicates are close-on-exec) and none
 *    of them non-blocking.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

static int rfd;
static volatile long got;
static char gotc;

static void *reader(void *arg)
{
	char c = 0;
	got = read(rfd, &c, 1);
	gotc = c;
	return arg;
}

static pthread_t park_reader(int fd)
{
	rfd = fd;
	got = -100;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, reader, NULL));
	usleep(20000);
	CHECK_EQ(got, -100);
	return t;
}

static void dup_and_close_original(void)
{
	int p[2];
	CHECK_OK(pipe(p));
	int d = dup(p[0]);
	CHECK(d >= 0);
	pthread_t t = park_reader(d);
	CHECK_OK(close(p[0]));
	usleep(10000);
	CHECK_EQ(got, -100);
	CHECK_EQ(write(p[1], "a", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got, 1);
	CHECK_EQ(gotc, 'a');
	close(d);
	close(p[1]);
}

static void dup2_onto_waited(void)
{
	int oldp[2], newp[2];
	CHECK_OK(pipe(oldp));
	CHECK_OK(pipe(newp));
	pthread_t t = park_reader(oldp[0]);
	CHECK_EQ(dup2(newp[0], oldp[0]), oldp[0]);   /* the number now names the new pipe */
	CHECK_EQ(write(newp[1], "n", 1), 1);
	usleep(20000);
	CHECK_EQ(got, -100);                          /* the waiter has the old file */
	CHECK_EQ(write(oldp[1], "o", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got, 1);
	CHECK_EQ(gotc, 'o');
	char c = 0;
	CHECK_EQ(read(oldp[0], &c, 1), 1);            /* the number reads the new pipe */
	CHECK_EQ(c, 'n');
	close(oldp[0]);
	close(oldp[1]);
	close(newp[0]);
	close(newp[1]);
}

static void nonblock_shared_through_copies(void)
{
	int p[2];
	CHECK_OK(pipe(p));
	int d = fcntl(p[0], F_DUPFD_CLOEXEC, 50);
	CHECK(d >= 50);
	int e = dup3(p[0], 70, O_CLOEXEC);
	CHECK_EQ(e, 70);
	int fl = fcntl(d, F_GETFL);
	CHECK_OK(fcntl(d, F_SETFL, fl | O_NONBLOCK));
	char c;
	CHECK_EQ(read(p[0], &c, 1), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(read(e, &c, 1), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK(fcntl(e, F_GETFL) & O_NONBLOCK);
	CHECK_OK(fcntl(e, F_SETFL, fl));
	CHECK(!(fcntl(p[0], F_GETFL) & O_NONBLOCK));
	pthread_t t = park_reader(p[0]);
	CHECK_EQ(write(p[1], "b", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got, 1);
	close(d);
	close(e);
	close(p[0]);
	close(p[1]);
}

static volatile int child_count_stop;
static void *child_counter(void *arg)
{
	volatile long n = 0;
	while (!child_count_stop) {
		n++;
		sched_yield();
	}
	return (void *)n;
}

static void fork_each_its_own_poller(void)
{
	int to_child[2], to_parent[2];
	CHECK_OK(pipe(to_child));
	CHECK_OK(pipe(to_parent));
	/* the parent's poller exists and has the parent's pipe registered */
	pthread_t t = park_reader(to_parent[0]);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		pthread_t ct, rt;
		rfd = to_child[0];
		got = -100;
		if (pthread_create(&ct, NULL, child_counter, NULL) || pthread_create(&rt, NULL, reader, NULL))
			_exit(10);
		usleep(20000);
		if (got != -100)
			_exit(11);
		if (write(to_parent[1], "c", 1) != 1)       /* wake the parent's reader */
			_exit(12);
		pthread_join(rt, NULL);                       /* the parent writes back */
		child_count_stop = 1;
		void *n;
		pthread_join(ct, &n);
		_exit(got == 1 && gotc == 'p' && (long)n > 0 ? 0 : 13);
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got, 1);
	CHECK_EQ(gotc, 'c');
	CHECK_EQ(write(to_child[1], "p", 1), 1);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

/* Run argv with stdout on a pipe; its output. */
static void run_capture(char *const argv[], char *buf, size_t size)
{
	int out[2];
	CHECK_OK(pipe2(out, O_CLOEXEC));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(out[0], buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(out[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The descriptors this process had when it started and keeps across exec
 * (the test's runner may pass some), before Weft made any of its own. */
static char inherited[64][8];
static int ninherited;

static void note_inherited(void)
{
	for (int fd = 3; fd < 1024 && ninherited < 64; fd++) {
		int r = fcntl(fd, F_GETFD);
		if (r >= 0 && !(r & FD_CLOEXEC))
			snprintf(inherited[ninherited++], sizeof inherited[0], "%d", fd);
	}
}

/* The program exec'd sees the standard descriptors, ls's own directory
 * descriptor (the lowest free number) and what this process inherited — nothing of Weft's —, and
 * its stdout (a pipe this process has read from, so Weft knows it) is not
 * non-blocking. */
static void exec_sees_only_its_own(void)
{
	char buf[4096];
	char *ls[] = { "/bin/ls", "/proc/self/fd", NULL };
	run_capture(ls, buf, sizeof buf);
	/* ls's directory descriptor: the lowest number the others leave free */
	char own[16];
	for (int fd = 3; fd < 1024; fd++) {
		snprintf(own, sizeof own, "%d", fd);
		bool taken = false;
		for (int i = 0; i < ninherited; i++)
			taken |= !strcmp(own, inherited[i]);
		if (!taken)
			break;
	}
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		bool known = !strcmp(line, "0") || !strcmp(line, "1") || !strcmp(line, "2") || !strcmp(line, own);
		for (int i = 0; i < ninherited && !known; i++)
			known = !strcmp(line, inherited[i]);
		if (!known) {
			fprintf(stderr, "exec'd ls sees descriptor %s\n", line);
			exit(1);
		}
	}
	char *grep[] = { "/bin/grep", "^flags", "/proc/self/fdinfo/1", NULL };
	run_capture(grep, buf, sizeof buf);
	unsigned long flags;
	CHECK_EQ(sscanf(buf, "flags: %lo", &flags), 1);
	CHECK(!(flags & O_NONBLOCK));
}

int main(void)
{
	note_inherited();
	signal(SIGPIPE, SIG_IGN);
	dup_and_close_original();
	dup2_onto_waited();
	nonblock_shared_through_copies();
	fork_each_its_own_poller();
	exec_sees_only_its_own();
	return 0;
}
