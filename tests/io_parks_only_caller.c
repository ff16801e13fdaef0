/*
 * io_parks_only_caller — every wrapped call that waits on a descriptor
 * parks only its caller: while one UT waits in it, a counting UT keeps
 * counting; when the descriptor becomes ready the call returns what it
 * would have returned on NPTL.
 *
 * One case per call (and per form of it, and per kind of descriptor the
 * call waits on differently: a pipe and a socket with the per-call
 * non-blocking forms, a terminal and an eventfd that are polled first, a
 * TCP listener whose full backlog drops the SYN so that connect waits for
 * the retransmission).  Each case sets up a descriptor on which the call
 * must wait, starts a UT that makes the call, lets the counter run until
 * it has counted COUNTS more while the caller is still inside, then makes
 * the call completable (writes data, drains a buffer, accepts, lets a
 * child exit) and checks the result.
 *
 * Run with WEFT_BLOCK_THRESHOLD=0 (tests/CMakeLists.txt): the monitor that
 * would hand the processor on from a call Weft did not wrap is off, so a
 * call that blocked its kernel thread would stop the counter for good (an
 * alarm ends the run) rather than for a millisecond.  The counter yields
 * after every count; then every case runs again with a counter that never
 * yields, under a 1 ms time slice, so that each waiter is woken by the
 * poller's quantum while the VP never idles, and Weft's tick, landing on
 * the calls' own system calls, never makes one fail with EINTR.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define COUNTS 200

static volatile long count;
static volatile int stop_counter;
static volatile int spin_only;

static void *counter(void *arg)
{
	while (!stop_counter) {
		count++;
		if (!spin_only)
			sched_yield();
	}
	return arg;
}

/* ---- the shared state of one case ---- */

static int p[2];               /* a pipe */
static int q[2];               /* a second pipe (tee's output) */
static int tty = -1, ptm = -1; /* a terminal and its master */
static int efd = -1;           /* an eventfd */
static int s[2];               /* a socketpair (or a connected TCP pair) */
static int lst = -1;           /* a listener */
static int tmpf = -1;          /* a regular file */
static pid_t child = -1;
static int child_gate[2];      /* the child exits when this pipe has a byte */
static long result;
static int result_errno;
static char buf[1 << 16];
static volatile int returned;

struct io_case {
	const char *name;
	void (*setup)(void);
	long (*call)(void);
	void (*trigger)(void);
	long want;                 /* expected result (-2: any >= 0; -3: any > 0) */
};

static void *caller(void *arg)
{
	const struct io_case *c = arg;
	errno = 0;
	result = c->call();
	result_errno = errno;
	returned = 1;
	return NULL;
}

/* Fill a socket or pipe to the last byte of room / empty it, without
 * blocking (O_NONBLOCK for the while). */
static void fill(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (write(fd, buf, sizeof buf) > 0)
		;
	while (write(fd, buf, 1) > 0)
		;
	fcntl(fd, F_SETFL, fl);
}

static void drain(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (read(fd, buf, sizeof buf) > 0)
		;
	fcntl(fd, F_SETFL, fl);
}

/* ---- set-ups and triggers ---- */

