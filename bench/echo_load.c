/*
 * echo_load.c — the load generator of the echo-server rows (fam_echo.c):
 * one process, one kernel thread, built against glibc alone (never Weft),
 * so that every server is driven by the same client.
 *
 *   bench-echo-load PORT CONNS CPU WARM_MS WINDOW_MS WINDOWS RESULT_FD SERVER_PID
 *   bench-echo-load --burn CGROUP CPU
 *
 * It pins itself to CPU (at nice -20 where it may: on a machine shared with
 * other work the generator must still not be the limit), opens CONNS
 * connections to 127.0.0.1:PORT (at most CONNECT_BATCH in flight, so the
 * listener's backlog never drops a SYN), then runs a closed loop: every
 * connection has one 64-byte request outstanding; when its 64-byte echo
 * is whole, the round trip is recorded and the next request goes out.
 * After WARM_MS it writes "ready\n" to RESULT_FD (the server samples its
 * memory then), then measures WINDOWS windows of WINDOW_MS, and for each
 * writes one line
 *   "window RPS P50_NS P99_NS REPLIES GEN_CPU_NS CPU_IDLE_NS WALL_NS
 *    SRV_CPU_NS SRV_IDLE_NS\n"
 * (its own CPU time in the window, the idle time of the CPU it runs on as
 * /proc/stat counts it, the window's length, and the same two for the
 * server — process SERVER_PID, whose CPU clock it reads, and the one CPU
 * the server may run on, -1 when unknown — together they say which side,
 * or other work on the machine, was the limit; sampled here, at the
 * window's edges, so that a server slow to read this pipe does not skew
 * them) and finally "done ENGINE\n".  Every echoed byte is checked
 * against what was sent; a wrong byte, a lost connection or a stall (no
 * reply for 10 s) ends the run with "error WHAT\n" and status 1.
 *
 * The generator must cost less per request than the fastest server, or it
 * is what the rows measure.  On loopback much of a request's kernel work is
 * symmetric (a send runs the receiving socket's TCP input and wake-up on the
 * sender's CPU), so what can be cut is the generator's own system calls:
 *   uring  (the default) io_uring: each connection has one multishot recv
 *          armed for the whole run, its replies land in a ring of provided
 *          64-byte buffers, each request is one send SQE, and one
 *          io_uring_enter submits every send of a batch and collects every
 *          completion (SINGLE_ISSUER + DEFER_TASKRUN: completions are run
 *          when the generator asks, never by interrupting it).
 *   epoll  (BENCH_ECHO_LOAD=epoll, or when io_uring_setup is refused, as
 *          container seccomp profiles often do): an edge-triggered epoll
 *          set, one read per readable connection and one write per request
 *          (edge-triggered is exact here: a connection has one request
 *          outstanding and the read asks for every byte still due).
 * Both keep the issue's model: one 64-byte request outstanding per
 * connection, every request a round trip of its own.
 *
 * With --burn it is the other half of the server's CPU share (fam_echo.c,
 * cpu_share.h): it joins cgroup CGROUP, pins itself to CPU and spins, with
 * no system call, until its parent ends (it gets SIGKILL then).
 *
 * Invariant: the measuring loop allocates nothing, and a request is sent
 * only once the whole echo of the one before it has been checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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
	unsigned char req[MSG];  /* the request (io_uring sends it from here) */
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

/* Make connection k's next request in its buffer. */
static void next_request(struct conn *c, uint32_t k)
{
	fill(c->req, k, c->seq);
	c->got = 0;
	c->sent = now_ns();
}

/* Check r echoed bytes b of connection k's request; true when the echo is whole. */
static bool echoed(struct conn *c, const unsigned char *b, int r)
{
	if (r > MSG - c->got || memcmp(b, c->req + c->got, (size_t)r) != 0) {
		errno = EIO;
		fail("echoed bytes differ");
	}
	c->got += r;
	return c->got == MSG;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ */
/* The measuring windows, the same for both engines                    */

static struct meter {
	int cpu, windows, w;             /* w: the window under way, -1 while warming up */
	int64_t window, phase_end, last_reply;
	int64_t cpu0, idle0, srv0, sidle0;
	clockid_t srv_clock;             /* the server's process CPU clock */
	int srv_cpu;                     /* the server's one CPU, or -1 */
	uint64_t replies;
	size_t nlat, cap;
	int64_t *lat;
} m;

static void meter_start(int cpu, int64_t warm, int64_t window, int windows, pid_t server)
{
	m.cpu = cpu;
	m.srv_cpu = -1;
	if (clock_getcpuclockid(server, &m.srv_clock) != 0)
		m.srv_clock = CLOCK_PROCESS_CPUTIME_ID;   /* then the column is the generator's own: visibly wrong */
	cpu_set_t srv;
	if (sched_getaffinity(server, sizeof srv, &srv) == 0 && CPU_COUNT(&srv) == 1)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &srv))
				m.srv_cpu = c;
	m.window = window;
	m.windows = windows;
	m.w = -1;
	m.cap = 1 << 20;
	m.lat = malloc(m.cap * sizeof *m.lat);
	if (!m.lat)
		fail("malloc");
	m.last_reply = now_ns();
	m.phase_end = m.last_reply + warm;
}

