/*
 * io_cancel_while_parked — the wrapped calls POSIX lists as cancellation
 * points act on a cancel request while their UT is parked in them, as
 * NPTL's do while the thread is blocked in the kernel: the UT's cleanup
 * handlers run, pthread_join returns PTHREAD_CANCELED, and the descriptor
 * is left as it was (nothing consumed, no waiter left behind: the next
 * reader gets the data; a wait for a child leaves no pidfd open).
 *
 * One case per call: read, readv, write (a full socket), recv, recvmsg,
 * send, accept, connect (a Unix listener with a full backlog), poll, ppoll,
 * select, pselect, epoll_wait, waitpid, waitid, wait (any child).  Then: a
 * request that is already pending acts at the call's entry, before
 * anything is consumed; a UT with cancellation disabled is not cancelled
 * while parked and returns the data when it comes; sendfile, which glibc
 * does not make a cancellation point, is not cancelled while it waits.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int fds[2];               /* the descriptors a case waits on */
static int listener = -1;
static struct sockaddr_un unaddr;
static pid_t child = -1;
static volatile int cleaned, parked, returned;
static char buf[1 << 16];

static void cleanup(void *arg) { cleaned = (int)(intptr_t)arg; }

struct cancel_case {
	const char *name;
	void (*setup)(void);
	void (*call)(void);
};

static void *victim(void *arg)
{
	const struct cancel_case *c = arg;
	pthread_cleanup_push(cleanup, (void *)7);
	parked = 1;
	c->call();
	returned = 1;
	pthread_cleanup_pop(0);
	return NULL;
}

/* ---- set-ups ---- */

static void s_pipe(void) { CHECK_OK(pipe(fds)); }
static void s_sock(void) { CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds)); }
static void s_full(void)
{
	s_sock();
	int fl = fcntl(fds[0], F_GETFL);
	fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
	while (write(fds[0], buf, sizeof buf) > 0)
		;
	fcntl(fds[0], F_SETFL, fl);
}
static void s_listener(void)
{
	listener = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(listener >= 0);
	memset(&unaddr, 0, sizeof unaddr);
	unaddr.sun_family = AF_UNIX;
	snprintf(unaddr.sun_path + 1, sizeof unaddr.sun_path - 1, "weft-cancel-%d", getpid());
	CHECK_OK(bind(listener, (struct sockaddr *)&unaddr, sizeof unaddr));
	CHECK_OK(listen(listener, 0));
	fds[0] = fds[1] = -1;
}
/* a Unix listener whose backlog is full: a blocking connect waits */
static void s_backlog_full(void)
{
	s_listener();
	for (int i = 0; i < 2; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(c, (struct sockaddr *)&unaddr, sizeof unaddr) != 0) {
			close(c);
			break;
		}
		fds[i] = c;
	}
}
static void s_child(void)
{
	s_pipe();
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		char c;
		close(fds[1]);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
}

/* ---- the calls ---- */

static void c_read(void) { read(fds[0], buf, 10); }
static void c_readv(void) { struct iovec v = { buf, 10 }; readv(fds[0], &v, 1); }
static void c_write(void) { write(fds[0], buf, sizeof buf); }
static void c_recv(void) { recv(fds[0], buf, 10, 0); }
static void c_recvmsg(void)
{
	struct iovec v = { buf, 10 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	recvmsg(fds[0], &m, 0);
}
static void c_send(void) { send(fds[0], buf, sizeof buf, 0); }
static void c_accept(void) { accept(listener, NULL, NULL); }
static void c_connect(void)
{
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&unaddr, sizeof unaddr);
}
static void c_poll(void) { struct pollfd p = { fds[0], POLLIN, 0 }; poll(&p, 1, -1); }
static void c_ppoll(void) { struct pollfd p = { fds[0], POLLIN, 0 }; ppoll(&p, 1, NULL, NULL); }
static void c_select(void)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fds[0], &r);
	select(fds[0] + 1, &r, NULL, NULL, NULL);
}
static void c_pselect(void)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fds[0], &r);
	pselect(fds[0] + 1, &r, NULL, NULL, NULL, NULL);
}
static int ep = -1;
static void c_epoll(void)
{
	struct epoll_event e;
	epoll_wait(ep, &e, 1, -1);
}
static void s_epoll(void)
{
	s_pipe();
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN };
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &e));
}
static void c_waitpid(void) { waitpid(child, NULL, 0); }
static void c_waitid(void) { siginfo_t si; waitid(P_PID, (id_t)child, &si, WEXITED); }
static void c_wait(void) { wait(NULL); }