static void setup_pipe(void) { CHECK_OK(pipe(p)); }
static void setup_sockets(void)
{
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	int small = 4096;
	setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	setsockopt(s[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
}
static void setup_dgram(void) { CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, s)); }
static void setup_full(void) { setup_sockets(); fill(s[0]); }
static void setup_listener(void)
{
	lst = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK_OK(bind(lst, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(lst, 16));
}
static void setup_child(void)
{
	CHECK_OK(pipe(child_gate));
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		char c;
		close(child_gate[1]);
		while (read(child_gate[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(5);
	}
	close(child_gate[0]);
}
static void setup_file_and_full(void)
{
	setup_full();
	char path[] = "/tmp/weft-io-XXXXXX";
	tmpf = mkstemp(path);
	CHECK(tmpf >= 0);
	unlink(path);
	CHECK_EQ(write(tmpf, buf, 1000), 1000);
}

static void setup_full_pipe(void) { setup_pipe(); fill(p[1]); }
/* a socket with "hello" to read, and a full pipe to splice it into */
static void setup_splice_out(void)
{
	setup_sockets();
	CHECK_EQ(write(s[1], "hello", 5), 5);
	setup_full_pipe();
}
/* a pipe with "hello" to read, and a full pipe to tee it into */
static void setup_tee_out(void)
{
	setup_pipe();
	CHECK_EQ(write(p[1], "hello", 5), 5);
	CHECK_OK(pipe(q));
	fill(q[1]);
}
/* a terminal in raw mode (a read returns what has come), its master */
static void setup_tty(void)
{
	ptm = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(ptm >= 0);
	CHECK_OK(grantpt(ptm));
	CHECK_OK(unlockpt(ptm));
	tty = open(ptsname(ptm), O_RDWR | O_NOCTTY);
	CHECK(tty >= 0);
	struct termios t;
	CHECK_OK(tcgetattr(tty, &t));
	cfmakeraw(&t);
	CHECK_OK(tcsetattr(tty, TCSANOW, &t));
}
static void setup_eventfd(void)
{
	efd = eventfd(0, EFD_CLOEXEC);
	CHECK(efd >= 0);
}

static void trig_pipe(void) { CHECK_EQ(write(p[1], "hello", 5), 5); }
/* what the blocked writer still has to write may need the buffer emptied
 * again: keep reading until it returns */
static void drain_until_returned(int fd)
{
	while (!returned) {
		drain(fd);
		sched_yield();
	}
	drain(fd);
}
static void trig_drain_pipe(void) { drain_until_returned(p[0]); }
static void trig_drain_q(void) { drain_until_returned(q[0]); }
static void trig_tty(void) { CHECK_EQ(write(ptm, "hello", 5), 5); }
static void trig_eventfd(void)
{
	uint64_t one = 1;
	CHECK_EQ(write(efd, &one, sizeof one), (long)sizeof one);
}
static void trig_sock(void) { CHECK_EQ(write(s[1], "hello", 5), 5); }
static void trig_drain(void) { drain_until_returned(s[1]); }
static void trig_connect(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	CHECK_OK(getsockname(lst, (struct sockaddr *)&a, &len));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof a));
	s[1] = c;
}
static void trig_child(void) { CHECK_EQ(write(child_gate[1], "x", 1), 1); }

/* A Unix listener whose backlog is full: a blocking connect waits until
 * the listener accepts one. */
static struct sockaddr_un unaddr;
static int pending = -1;
static void setup_backlog_full(void)
{
	lst = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&unaddr, 0, sizeof unaddr);
	unaddr.sun_family = AF_UNIX;
	snprintf(unaddr.sun_path + 1, sizeof unaddr.sun_path - 1, "weft-parks-%d", getpid());
	CHECK_OK(bind(lst, (struct sockaddr *)&unaddr, sizeof unaddr));
	CHECK_OK(listen(lst, 0));
	pending = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK_OK(connect(pending, (struct sockaddr *)&unaddr, sizeof unaddr));
}
static void trig_accept(void)
{
	int a = accept(lst, NULL, NULL);
	CHECK(a >= 0);
	close(a);
	close(pending);
	pending = -1;
}

/* A TCP listener whose accept queue is full: Linux drops the next SYN, and
 * the connecting side sends it again a second later, when (the queue
 * emptied by trig_accept) it is answered. */
static struct sockaddr_in inaddr;
static void setup_tcp_backlog_full(void)
{
	setup_listener();
	socklen_t len = sizeof inaddr;
	CHECK_OK(getsockname(lst, (struct sockaddr *)&inaddr, &len));
	CHECK_OK(listen(lst, 0));
	pending = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_OK(connect(pending, (struct sockaddr *)&inaddr, sizeof inaddr));
	/* wait until it is in the accept queue (the handshake's last ACK) */
	struct pollfd f = { lst, POLLIN, 0 };
	CHECK_EQ(poll(&f, 1, 5000), 1);
}

/* ---- the calls ---- */

