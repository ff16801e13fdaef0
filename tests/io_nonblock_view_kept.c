/*
 * io_nonblock_view_kept — the program's view of its descriptors never
 * changes, and neither does another process's.
 *
 *   - a descriptor the program made non-blocking (socket SOCK_NONBLOCK,
 *     accept4 SOCK_NONBLOCK, pipe2 O_NONBLOCK, fcntl F_SETFL, ioctl
 *     FIONBIO, open O_NONBLOCK) answers EAGAIN at once, and F_GETFL reads
 *     back what was set; clearing it makes the calls park again;
 *   - the flag belongs to the open file description: set through one
 *     descriptor, a dup of it sees it too, and cleared through the dup, the
 *     first one blocks again;
 *   - Weft never sets O_NONBLOCK itself: after a UT parked in read and in
 *     write, F_GETFL and the kernel's own record (/proc/self/fdinfo) show
 *     the descriptors as the program left them;
 *   - a pipe shared with a child process (cat, which reads its stdin
 *     blocking and would fail with EAGAIN on a non-blocking one) while a UT
 *     here is parked writing into it: the child's stdin is blocking
 *     (/proc/PID/fdinfo/0), and every byte arrives.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void expect_eagain(int fd, const char *what)
{
	char c;
	int64_t t0 = test_now_ns();
	ssize_t r = read(fd, &c, 1);
	if (r != -1 || errno != EAGAIN) {
		fprintf(stderr, "%s: read gave %zd errno %d, want EAGAIN\n", what, r, errno);
		exit(1);
	}
	CHECK(test_now_ns() - t0 < 500000000);
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
}

/* O_NONBLOCK as the kernel records it for fd of process pid. */
static bool kernel_nonblock(pid_t pid, int fd)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	unsigned long flags = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "flags: %lo", &flags) == 1)
			break;
	fclose(f);
	return flags & O_NONBLOCK;
}

static int wake_fd;
static void *write_later(void *arg)
{
	usleep(20000);
	CHECK_EQ(write(wake_fd, "z", 1), 1);
	return arg;
}

/* read parks (and returns the byte written 20 ms later) */
static void expect_parks(int rfd, int wfd)
{
	wake_fd = wfd;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, write_later, NULL));
	char c = 0;
	int64_t t0 = test_now_ns();
	CHECK_EQ(read(rfd, &c, 1), 1);
	CHECK_EQ(c, 'z');
	CHECK(test_now_ns() - t0 >= 10000000);
	CHECK_OK(pthread_join(t, NULL));
}

static void made_nonblocking(void)
{
	int p[2], s[2];
	CHECK_OK(pipe2(p, O_NONBLOCK));
	expect_eagain(p[0], "pipe2");
	close(p[0]);
	close(p[1]);

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s));
	expect_eagain(s[0], "socketpair");
	char c;
	CHECK_EQ(recv(s[0], &c, 1, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	close(s[0]);
	close(s[1]);

	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(l, 4));
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
	CHECK_EQ(accept(l, NULL, NULL), -1);          /* the listener is non-blocking */
	CHECK_EQ(errno, EAGAIN);
	int c1 = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(c1, (struct sockaddr *)&a, sizeof a));
	int fd;
	while ((fd = accept4(l, NULL, NULL, SOCK_NONBLOCK)) < 0)
		CHECK_EQ(errno, EAGAIN);
	expect_eagain(fd, "accept4 SOCK_NONBLOCK");
	close(fd);
	while ((fd = accept4(l, NULL, NULL, 0)) < 0 && errno == EAGAIN) {
		int c2 = socket(AF_INET, SOCK_STREAM, 0);
		CHECK_OK(connect(c2, (struct sockaddr *)&a, sizeof a));
	}
	CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));    /* accept does not inherit it */
	close(fd);
	close(c1);
	close(l);

	CHECK_OK(pipe(p));
	int fl = fcntl(p[0], F_GETFL);
	CHECK(!(fl & O_NONBLOCK));
	CHECK_OK(fcntl(p[0], F_SETFL, fl | O_NONBLOCK));
	expect_eagain(p[0], "fcntl F_SETFL");
	CHECK_OK(fcntl(p[0], F_SETFL, fl));
	expect_parks(p[0], p[1]);
	int on = 1, off = 0;
	CHECK_OK(ioctl(p[0], FIONBIO, &on));
	expect_eagain(p[0], "ioctl FIONBIO");
	CHECK_OK(ioctl(p[0], FIONBIO, &off));
	expect_parks(p[0], p[1]);

	/* one open file description, two numbers */
	int d = dup(p[0]);
	CHECK_OK(fcntl(p[0], F_SETFL, fl | O_NONBLOCK));
	expect_eagain(d, "dup of a non-blocking descriptor");
	CHECK_OK(fcntl(d, F_SETFL, fl));
	expect_parks(p[0], p[1]);
	close(d);
	close(p[0]);
	close(p[1]);

	char fifo[] = "/tmp/weft-fifo-XXXXXX";
	CHECK(mkdtemp(fifo) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/f", fifo);
	CHECK_OK(mkfifo(path, 0600));
	fd = open(path, O_RDONLY | O_NONBLOCK);
	CHECK(fd >= 0);
	int w = open(path, O_WRONLY);
	CHECK(w >= 0);
	expect_eagain(fd, "open O_NONBLOCK");
	close(w);
	close(fd);
	unlink(path);
	rmdir(fifo);
}

static int big_fd;
static volatile int big_done;
static char big[1 << 20];

static void *write_big(void *arg)
{
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 13 + (i >> 12));
	CHECK_EQ(write(big_fd, big, sizeof big), (ssize_t)sizeof big);
	big_done = 1;
	return arg;
}

/* cat reads the pipe blocking while this process parks writing into it. */
static void shared_with_child(void)
{
	int in[2], out[2];
	CHECK_OK(pipe(in));
	CHECK_OK(pipe(out));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	big_fd = in[1];
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, write_big, NULL));
	/* nobody reads cat's output yet: cat stops, the pipe fills, the
	 * writer parks; look at both ends meanwhile */
	usleep(100000);
	CHECK(!big_done);
	CHECK(!kernel_nonblock(pid, 0));
	CHECK(!kernel_nonblock(getpid(), in[1]));
	CHECK(!(fcntl(in[1], F_GETFL) & O_NONBLOCK));
	static char back[1 << 20];
	size_t got = 0;
	while (got < sizeof back) {
		ssize_t n = read(out[0], back + got, sizeof back - got);
		CHECK(n > 0);
		got += (size_t)n;
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK(memcmp(back, big, sizeof big) == 0);
	close(in[1]);
	char c;
	CHECK_EQ(read(out[0], &c, 1), 0);
	close(out[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	made_nonblocking();
	shared_with_child();
	return 0;
}
