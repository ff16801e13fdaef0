/*
 * io_timeouts_signals_epipe — the wrapped calls keep NPTL's (Linux's)
 * semantics for time limits, signals and broken pipes.  What Linux does,
 * and what is checked:
 *
 *  - poll, select, epoll_wait with a timeout return 0 once it has passed
 *    (not before it; here within 200 ms after); select writes back the time
 *    left (0 after a timeout).
 *  - SO_RCVTIMEO on a socket: a blocking recv or read with nothing to read
 *    returns -1/EAGAIN after the timeout; accept too, and a socket accepted
 *    from such a listener inherits its timeout.  SO_SNDTIMEO: a
 *    blocking send that moved some bytes before the timeout returns that
 *    count; one that moved none returns -1/EAGAIN.
 *  - A signal caught while a UT is parked in read: the handler runs; without
 *    SA_RESTART read returns -1/EINTR, with SA_RESTART it goes on and
 *    returns the data that comes later; with SO_RCVTIMEO set, even
 *    SA_RESTART gives EINTR (signal(7)); poll is never restarted: EINTR.
 *    The signal comes from another process while every UT is parked, so
 *    the kernel would give it to the main thread; main is the reader.
 *  - Weft's own tick never ends a wait: a reader parked while another UT
 *    computes under a 1 ms time slice gets its data, not EINTR.
 *  - write to a socket whose peer has gone: SIGPIPE (its handler runs once,
 *    before write returns) and -1/EPIPE; with MSG_NOSIGNAL no signal; with
 *    SIGPIPE ignored, EPIPE alone.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000ll

static int64_t elapsed_since(int64_t t0) { return test_now_ns() - t0; }

static void check_window(int64_t took, int64_t want, const char *what)
{
	if (took < want || took > want + 200 * MS) {
		fprintf(stderr, "%s: took %lld ms, want %lld ms\n", what, (long long)(took / MS),
			(long long)(want / MS));
		exit(1);
	}
}

static void timeouts(void)
{
	int p[2];
	CHECK_OK(pipe(p));
	struct pollfd pf = { p[0], POLLIN, 0 };
	int64_t t0 = test_now_ns();
	CHECK_EQ(poll(&pf, 1, 50), 0);
	check_window(elapsed_since(t0), 50 * MS, "poll");

	fd_set r;
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	struct timeval tv = { 0, 60000 };
	t0 = test_now_ns();
	CHECK_EQ(select(p[0] + 1, &r, NULL, NULL, &tv), 0);
	check_window(elapsed_since(t0), 60 * MS, "select");
	CHECK_EQ(tv.tv_sec, 0);
	CHECK_EQ(tv.tv_usec, 0);
	CHECK(!FD_ISSET(p[0], &r));

	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN };
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e));
	t0 = test_now_ns();
	CHECK_EQ(epoll_wait(ep, &e, 1, 40), 0);
	check_window(elapsed_since(t0), 40 * MS, "epoll_wait");
	close(ep);
	close(p[0]);
	close(p[1]);
}

static void set_timeo(int fd, int name, long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	CHECK_OK(setsockopt(fd, SOL_SOCKET, name, &tv, sizeof tv));
}

static void socket_timeouts(void)
{
	int s[2];
	char b[1 << 16];
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	set_timeo(s[0], SO_RCVTIMEO, 50);
	int64_t t0 = test_now_ns();
	errno = 0;
	CHECK_EQ(recv(s[0], b, 10, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	check_window(elapsed_since(t0), 50 * MS, "recv SO_RCVTIMEO");
	t0 = test_now_ns();
	CHECK_EQ(read(s[0], b, 10), -1);
	CHECK_EQ(errno, EAGAIN);
	check_window(elapsed_since(t0), 50 * MS, "read SO_RCVTIMEO");

	/* SO_SNDTIMEO: the buffer takes some bytes, then the time runs out */
	int small = 4096;
	setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	set_timeo(s[0], SO_SNDTIMEO, 50);
	t0 = test_now_ns();
	long n = send(s[0], b, sizeof b, 0);
	CHECK(n > 0 && n < (long)sizeof b);
	check_window(elapsed_since(t0), 50 * MS, "send SO_SNDTIMEO, partial");
	t0 = test_now_ns();
	CHECK_EQ(send(s[0], b, sizeof b, 0), -1);  /* the buffer is full: nothing moves */
	CHECK_EQ(errno, EAGAIN);
	check_window(elapsed_since(t0), 50 * MS, "send SO_SNDTIMEO, none");
	close(s[0]);
	close(s[1]);

	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(l, 4));
	set_timeo(l, SO_RCVTIMEO, 50);
	t0 = test_now_ns();
	CHECK_EQ(accept(l, NULL, NULL), -1);
	CHECK_EQ(errno, EAGAIN);
	check_window(elapsed_since(t0), 50 * MS, "accept SO_RCVTIMEO");
	/* an accepted socket inherits the listener's SO_RCVTIMEO */
	socklen_t alen = sizeof a;
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &alen));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
	int d = accept(l, NULL, NULL);
	CHECK(d >= 0);
	t0 = test_now_ns();
	CHECK_EQ(recv(d, b, 10, 0), -1);
	CHECK_EQ(errno, EAGAIN);
	check_window(elapsed_since(t0), 50 * MS, "recv on an accepted socket, the listener's SO_RCVTIMEO");
	close(d);
	close(c);
	close(l);
}