static inline void meter_reply(int64_t t, int64_t sent)
{
	m.last_reply = t;
	if (m.w >= 0) {
		m.replies++;
		if (m.nlat < m.cap)
			m.lat[m.nlat++] = t - sent;
	}
}

/* At the end of each pass over the events: false once the last window is done. */
static bool meter_tick(int64_t t)
{
	if (t - m.last_reply > STALL_NS) {
		errno = ETIMEDOUT;
		fail("no reply for 10 s");
	}
	if (t < m.phase_end)
		return true;
	int64_t cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), idle1 = cpu_idle_ns(m.cpu);
	int64_t srv1 = clock_ns(m.srv_clock), sidle1 = cpu_idle_ns(m.srv_cpu);
	if (m.w < 0) {
		say("ready\n");
	} else {
		int64_t wall = t - (m.phase_end - m.window);
		qsort(m.lat, m.nlat, sizeof *m.lat, cmp_i64);
		int64_t p50 = m.nlat ? m.lat[m.nlat / 2] : 0, p99 = m.nlat ? m.lat[m.nlat * 99 / 100] : 0;
		say("window %.0f %lld %lld %llu %lld %lld %lld %lld %lld\n", (double)m.replies * 1e9 / (double)wall,
		    (long long)p50, (long long)p99, (unsigned long long)m.replies, (long long)(cpu1 - m.cpu0),
		    (long long)(idle1 >= 0 && m.idle0 >= 0 ? idle1 - m.idle0 : -1), (long long)wall,
		    (long long)(srv1 - m.srv0), (long long)(sidle1 >= 0 && m.sidle0 >= 0 ? sidle1 - m.sidle0 : -1));
	}
	if (++m.w == m.windows)
		return false;
	m.replies = 0;
	m.nlat = 0;
	m.phase_end = now_ns() + m.window;
	m.cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	m.idle0 = cpu_idle_ns(m.cpu);
	m.srv0 = clock_ns(m.srv_clock);
	m.sidle0 = cpu_idle_ns(m.srv_cpu);
	return true;
}

/* ------------------------------------------------------------------ */
/* epoll                                                               */

static void run_epoll(int ep, struct conn *c, int nconn)
{
	struct epoll_event evs[512];
	for (int k = 0; k < nconn; k++) {
		struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)k };
		if (epoll_ctl(ep, EPOLL_CTL_MOD, c[k].fd, &e) != 0)
			fail("epoll_ctl");
		next_request(&c[k], (uint32_t)k);
		if (write(c[k].fd, c[k].req, MSG) != MSG)
			fail("write");
	}
	for (;;) {
		int n = epoll_wait(ep, evs, 512, 1000);
		if (n < 0 && errno != EINTR)
			fail("epoll_wait");
		int64_t t = now_ns();
		for (int i = 0; i < n; i++) {
			uint32_t k = evs[i].data.u32;
			struct conn *x = &c[k];
			unsigned char b[MSG];
			ssize_t r = read(x->fd, b, (size_t)(MSG - x->got));
			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r == 0)
					errno = ECONNRESET;
				fail("read");
			}
			if (!echoed(x, b, (int)r))
				continue;
			meter_reply(t, x->sent);
			x->seq++;
			next_request(x, k);
			if (write(x->fd, x->req, MSG) != MSG)
				fail("write");
		}
		if (!meter_tick(t))
			return;
	}
}

/* ------------------------------------------------------------------ */
/* io_uring                                                            */

#define RING_SQ 16384
#define NBUF 16384                 /* provided reply buffers (a power of two) */
#define BGID 1
#define UD_SEND (1ull << 32)       /* user_data: connection index, | UD_SEND for a send */

static struct uring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_array, sq_mask, sq_entries;
	unsigned *cq_head, *cq_tail, cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned pending;              /* SQEs written, not yet submitted */
	struct io_uring_buf_ring *br;
	unsigned char *bufs;
	unsigned short br_tail;
} u;