static long c_read(void) { return read(p[0], buf, 100); }
static long c_readv(void) { struct iovec v[2] = { { buf, 2 }, { buf + 2, 98 } }; return readv(p[0], v, 2); }
static long c_write(void) { return write(s[0], buf, 10000); }
static long c_writev(void) { struct iovec v[2] = { { buf, 5000 }, { buf + 5000, 5000 } }; return writev(s[0], v, 2); }
static long c_write_pipe(void) { return write(p[1], buf, 10000); }
static long c_preadv2(void) { struct iovec v = { buf, 100 }; return preadv2(p[0], &v, 1, -1, 0); }
static long c_pwritev2(void) { struct iovec v = { buf, 10000 }; return pwritev2(p[1], &v, 1, -1, 0); }
static long c_read_tty(void) { return read(tty, buf, 100); }
static long c_read_eventfd(void)
{
	uint64_t v = 0;
	long r = read(efd, &v, sizeof v);
	return r == (long)sizeof v && v == 1 ? 1 : -1;
}
static long c_pread(void) { return pread(p[0], buf, 100, 0); }
static long c_pwrite(void) { return pwrite(p[1], buf, 100, 0); }
static long c_recv(void) { return recv(s[0], buf, 100, 0); }
static long c_recv_waitall(void) { return recv(s[0], buf, 5, MSG_WAITALL); }
static long c_recvfrom(void) { return recvfrom(s[0], buf, 100, 0, NULL, NULL); }
static long c_recvmsg(void)
{
	struct iovec v = { buf, 100 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	return recvmsg(s[0], &m, 0);
}
static long c_recvmmsg(void)
{
	struct iovec v = { buf, 100 };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	return recvmmsg(s[0], &m, 1, 0, NULL);
}
static long c_send(void) { return send(s[0], buf, 10000, 0); }
static long c_sendto(void) { return sendto(s[0], buf, 10000, 0, NULL, 0); }
static long c_sendmsg(void)
{
	struct iovec v = { buf, 10000 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	return sendmsg(s[0], &m, 0);
}
static long c_sendmmsg(void)
{
	struct iovec v = { buf, 10000 };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &v, .msg_iovlen = 1 } };
	long r = sendmmsg(s[0], &m, 1, 0);
	return r == 1 ? (long)m.msg_len : -1;
}
static long c_accept(void)
{
	int fd = accept(lst, NULL, NULL);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : -1;
}
static long c_accept4(void)
{
	int fd = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : -1;
}
static long c_poll(void) { struct pollfd f = { p[0], POLLIN, 0 }; return poll(&f, 1, -1); }
static long c_ppoll(void) { struct pollfd f = { p[0], POLLIN, 0 }; return ppoll(&f, 1, NULL, NULL); }
static long c_poll_out(void)
{
	struct pollfd f = { s[0], POLLOUT, 0 };
	long n = poll(&f, 1, -1);
	return n == 1 && (f.revents & POLLOUT) ? 1 : -1;
}
static long c_select_write(void)
{
	fd_set w;
	FD_ZERO(&w);
	FD_SET(s[0], &w);
	long n = select(s[0] + 1, NULL, &w, NULL, NULL);
	return n == 1 && FD_ISSET(s[0], &w) ? 1 : -1;
}
static long c_select(void)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	long n = select(p[0] + 1, &r, NULL, NULL, NULL);
	return n == 1 && FD_ISSET(p[0], &r) ? 1 : -1;
}
static long c_pselect(void)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	long n = pselect(p[0] + 1, &r, NULL, NULL, NULL, NULL);
	return n == 1 && FD_ISSET(p[0], &r) ? 1 : -1;
}
static int ep = -1;
static long epoll_with(int how)
{
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = 77 }, out;
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e));
	long n = how == 0 ? epoll_wait(ep, &out, 1, -1)
		 : how == 1 ? epoll_pwait(ep, &out, 1, -1, NULL)
			    : epoll_pwait2(ep, &out, 1, NULL, NULL);
	close(ep);
	return n == 1 && out.data.u32 == 77 ? 1 : -1;
}
static long c_epoll_wait(void) { return epoll_with(0); }
static long c_epoll_pwait(void) { return epoll_with(1); }
static long c_epoll_pwait2(void) { return epoll_with(2); }
static long c_sendfile(void)
{
	off_t off = 0;
	return sendfile(s[0], tmpf, &off, 1000);
}
static long c_splice(void) { return splice(s[0], NULL, p[1], NULL, 100, 0); }
static long c_splice_out(void) { return splice(s[0], NULL, p[1], NULL, 100, 0); }
static long c_splice_to_socket(void) { return splice(p[0], NULL, s[0], NULL, 10000, 0); }
/* a pipe with 10,000 bytes to read, and a full socket to splice them into */
static void setup_splice_to_socket(void)
{
	setup_full();
	setup_pipe();
	CHECK_EQ(write(p[1], buf, 10000), 10000);
}
static long c_tee_out(void) { return tee(p[0], q[1], 100, 0); }
static long c_connect_tcp(void)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	long r = connect(c, (struct sockaddr *)&inaddr, sizeof inaddr);
	s[0] = c;
	return r;
}
static long c_tee(void)
{
	int q[2];
	CHECK_OK(pipe(q));
	long r = tee(p[0], q[1], 100, 0);
	close(q[0]);
	close(q[1]);
	return r;
}
static long c_connect(void)
{
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	long r = connect(c, (struct sockaddr *)&unaddr, sizeof unaddr);
	s[0] = c;
	return r;
}
static long status_of(pid_t r, int st) { return r == child && WIFEXITED(st) ? WEXITSTATUS(st) : -1; }
static long c_waitpid(void) { int st; pid_t r = waitpid(child, &st, 0); return status_of(r, st); }
static long c_waitpid_any(void) { int st; pid_t r = waitpid(-1, &st, 0); return status_of(r, st); }
static long c_wait(void) { int st; pid_t r = wait(&st); return status_of(r, st); }
static long c_wait3(void) { int st; pid_t r = wait3(&st, 0, NULL); return status_of(r, st); }
static long c_wait4(void) { int st; pid_t r = wait4(child, &st, 0, NULL); return status_of(r, st); }
static long c_waitid(void)
{
	siginfo_t si;
	if (waitid(P_PID, (id_t)child, &si, WEXITED) != 0)
		return -1;
	return si.si_pid == child ? si.si_status : -1;
}

