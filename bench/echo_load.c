/*
 * echo_load.c — the load generator of the echo-server rows (fam_echo.c):
 * one process, one kernel thread, one level-triggered epoll loop, built
 * against glibc alone (never Weft), so that every server is driven by the
 * same client.
 *
 *   bench-echo-load PORT CONNS CPU WARM_MS WINDOW_MS WINDOWS RESULT_FD
 *
 * It pins itself to CPU, opens CONNS connections to 127.0.0.1:PORT (at
 * most CONNECT_BATCH in flight, so the listener's backlog never drops a
 * SYN), then runs a closed loop: every connection has one 64-byte request
 * outstanding; when its 64-byte echo is whole, the round trip is recorded
 * and the next request goes out.  After WARM_MS it writes "ready\n" to
 * RESULT_FD (the server samples its memory then), then measures WINDOWS
 * windows of WINDOW_MS, and for each writes one line
 *   "window RPS P50_NS P99_NS REPLIES GEN_CPU_NS CPU_IDLE_NS WALL_NS\n"
 * (its own CPU time in the window, the idle time of the CPU it runs on as
 * /proc/stat counts it, and the window's length: together they say whether
 * the generator, or other work on its CPU, was the limit) and finally
 * "done\n".  Every echoed byte is checked against what was sent; a wrong
 * byte, a lost connection or a stall (no reply for 10 s) ends the run with
 * "error WHAT\n" and status 1.
 *
 * Cost per request, kept small so that the generator is not what limits
 * the fastest servers: the connections are in the epoll set edge-triggered
 * (a level-triggered set polls every reported socket once more on the next
 * epoll_wait), one read per readable connection, one write per request,
 * one clock read per request.  Edge-triggered is exact here: a connection
 * has one request outstanding, the read asks for all the bytes still due,
 * so nothing is ever left unread behind an edge.
 *
 * Invariant: the measuring loop allocates nothing and makes exactly one
 * read per readable connection and one write per request, the same for
 * every server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cpu_idle.h"

#define MSG 64
#define CONNECT_BATCH 512
#define STALL_NS 10000000000ll

struct conn {
	int fd;
	int got;                 /* bytes of the current echo received */
	uint32_t seq;            /* the request's number, written into its bytes */
	int64_t sent;            /* when the current request went out */
};

static int result_fd = -1;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }


static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n > 0 && write(result_fd, line, (size_t)n) != n)
		exit(1);
}

static void fail(const char *what)
{
	say("error %s (%s)\n", what, strerror(errno));
	exit(1);
}

static void fill(unsigned char *b, uint32_t conn, uint32_t seq)
{
	for (int i = 0; i < MSG; i++)
		b[i] = (unsigned char)(conn * 31u + seq * 7u + (unsigned)i);
}

static void send_request(struct conn *c, uint32_t idx)
{
	unsigned char b[MSG];
	fill(b, idx, c->seq);
	c->got = 0;
	c->sent = now_ns();
	if (write(c->fd, b, MSG) != MSG)
		fail("write");
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: %s PORT CONNS CPU WARM_MS WINDOW_MS WINDOWS RESULT_FD\n", argv[0]);
		return 2;
	}
	int port = atoi(argv[1]), nconn = atoi(argv[2]), cpu = atoi(argv[3]);
	int64_t warm = atoll(argv[4]) * 1000000, window = atoll(argv[5]) * 1000000;
	int windows = atoi(argv[6]);
	result_fd = atoi(argv[7]);

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		fail("sched_setaffinity");
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	struct conn *c = calloc((size_t)nconn, sizeof *c);
	size_t cap = 1 << 20;
	int64_t *lat = malloc(cap * sizeof *lat);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!c || !lat || ep < 0)
		fail("set-up");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event evs[512];

	/* connect, CONNECT_BATCH at a time */
	int made = 0, connected = 0;
	while (connected < nconn) {
		while (made < nconn && made - connected < CONNECT_BATCH) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0)
				fail("socket");
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
				fail("connect");
			c[made].fd = fd;
			struct epoll_event e = { .events = EPOLLOUT, .data.u32 = (uint32_t)made };
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0)
				fail("epoll_ctl");
			made++;
		}
		int n = epoll_wait(ep, evs, 512, 10000);
		if (n <= 0)
			fail("connect stalled");
		for (int i = 0; i < n; i++) {
			uint32_t k = evs[i].data.u32;
			int err = 0;
			socklen_t len = sizeof err;
			getsockopt(c[k].fd, SOL_SOCKET, SO_ERROR, &err, &len);
			if (err) {
				errno = err;
				fail("connect");
			}
			struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u32 = k };
			if (epoll_ctl(ep, EPOLL_CTL_MOD, c[k].fd, &e) != 0)
				fail("epoll_ctl");
			connected++;
		}
	}

	for (int i = 0; i < nconn; i++)
		send_request(&c[i], (uint32_t)i);

	int64_t start = now_ns(), phase_end = start + warm, last_reply = start;
	int64_t cpu0 = 0, idle0 = 0;
	int w = -1;                      /* -1: warming up */
	uint64_t replies = 0;
	size_t nlat = 0;
	for (;;) {
		int n = epoll_wait(ep, evs, 512, 1000);
		if (n < 0 && errno != EINTR)
			fail("epoll_wait");
		int64_t t = now_ns();
		for (int i = 0; i < n; i++) {
			uint32_t k = evs[i].data.u32;
			struct conn *x = &c[k];
			unsigned char b[MSG], want[MSG];
			ssize_t r = read(x->fd, b, (size_t)(MSG - x->got));
			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r == 0)
					errno = ECONNRESET;
				fail("read");
			}
			fill(want, k, x->seq);
			if (memcmp(b, want + x->got, (size_t)r) != 0) {
				errno = EIO;
				fail("echoed bytes differ");
			}
			x->got += (int)r;
			if (x->got < MSG)
				continue;
			last_reply = t;
			if (w >= 0) {
				replies++;
				if (nlat < cap)
					lat[nlat++] = t - x->sent;
			}
			x->seq++;
			send_request(x, k);
		}
		if (t - last_reply > STALL_NS) {
			errno = ETIMEDOUT;
			fail("no reply for 10 s");
		}
		if (t < phase_end)
			continue;
		int64_t cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), idle1 = cpu_idle_ns(cpu);
		if (w < 0) {
			say("ready\n");
		} else {
			int64_t wall = t - (phase_end - window);
			qsort(lat, nlat, sizeof *lat, cmp_i64);
			int64_t p50 = nlat ? lat[nlat / 2] : 0, p99 = nlat ? lat[nlat * 99 / 100] : 0;
			say("window %.0f %lld %lld %llu %lld %lld %lld\n", (double)replies * 1e9 / (double)wall,
			    (long long)p50, (long long)p99, (unsigned long long)replies, (long long)(cpu1 - cpu0),
			    (long long)(idle1 >= 0 && idle0 >= 0 ? idle1 - idle0 : -1), (long long)wall);
		}
		if (++w == windows)
			break;
		replies = 0;
		nlat = 0;
		phase_end = now_ns() + window;
		cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		idle0 = cpu_idle_ns(cpu);
	}
	say("done\n");
	for (int i = 0; i < nconn; i++)
		close(c[i].fd);
	return 0;
}