static int uring_enter(unsigned submit, unsigned wait, unsigned flags, void *arg, size_t argsz)
{
	return (int)syscall(SYS_io_uring_enter, u.fd, submit, wait, flags, arg, argsz);
}

static void uring_submit(unsigned wait)
{
	struct __kernel_timespec ts = { 1, 0 };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	for (;;) {
		int r = uring_enter(u.pending, wait, wait ? IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG : 0,
				    wait ? &arg : NULL, wait ? sizeof arg : 0);
		if (r >= 0) {
			u.pending -= (unsigned)r < u.pending ? (unsigned)r : u.pending;
			if (!u.pending || !wait)
				return;
			continue;
		}
		if (errno == ETIME || errno == EINTR)
			return;
		if (errno == EAGAIN || errno == EBUSY)   /* completions first; reaped by the caller */
			return;
		fail("io_uring_enter");
	}
}

static struct io_uring_sqe *uring_sqe(void)
{
	unsigned tail = *u.sq_tail;
	if (tail - __atomic_load_n(u.sq_head, __ATOMIC_ACQUIRE) >= u.sq_entries) {
		uring_submit(0);
		if (tail - __atomic_load_n(u.sq_head, __ATOMIC_ACQUIRE) >= u.sq_entries) {
			errno = EBUSY;
			fail("io_uring submission queue full");
		}
	}
	struct io_uring_sqe *e = &u.sqes[tail & u.sq_mask];
	memset(e, 0, sizeof *e);
	u.sq_array[tail & u.sq_mask] = tail & u.sq_mask;
	__atomic_store_n(u.sq_tail, tail + 1, __ATOMIC_RELEASE);
	u.pending++;
	return e;
}

static void uring_recv(struct conn *c, uint32_t k)
{
	struct io_uring_sqe *e = uring_sqe();
	e->opcode = IORING_OP_RECV;
	e->fd = c->fd;
	e->ioprio = IORING_RECV_MULTISHOT;
	e->flags = IOSQE_BUFFER_SELECT;
	e->buf_group = BGID;
	e->user_data = k;
}

static void uring_send(struct conn *c, uint32_t k)
{
	struct io_uring_sqe *e = uring_sqe();
	e->opcode = IORING_OP_SEND;
	e->fd = c->fd;
	e->addr = (uint64_t)(uintptr_t)c->req;
	e->len = MSG;
	e->user_data = UD_SEND | k;
}

static void buf_give(unsigned short bid)
{
	struct io_uring_buf *b = &u.br->bufs[u.br_tail & (NBUF - 1)];
	b->addr = (uint64_t)(uintptr_t)(u.bufs + (size_t)bid * MSG);
	b->len = MSG;
	b->bid = bid;
	u.br_tail++;
}

/* false when io_uring cannot be had here (the caller uses epoll). */
static bool uring_setup(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
	p.cq_entries = 4 * RING_SQ;
	u.fd = (int)syscall(SYS_io_uring_setup, RING_SQ, &p);
	if (u.fd < 0)
		return false;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP) || !(p.features & IORING_FEAT_EXT_ARG)) {
		close(u.fd);
		return false;
	}
	size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	size_t sz = sq_sz > cq_sz ? sq_sz : cq_sz;
	char *ring = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u.fd, IORING_OFF_SQ_RING);
	u.sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, u.fd, IORING_OFF_SQES);
	if (ring == MAP_FAILED || u.sqes == MAP_FAILED)
		fail("mmap (io_uring)");
	u.sq_head = (unsigned *)(ring + p.sq_off.head);
	u.sq_tail = (unsigned *)(ring + p.sq_off.tail);
	u.sq_mask = *(unsigned *)(ring + p.sq_off.ring_mask);
	u.sq_entries = p.sq_entries;
	u.sq_array = (unsigned *)(ring + p.sq_off.array);
	u.cq_head = (unsigned *)(ring + p.cq_off.head);
	u.cq_tail = (unsigned *)(ring + p.cq_off.tail);
	u.cq_mask = *(unsigned *)(ring + p.cq_off.ring_mask);
	u.cqes = (struct io_uring_cqe *)(ring + p.cq_off.cqes);

	/* the provided-buffer ring the replies land in */
	u.br = mmap(NULL, NBUF * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	u.bufs = malloc((size_t)NBUF * MSG);
	if (u.br == MAP_FAILED || !u.bufs)
		fail("set-up (io_uring buffers)");
	struct io_uring_buf_reg reg = { .ring_addr = (uint64_t)(uintptr_t)u.br, .ring_entries = NBUF, .bgid = BGID };
	if (syscall(SYS_io_uring_register, u.fd, IORING_REGISTER_PBUF_RING, &reg, 1) != 0) {
		close(u.fd);
		return false;
	}
	for (unsigned i = 0; i < NBUF; i++)
		buf_give((unsigned short)i);
	__atomic_store_n(&u.br->tail, u.br_tail, __ATOMIC_RELEASE);
	return true;
}