static long c_waitid_all(void)
{
	siginfo_t si;
	if (waitid(P_ALL, 0, &si, WEXITED) != 0)
		return -1;
	return si.si_pid == child ? si.si_status : -1;
}

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
static long c_waitid_pidfd(void)
{
	int pfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (pfd < 0)
		return -1;
	siginfo_t si;
	long r = waitid(P_PIDFD, (id_t)pfd, &si, WEXITED);
	close(pfd);
	return r == 0 && si.si_pid == child ? si.si_status : -1;
}

static const struct io_case cases[] = {
	{ "read", setup_pipe, c_read, trig_pipe, 5 },
	{ "readv", setup_pipe, c_readv, trig_pipe, 5 },
	{ "write", setup_full, c_write, trig_drain, 10000 },
	{ "writev", setup_full, c_writev, trig_drain, 10000 },
	{ "recv", setup_sockets, c_recv, trig_sock, 5 },
	{ "recv MSG_WAITALL", setup_sockets, c_recv_waitall, trig_sock, 5 },
	{ "recvfrom", setup_sockets, c_recvfrom, trig_sock, 5 },
	{ "recvmsg", setup_sockets, c_recvmsg, trig_sock, 5 },
	{ "recvmmsg", setup_dgram, c_recvmmsg, trig_sock, 1 },
	{ "send", setup_full, c_send, trig_drain, 10000 },
	{ "sendto", setup_full, c_sendto, trig_drain, 10000 },
	{ "sendmsg", setup_full, c_sendmsg, trig_drain, 10000 },
	{ "sendmmsg", setup_full, c_sendmmsg, trig_drain, 10000 },
	{ "accept", setup_listener, c_accept, trig_connect, 0 },
	{ "accept4", setup_listener, c_accept4, trig_connect, 0 },
	{ "connect", setup_backlog_full, c_connect, trig_accept, 0 },
	{ "poll", setup_pipe, c_poll, trig_pipe, 1 },
	{ "ppoll", setup_pipe, c_ppoll, trig_pipe, 1 },
	{ "select", setup_pipe, c_select, trig_pipe, 1 },
	{ "pselect", setup_pipe, c_pselect, trig_pipe, 1 },
	{ "epoll_wait", setup_pipe, c_epoll_wait, trig_pipe, 1 },
	{ "epoll_pwait", setup_pipe, c_epoll_pwait, trig_pipe, 1 },
	{ "epoll_pwait2", setup_pipe, c_epoll_pwait2, trig_pipe, 1 },
	{ "sendfile", setup_file_and_full, c_sendfile, trig_drain, 1000 },
	{ "waitpid", setup_child, c_waitpid, trig_child, 5 },
	{ "waitpid(-1)", setup_child, c_waitpid_any, trig_child, 5 },
	{ "wait", setup_child, c_wait, trig_child, 5 },
	{ "wait3", setup_child, c_wait3, trig_child, 5 },
	{ "wait4", setup_child, c_wait4, trig_child, 5 },
	{ "waitid", setup_child, c_waitid, trig_child, 5 },
	{ "waitid(P_PIDFD)", setup_child, c_waitid_pidfd, trig_child, 5 },
	{ "waitid(P_ALL)", setup_child, c_waitid_all, trig_child, 5 },
	{ "write (pipe)", setup_full_pipe, c_write_pipe, trig_drain_pipe, 10000 },
	{ "preadv2 (offset -1, pipe)", setup_pipe, c_preadv2, trig_pipe, 5 },
	{ "pwritev2 (offset -1, pipe)", setup_full_pipe, c_pwritev2, trig_drain_pipe, 10000 },
	{ "read (terminal)", setup_tty, c_read_tty, trig_tty, 5 },
	{ "read (eventfd)", setup_eventfd, c_read_eventfd, trig_eventfd, 1 },
	{ "poll (POLLOUT)", setup_full, c_poll_out, trig_drain, 1 },
	{ "select (write set)", setup_full, c_select_write, trig_drain, 1 },
	{ "connect (TCP, accept queue full)", setup_tcp_backlog_full, c_connect_tcp, trig_accept, 0 },
};