/* ---- signals from another process while main is parked ---- */

static volatile int handled;
static void on_usr1(int sig) { handled++; }

static void handler(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
}

/* A child that sends SIGUSR1 after 50 ms, then writes `data` (if any) to
 * fd after 100 ms more. */
static pid_t helper(int fd, const char *data)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct timespec ts = { 0, 50 * MS };
		nanosleep(&ts, NULL);
		kill(parent, SIGUSR1);
		if (data) {
			ts.tv_nsec = 100 * MS;
			nanosleep(&ts, NULL);
			if (write(fd, data, strlen(data)) < 0)
				_exit(1);
		}
		_exit(0);
	}
	return pid;
}


static void signals(void)
{
	int p[2];
	char b[8];
	CHECK_OK(pipe(p));

	handler(0);
	handled = 0;
	pid_t pid = helper(p[1], NULL);
	errno = 0;
	CHECK_EQ(read(p[0], b, sizeof b), -1);
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(handled, 1);
	test_reap(pid);

	handler(SA_RESTART);
	handled = 0;
	pid = helper(p[1], "late");
	CHECK_EQ(read(p[0], b, sizeof b), 4);
	CHECK(memcmp(b, "late", 4) == 0);
	CHECK_EQ(handled, 1);
	test_reap(pid);

	handled = 0;
	struct pollfd pf = { p[0], POLLIN, 0 };
	pid = helper(p[1], NULL);
	CHECK_EQ(poll(&pf, 1, -1), -1);            /* never restarted */
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(handled, 1);
	test_reap(pid);

	int s[2];
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	set_timeo(s[0], SO_RCVTIMEO, 5000);
	handled = 0;
	pid = helper(s[1], NULL);
	CHECK_EQ(recv(s[0], b, sizeof b, 0), -1);  /* a timeout set: not restarted */
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(handled, 1);
	test_reap(pid);
	close(s[0]);
	close(s[1]);
	close(p[0]);
	close(p[1]);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- the tick ---- */

static volatile int spin_stop;
static void *spinner(void *arg)
{
	volatile unsigned long x = 0;
	while (!spin_stop)
		x++;
	return arg;
}

static int tick_pipe[2];
static void *late_writer(void *arg)
{
	usleep(150000);
	CHECK_EQ(write(tick_pipe[1], "t", 1), 1);
	return arg;
}

static void tick_never_interrupts(void)
{
	CHECK_OK(weft_timeslice_set(1000000));
	CHECK_OK(pipe(tick_pipe));
	pthread_t sp, wr;
	CHECK_OK(pthread_create(&sp, NULL, spinner, NULL));
	CHECK_OK(pthread_create(&wr, NULL, late_writer, NULL));
	char c;
	errno = 0;
	CHECK_EQ(read(tick_pipe[0], &c, 1), 1);
	CHECK_EQ(c, 't');
	struct pollfd pf = { tick_pipe[0], POLLIN, 0 };
	int64_t t0 = test_now_ns();
	CHECK_EQ(poll(&pf, 1, 100), 0);            /* a timeout, not EINTR */
	check_window(elapsed_since(t0), 100 * MS, "poll under ticks");
	spin_stop = 1;
	CHECK_OK(pthread_join(sp, NULL));
	CHECK_OK(pthread_join(wr, NULL));
	close(tick_pipe[0]);
	close(tick_pipe[1]);
}

/* ---- EPIPE and SIGPIPE ---- */

static volatile int piped;
static void on_pipe(int sig) { piped++; }

static void epipe(void)
{
	int s[2];
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	close(s[1]);
	signal(SIGPIPE, on_pipe);
	piped = 0;
	errno = 0;
	CHECK_EQ(write(s[0], "x", 1), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(piped, 1);
	CHECK_EQ(send(s[0], "x", 1, 0), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(piped, 2);
	CHECK_EQ(send(s[0], "x", 1, MSG_NOSIGNAL), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(piped, 2);
	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ(write(s[0], "x", 1), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(piped, 2);
	close(s[0]);

	int p[2];
	CHECK_OK(pipe(p));
	close(p[0]);
	CHECK_EQ(write(p[1], "x", 1), -1);
	CHECK_EQ(errno, EPIPE);
	close(p[1]);
}

int main(void)
{
	timeouts();
	socket_timeouts();
	signals();
	epipe();
	tick_never_interrupts();
	return 0;
}
