/*
 * io_close_during_wait — what a UT waiting on a descriptor sees when
 * another UT closes that descriptor: what a thread blocked in the kernel
 * sees on Linux.
 *
 * Linux: a blocked read, write, accept, poll or epoll_wait holds its own
 * reference to the open file, so close() from another thread does not wake
 * it; it completes when the file becomes ready (the peer writes, a client
 * connects, the peer hangs up), and the number is free for reuse at once.
 * shutdown(), which acts on the socket rather than the number, does wake a
 * blocked reader (EOF).  Checked for read, accept, poll, select and
 * epoll_wait, and that the reused number is a different file that the
 * waiter never sees.  poll and select are woken by the files they saw when
 * they started, but then look again at the numbers they were given: Linux
 * (6.x) reports a number closed meanwhile as POLLNVAL (poll) and as ready
 * in every set it was in (select).
 */
#include "check.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static int wfd;
static volatile int done;
static long result;
static char got[16];

static void *reader(void *arg)
{
	result = read(wfd, got, sizeof got);
	done = 1;
	return arg;
}

static void *acceptor(void *arg)
{
	result = accept(wfd, NULL, NULL);
	done = 1;
	return arg;
}

static void *poller(void *arg)
{
	struct pollfd p = { wfd, POLLIN, 0 };
	result = poll(&p, 1, -1);
	if (result == 1)
		result = p.revents;
	done = 1;
	return arg;
}

static void *selecter(void *arg)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(wfd, &r);
	result = select(wfd + 1, &r, NULL, NULL, NULL);
	if (result == 1)
		result = FD_ISSET(wfd, &r) ? 1000 : -1;
	done = 1;
	return arg;
}

static int epfd;
static void *epoller(void *arg)
{
	struct epoll_event e;
	result = epoll_wait(epfd, &e, 1, -1);
	if (result == 1)
		result = e.data.u32;
	done = 1;
	return arg;
}

static pthread_t start(void *(*fn)(void *))
{
	done = 0;
	result = -100;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	usleep(20000);
	CHECK(!done);
	return t;
}

/* close the number under the waiter, reuse it, check the waiter waits on */
static void close_and_reuse(int fd)
{
	CHECK_OK(close(fd));
	usleep(20000);
	CHECK(!done);
	int q[2];
	CHECK_OK(pipe(q));                       /* takes the lowest numbers: fd among them */
	CHECK(q[0] == fd || q[1] == fd);
	CHECK_EQ(write(q[1], "other", 5), 5);
	usleep(20000);
	CHECK(!done);                            /* the new file is not the waiter's */
	close(q[0]);
	close(q[1]);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	int s[2];

	/* read: completes with the data the peer writes after the close */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	wfd = s[0];
	pthread_t t = start(reader);
	close_and_reuse(s[0]);
	CHECK_EQ(write(s[1], "late", 4), 4);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, 4);
	CHECK(memcmp(got, "late", 4) == 0);
	close(s[1]);

	/* the peer hanging up ends it too (EOF) */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	wfd = s[0];
	t = start(reader);
	close_and_reuse(s[0]);
	close(s[1]);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, 0);

	/* shutdown wakes a reader at once */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	wfd = s[0];
	t = start(reader);
	CHECK_OK(shutdown(s[0], SHUT_RDWR));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, 0);
	close(s[0]);
	close(s[1]);

	/* accept: the listening socket lives on while the UT waits in it */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(l, 4));
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
	wfd = l;
	t = start(acceptor);
	close_and_reuse(l);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(result >= 0);
	CHECK_EQ(write(c, "x", 1), 1);
	char b;
	CHECK_EQ(read((int)result, &b, 1), 1);
	close((int)result);
	close(c);

	/* poll: woken by the old file, it reports the closed number POLLNVAL */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	wfd = s[0];
	t = start(poller);
	close_and_reuse(s[0]);
	CHECK_EQ(write(s[1], "p", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, POLLNVAL);
	close(s[1]);

	/* select: the closed number is reported ready */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	wfd = s[0];
	t = start(selecter);
	close_and_reuse(s[0]);
	CHECK_EQ(write(s[1], "s", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, 1000);
	close(s[1]);

	/* epoll_wait on an epoll instance whose descriptor is closed */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	epfd = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = 99 };
	CHECK_OK(epoll_ctl(epfd, EPOLL_CTL_ADD, s[0], &e));
	t = start(epoller);
	close_and_reuse(epfd);
	CHECK_EQ(write(s[1], "e", 1), 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(result, 99);
	close(s[0]);
	close(s[1]);
	return 0;
}
