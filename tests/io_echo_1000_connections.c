/*
 * io_echo_1000_connections — a thread-per-connection echo server and its
 * clients, all UTs of this one process on one kernel thread: 1,000
 * connections on loopback at once, every byte echoed and checked.
 *
 * Each connection has a server UT (read what comes, write it back with one
 * blocking write), a client writer (writes its bytes in pieces of random
 * size with blocking writes, then shuts down writing) and a client reader
 * (reads until EOF and checks every byte against the writer's pattern).
 * The sockets' buffers are small (SO_SNDBUF / SO_RCVBUF 4 KiB), so writes
 * larger than the room left must be taken in parts and the writers park
 * again and again: a blocking write must still return its full count.
 * Connections are made by a pool of connecting UTs while the accepting UT
 * runs, so accept and connect park too.
 */
#include "check.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNS (1000 / TEST_SCALE)
#define BYTES_PER_CONN (24 * 1024)
#define SMALL_BUF 4096

static struct sockaddr_in addr;
static int listener;
/* Counted by UTs that may run on different VPs at once (WEFT_VPS=2): every
 * update is an atomic add, or increments are lost and the wait below for
 * conns_done never ends. */
static int conns_done, bytes_bad;
static long write_calls, short_returns;

#define COUNT(v) __atomic_fetch_add(&(v), 1, __ATOMIC_RELAXED)
#define READ(v) __atomic_load_n(&(v), __ATOMIC_RELAXED)

static unsigned char pattern(unsigned conn, size_t i)
{
	return (unsigned char)((conn * 131u + i * 7u + (i >> 9)) & 0xff);
}

static void small_buffers(int fd)
{
	int n = SMALL_BUF;
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof n));
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof n));
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[3000];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == 0)
			break;
		CHECK(n > 0);
		ssize_t w = write(fd, buf, (size_t)n);
		COUNT(write_calls);
		if (w != n)
			COUNT(short_returns);
	}
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	for (int i = 0; i < CONNS; i++) {
		int fd = accept(listener, NULL, NULL);
		CHECK(fd >= 0);
		small_buffers(fd);
		pthread_t t;
		CHECK_OK(pthread_create(&t, &a, serve, (void *)(intptr_t)fd));
	}
	return arg;
}

struct conn {
	int fd;
	unsigned id;
};

static void *client_writer(void *arg)
{
	struct conn *c = arg;
	unsigned char buf[9000];
	unsigned seed = c->id * 2654435761u;
	size_t sent = 0;
	while (sent < BYTES_PER_CONN) {
		size_t n = 1 + rand_r(&seed) % sizeof buf;
		if (n > BYTES_PER_CONN - sent)
			n = BYTES_PER_CONN - sent;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(c->id, sent + i);
		ssize_t w = write(c->fd, buf, n);
		COUNT(write_calls);
		if (w != (ssize_t)n)
			COUNT(short_returns);
		CHECK(w > 0);
		sent += (size_t)w;
	}
	CHECK_OK(shutdown(c->fd, SHUT_WR));
	return NULL;
}

static void *client_reader(void *arg)
{
	struct conn *c = arg;
	unsigned char buf[5000];
	size_t got = 0;
	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof buf);
		if (n == 0)
			break;
		CHECK(n > 0);
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(c->id, got + (size_t)i))
				COUNT(bytes_bad);
		got += (size_t)n;
	}
	CHECK_EQ(got, BYTES_PER_CONN);
	close(c->fd);
	COUNT(conns_done);
	return NULL;
}

static struct conn conns[1000];

static void *connector(void *arg)
{
	unsigned first = (unsigned)(intptr_t)arg;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	for (unsigned i = first; i < CONNS; i += 10) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd >= 0);
		small_buffers(fd);
		CHECK_OK(connect(fd, (struct sockaddr *)&addr, sizeof addr));
		conns[i].fd = fd;
		conns[i].id = i;
		pthread_t t;
		CHECK_OK(pthread_create(&t, &a, client_reader, &conns[i]));
		CHECK_OK(pthread_create(&t, &a, client_writer, &conns[i]));
	}
	return NULL;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	struct rlimit rl;
	CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < 2 * CONNS + 100) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl));
		if (rl.rlim_cur < 2 * CONNS + 100)
			SKIP("RLIMIT_NOFILE too small for the connections");
	}
	listener = socket(AF_INET, SOCK_STREAM, 0);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_OK(bind(listener, (struct sockaddr *)&addr, sizeof addr));
	socklen_t len = sizeof addr;
	CHECK_OK(getsockname(listener, (struct sockaddr *)&addr, &len));
	CHECK_OK(listen(listener, 128));

	int64_t t0 = test_now_ns();
	pthread_t acc, con[10];
	CHECK_OK(pthread_create(&acc, NULL, acceptor, NULL));
	for (int i = 0; i < 10; i++)
		CHECK_OK(pthread_create(&con[i], NULL, connector, (void *)(intptr_t)i));
	for (int i = 0; i < 10; i++)
		CHECK_OK(pthread_join(con[i], NULL));
	CHECK_OK(pthread_join(acc, NULL));
	while (READ(conns_done) < CONNS) {
		if (test_now_ns() - t0 >= 120000000000ll) {
			fprintf(stderr, "%d of %d connections done after 120 s\n",
				READ(conns_done), CONNS);
			exit(1);
		}
		usleep(1000);
	}
	CHECK_EQ(READ(bytes_bad), 0);
	CHECK_EQ(READ(short_returns), 0); /* every blocking write moved all its bytes */
	CHECK(READ(write_calls) > CONNS);
	close(listener);
	return 0;
}