static const struct cancel_case cases[] = {
	{ "read", s_pipe, c_read },       { "readv", s_pipe, c_readv },
	{ "write", s_full, c_write },     { "recv", s_sock, c_recv },
	{ "recvmsg", s_sock, c_recvmsg }, { "send", s_full, c_send },
	{ "accept", s_listener, c_accept }, { "connect", s_backlog_full, c_connect },
	{ "poll", s_pipe, c_poll },       { "ppoll", s_pipe, c_ppoll },
	{ "select", s_pipe, c_select },   { "pselect", s_pipe, c_pselect },
	{ "epoll_wait", s_epoll, c_epoll }, { "waitpid", s_child, c_waitpid },
	{ "waitid", s_child, c_waitid },   { "wait", s_child, c_wait },
};

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
	if (listener >= 0)
		close(listener);
	listener = -1;
	if (ep >= 0)
		close(ep);
	ep = -1;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
}

static void run_case(const struct cancel_case *c)
{
	c->setup();
	int pidfds_before = test_open_pidfds();
	cleaned = parked = returned = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, victim, (void *)c));
	while (!parked)
		sched_yield();
	usleep(20000);                    /* it is parked in the call now */
	if (returned) {
		fprintf(stderr, "%s: returned before the cancel\n", c->name);
		exit(1);
	}
	CHECK_OK(pthread_cancel(t));
	void *r;
	CHECK_OK(pthread_join(t, &r));
	if (r != PTHREAD_CANCELED || cleaned != 7 || returned) {
		fprintf(stderr, "%s: join gave %p, cleanup %d, returned %d\n", c->name, r, cleaned, returned);
		exit(1);
	}
	if (test_open_pidfds() != pidfds_before) {   /* a wait for a child closed its pidfds */
		fprintf(stderr, "%s: %d pidfds open after the cancel, %d before\n", c->name, test_open_pidfds(),
			pidfds_before);
		exit(1);
	}
	teardown();
}

/* A pending cancel acts at the entry of read: the byte stays for the next
 * reader. */
static void *pending_reader(void *arg)
{
	pthread_cleanup_push(cleanup, (void *)9);
	while (!parked)
		sched_yield();                    /* not a cancellation point */
	char c;
	read(fds[0], &c, 1);
	returned = 1;
	pthread_cleanup_pop(0);
	return arg;
}

static void pending_at_entry(void)
{
	s_pipe();
	CHECK_EQ(write(fds[1], "p", 1), 1);
	cleaned = parked = returned = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, pending_reader, NULL));
	sched_yield();
	CHECK_OK(pthread_cancel(t));
	parked = 1;
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(cleaned, 9);
	char c = 0;
	CHECK_EQ(read(fds[0], &c, 1), 1);          /* nothing was consumed */
	CHECK_EQ(c, 'p');
	teardown();
}

/* Cancellation disabled: the parked read is not cancelled and returns the
 * data; the request acts at the next cancellation point once enabled. */
static void *disabled_reader(void *arg)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	parked = 1;
	char c = 0;
	long n = read(fds[0], &c, 1);
	returned = n == 1 && c == 'd';
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	pthread_testcancel();
	return arg;
}

static void disabled_not_cancelled(void)
{
	s_pipe();
	parked = returned = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, disabled_reader, NULL));
	while (!parked)
		sched_yield();
	usleep(20000);
	CHECK_OK(pthread_cancel(t));
	usleep(20000);
	CHECK(!returned);
	CHECK_EQ(write(fds[1], "d", 1), 1);
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK(returned);
	CHECK(r == PTHREAD_CANCELED);
	teardown();
}

/* sendfile is not a cancellation point (glibc's is not): the request waits
 * for the next one, and the call completes. */
static int tmpf = -1;
static void *sender(void *arg)
{
	parked = 1;
	off_t off = 0;
	long n = sendfile(fds[0], tmpf, &off, 1000);
	returned = n == 1000;
	pthread_testcancel();
	return arg;
}

static void sendfile_not_a_point(void)
{
	s_full();
	char path[] = "/tmp/weft-cancel-XXXXXX";
	tmpf = mkstemp(path);
	CHECK(tmpf >= 0);
	unlink(path);
	CHECK_EQ(write(tmpf, buf, 1000), 1000);
	parked = returned = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sender, NULL));
	while (!parked)
		sched_yield();
	usleep(20000);
	CHECK(!returned);
	CHECK_OK(pthread_cancel(t));
	usleep(20000);
	CHECK(!returned);
	int fl = fcntl(fds[1], F_GETFL);
	fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
	void *r = NULL;
	while (!returned) {
		while (read(fds[1], buf, sizeof buf) > 0)
			;
		sched_yield();
	}
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
	close(tmpf);
	teardown();
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	fds[0] = fds[1] = -1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	pending_at_entry();
	disabled_not_cancelled();
	sendfile_not_a_point();
	return 0;
}