/* splice and tee need both a socket pair and a pipe */
static void setup_splice(void) { setup_sockets(); setup_pipe(); }
static const struct io_case more[] = {
	{ "splice", setup_splice, c_splice, trig_sock, 5 },
	{ "tee", setup_pipe, c_tee, trig_pipe, 5 },
	{ "splice (output pipe full)", setup_splice_out, c_splice_out, trig_drain_pipe, 5 },
	{ "tee (output pipe full)", setup_tee_out, c_tee_out, trig_drain_q, 5 },
	{ "splice (output socket full)", setup_splice_to_socket, c_splice_to_socket, trig_drain, -3 },
};

static void cleanup(void)
{
	int *fds[] = { &p[0], &p[1], &q[0], &q[1], &s[0], &s[1], &lst, &tmpf, &child_gate[1], &tty, &ptm, &efd, &pending };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	if (child > 0) {
		waitpid(child, NULL, WNOHANG);
		child = -1;
	}
}

static void run_case(const struct io_case *c)
{
	alarm(30);                 /* a call that blocks the VP: SIGALRM ends the run */
	c->setup();
	returned = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, caller, (void *)c));
	long start = count;
	int64_t t0 = test_now_ns();
	while (count < start + COUNTS) {
		if (test_now_ns() - t0 > 5000000000ll) {
			fprintf(stderr, "%s: the counter stopped while a UT waited\n", c->name);
			exit(1);
		}
		sched_yield();
	}
	if (returned) {
		fprintf(stderr, "%s: returned %ld (errno %d) before it could complete\n", c->name, result,
			result_errno);
		exit(1);
	}
	c->trigger();
	CHECK_OK(pthread_join(t, NULL));
	if (c->want == -2 ? result < 0 : c->want == -3 ? result <= 0 : result != c->want) {
		fprintf(stderr, "%s: returned %ld (errno %d), want %ld\n", c->name, result, result_errno, c->want);
		exit(1);
	}
	cleanup();
	alarm(0);
}

/* pread and pwrite on a pipe cannot wait: ESPIPE at once. */
static void positional(void)
{
	setup_pipe();
	CHECK_EQ(c_pread(), -1);
	CHECK_EQ(errno, ESPIPE);
	CHECK_EQ(c_pwrite(), -1);
	CHECK_EQ(errno, ESPIPE);
	cleanup();
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	p[0] = p[1] = q[0] = q[1] = s[0] = s[1] = child_gate[0] = child_gate[1] = -1;
	pthread_t ct;
	CHECK_OK(pthread_create(&ct, NULL, counter, NULL));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		run_case(&more[i]);
	positional();
	stop_counter = 1;
	CHECK_OK(pthread_join(ct, NULL));

	/* a counter that never yields, under a 1 ms slice: the VP never idles,
	 * every waiter is woken by the poller's quantum (and the tick) all the
	 * same, and the tick lands on the calls' own system calls again and
	 * again without ever ending one with EINTR (each result is checked) */
	CHECK_OK(weft_timeslice_set(1000000));
	stop_counter = 0;
	spin_only = 1;
	CHECK_OK(pthread_create(&ct, NULL, counter, NULL));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		run_case(&more[i]);
	stop_counter = 1;
	CHECK_OK(pthread_join(ct, NULL));
	return 0;
}