static void run_uring(struct conn *c, int nconn)
{
	for (int k = 0; k < nconn; k++) {
		/* blocking again: io_uring then waits for data by itself */
		fcntl(c[k].fd, F_SETFL, fcntl(c[k].fd, F_GETFL) & ~O_NONBLOCK);
		uring_recv(&c[k], (uint32_t)k);
		next_request(&c[k], (uint32_t)k);
		uring_send(&c[k], (uint32_t)k);
	}
	for (;;) {
		uring_submit(1);
		int64_t t = now_ns();
		unsigned head = *u.cq_head, tail = __atomic_load_n(u.cq_tail, __ATOMIC_ACQUIRE);
		bool gave = false;
		for (; head != tail; head++) {
			struct io_uring_cqe *e = &u.cqes[head & u.cq_mask];
			uint32_t k = (uint32_t)e->user_data;
			struct conn *x = &c[k];
			if (e->user_data & UD_SEND) {
				if (e->res != MSG) {
					errno = e->res < 0 ? -e->res : EIO;
					fail("send");
				}
				continue;
			}
			if (e->res <= 0) {
				if (e->res == -ENOBUFS) {        /* every buffer was out: arm it again */
					uring_recv(x, k);
					continue;
				}
				errno = e->res == 0 ? ECONNRESET : -e->res;
				fail("recv");
			}
			unsigned short bid = (unsigned short)(e->flags >> IORING_CQE_BUFFER_SHIFT);
			bool whole = echoed(x, u.bufs + (size_t)bid * MSG, e->res);
			buf_give(bid);
			gave = true;
			if (!(e->flags & IORING_CQE_F_MORE))
				uring_recv(x, k);
			if (!whole)
				continue;
			meter_reply(t, x->sent);
			x->seq++;
			next_request(x, k);
			uring_send(x, k);
		}
		__atomic_store_n(u.cq_head, head, __ATOMIC_RELEASE);
		if (gave)
			__atomic_store_n(&u.br->tail, u.br_tail, __ATOMIC_RELEASE);
		if (!meter_tick(t))
			return;
	}
}

/* ------------------------------------------------------------------ */

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		fail("sched_setaffinity");
}

/* The burner: CPU time the server's share does not use. */
static int burn(const char *cgroup, int cpu)
{
	char path[600];
	snprintf(path, sizeof path, "%s/cgroup.procs", cgroup);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1) {
		perror(path);
		return 1;
	}
	close(fd);
	pin(cpu);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pid_t parent = getppid();
	if (parent == 1)
		return 1;
	for (volatile unsigned long x = 0;; x++)
		if (!(x & 0xffffff) && getppid() != parent)
			return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--burn"))
		return burn(argv[2], atoi(argv[3]));
	if (argc != 9) {
		fprintf(stderr, "usage: %s PORT CONNS CPU WARM_MS WINDOW_MS WINDOWS RESULT_FD SERVER_PID\n"
			"       %s --burn CGROUP CPU\n", argv[0], argv[0]);
		return 2;
	}
	pid_t server = (pid_t)atoi(argv[8]);
	int port = atoi(argv[1]), nconn = atoi(argv[2]), cpu = atoi(argv[3]);
	int64_t warm = atoll(argv[4]) * 1000000, window = atoll(argv[5]) * 1000000;
	int windows = atoi(argv[6]);
	result_fd = atoi(argv[7]);
	const char *want = getenv("BENCH_ECHO_LOAD");
	bool epoll_only = want && !strcmp(want, "epoll");

	pin(cpu);
	setpriority(PRIO_PROCESS, 0, -20);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);

	struct conn *c = calloc((size_t)nconn, sizeof *c);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!c || ep < 0)
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
			struct epoll_event e = { .events = 0, .data.u32 = k };
			if (epoll_ctl(ep, EPOLL_CTL_MOD, c[k].fd, &e) != 0)
				fail("epoll_ctl");
			connected++;
		}
	}

	meter_start(cpu, warm, window, windows, server);
	const char *engine = "epoll";
	if (!epoll_only && uring_setup()) {
		engine = "io_uring";
		close(ep);
		run_uring(c, nconn);
	} else {
		run_epoll(ep, c, nconn);
	}
	say("done %s\n", engine);
	for (int i = 0; i < nconn; i++)
		close(c[i].fd);
	return 0;
}
