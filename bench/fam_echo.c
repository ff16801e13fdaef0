/*
 * fam_echo.c — the "Echo server" rows (issue 12): a thread-per-connection
 * echo server, the same source on Weft (bench-weft) and on NPTL
 * (bench-nptl), against a hand-written single-threaded epoll loop (bench-nptl
 * with BENCH_ECHO_SERVER=epoll; bench/run.sh runs it as a third column).
 *
 * Not timed by the harness: each row starts the server in this process
 * (pinned to CPU 0 by run.sh), forks and execs the load generator
 * (echo_load.c, glibc only, pinned to CPU 1), which opens 100 or 10,000
 * connections on loopback and keeps one 64-byte request outstanding on
 * each (a closed loop), then reports requests per second and the p50 and
 * p99 round trip of each measuring window.  A row's median, min and max are
 * over the windows.  The memory row is the server's resident memory per
 * connection: its RSS once every connection is open and warm, less its RSS
 * before the first one (kernel socket buffers and, for NPTL, the 16 KiB
 * kernel stack of each thread are not in it).  The CPU row is the server
 * process's CPU time (user and system, every thread) over the measuring
 * windows divided by the requests answered in them: with two CPUs the load
 * generator saturates its own about where the fastest servers do, so
 * requests per second alone cannot tell those servers apart.  Its note (and
 * the CSV note of the requests-per-second row) says what bounded the run:
 * the server's and the generator's CPU per request, how much of its CPU
 * each used, and how idle each CPU was (/proc/stat, cpu_idle.h) — a CPU
 * that is never idle while its process uses less than all of it was
 * shared with other work on the machine.  The generator samples all of it
 * (the server's CPU clock too) at the windows' edges, so that a server
 * whose main thread is slow to read the report does not skew it.
 *
 * The server thread reads up to 4 KiB and writes back what it read, with
 * plain blocking calls; the epoll loop does the same on a level-triggered
 * epoll set, one read per readable connection.  Invariant: the three
 * servers differ only in how a connection waits.  The load generator's
 * output comes back on a pipe the server's main thread reads with read(2)
 * (wrapped under Weft: it parks only that thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Echo server, thread per connection, 64-byte ping-pong on loopback"

enum echo_stat { S_RPS, S_P50, S_P99, S_MEM, S_CPU };

static double rss_now(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	long size, res;
	if (sscanf(buf, "%ld %ld", &size, &res) != 2)
		return 0;
	return (double)res * (double)sysconf(_SC_PAGESIZE);
}

static ssize_t write_all(int fd, const char *b, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, b + done, n - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* ---- the thread-per-connection server ---- */

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		if (write_all(fd, buf, (size_t)n) < 0)
			break;
	}
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_t t;
		int e = pthread_create(&t, &at, serve, (void *)(intptr_t)fd);
		if (e)
			die("pthread_create (a connection's thread)", e);
	}
	return NULL;
}

/* ---- the load generator's report ---- */

struct report {
	double rps[32], p50[32], p99[32];
	int windows;
	int empty;                         /* windows in which no request was answered */
	double mem_per_conn;
	bool done;
	char error[300];
	char line[256];
	size_t len;
	double base_rss;
	int conns;
	double replies;                    /* answered in the measuring windows */
	double gen_cpu, gen_idle, gen_wall; /* the generator's CPU time, its CPU's idle time, wall (ns) */
	char engine[16];                   /* the generator's: io_uring or epoll */
	double srv_cpu, srv_idle;          /* the server's CPU time and its CPU's idle time in the
					      windows, as the generator sampled them (ns) */
};



/* Take the bytes the load generator wrote; false once it is finished. */
static bool take(struct report *rp, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] != '\n') {
			if (rp->len < sizeof rp->line - 1)
				rp->line[rp->len++] = b[i];
			continue;
		}
		rp->line[rp->len] = 0;
		rp->len = 0;
		double r, n, gc, gi, gw, sc, si;
		long long p50, p99;
		if (!strcmp(rp->line, "ready")) {
			rp->mem_per_conn = (rss_now() - rp->base_rss) / rp->conns;
		} else if (sscanf(rp->line, "window %lf %lld %lld %lf %lf %lf %lf %lf %lf", &r, &p50, &p99, &n, &gc, &gi,
				  &gw, &sc, &si) == 9) {
			if (n == 0)
				rp->empty++;
			if (rp->windows < 32) {
				rp->rps[rp->windows] = r;
				rp->p50[rp->windows] = (double)p50;
				rp->p99[rp->windows] = (double)p99;
				rp->windows++;
			}
			rp->replies += n;
			rp->gen_cpu += gc;
			rp->gen_idle = rp->gen_idle < 0 || gi < 0 ? -1 : rp->gen_idle + gi;
			rp->gen_wall += gw;
			rp->srv_cpu += sc;
			rp->srv_idle = rp->srv_idle < 0 || si < 0 ? -1 : rp->srv_idle + si;
		} else if (!strncmp(rp->line, "done", 4)) {
			snprintf(rp->engine, sizeof rp->engine, "%s", rp->line[4] ? rp->line + 5 : "epoll");
			rp->done = true;
			return false;
		} else {
			snprintf(rp->error, sizeof rp->error, "load generator: %s", rp->line);
			return false;
		}
	}
	return true;
}

/* ---- the hand-written epoll loop ---- */

static void epoll_server(int lfd, int res, struct report *rp)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1", errno);
	int fl = fcntl(lfd, F_GETFL);
	fcntl(lfd, F_SETFL, fl | O_NONBLOCK);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = lfd };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &e);
	e.data.fd = res;
	epoll_ctl(ep, EPOLL_CTL_ADD, res, &e);
	struct epoll_event evs[512];
	char buf[4096];
	for (;;) {
		int n = epoll_wait(ep, evs, 512, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait", errno);
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c;
				while ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
					int one = 1;
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					struct epoll_event ce = { .events = EPOLLIN, .data.fd = c };
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
			} else if (fd == res) {
				ssize_t r = read(res, buf, sizeof buf);
				if (r <= 0 || !take(rp, buf, (size_t)r)) {
					close(ep);
					return;
				}
			} else {
				ssize_t r = read(fd, buf, sizeof buf);
				if (r > 0) {
					/* a 64-byte echo always fits; wait for room if not */
					size_t done = 0;
					while (done < (size_t)r) {
						ssize_t w = write(fd, buf + done, (size_t)r - done);
						if (w > 0) {
							done += (size_t)w;
						} else if (w < 0 && errno == EAGAIN) {
							struct pollfd p = { fd, POLLOUT, 0 };
							poll(&p, 1, -1);
						} else {
							break;
						}
					}
				} else if (r == 0 || errno != EAGAIN) {
					close(fd);
				}
			}
		}
	}
}

/* ---- one experiment ---- */

/* What limited the run: how busy the server's CPU and the generator's were,
 * and how much of that each process used itself (the rest is other work on
 * the machine, or the kernel's interrupts). */
static void bounds_note(char *b, size_t n, const struct report *rp)
{
	double wall = rp->gen_wall, srv = rp->srv_cpu;
	int k = snprintf(b, n, "server %.2f us/request and %.0f%% of a CPU", srv / rp->replies / 1e3,
			 100 * srv / wall);
	if (k > 0 && (size_t)k < n && rp->srv_idle >= 0)
		k += snprintf(b + k, n - (size_t)k, " (its CPU %.0f%% idle)", 100 * rp->srv_idle / wall);
	if (k > 0 && (size_t)k < n && rp->gen_wall > 0)
		k += snprintf(b + k, n - (size_t)k, "; load generator (%s) %.2f us/request and %.0f%% of its CPU",
			      rp->engine, rp->gen_cpu / rp->replies / 1e3, 100 * rp->gen_cpu / rp->gen_wall);
	if (k > 0 && (size_t)k < n && rp->gen_wall > 0 && rp->gen_idle >= 0)
		snprintf(b + k, n - (size_t)k, " (%.0f%% idle)", 100 * rp->gen_idle / rp->gen_wall);
}

static void summarize(struct result *r, enum echo_stat s, struct report *rp)
{
	if (s == S_CPU) {
		r->ok = rp->replies > 0;
		r->reps = 1;
		r->median = r->min = r->max = rp->replies > 0 ? rp->srv_cpu / rp->replies : 0;
		r->iters = (uint64_t)rp->replies;
		if (!r->ok) {
			na(r, "no request answered");
			return;
		}
		bounds_note(r->note, sizeof r->note, rp);
		return;
	}
	if (s == S_MEM) {
		r->ok = true;
		r->reps = 1;
		r->median = r->min = r->max = rp->mem_per_conn;
		r->iters = (uint64_t)rp->conns;
		snprintf(r->note, sizeof r->note, "resident bytes per connection (server process)");
		return;
	}
	double *v = s == S_RPS ? rp->rps : s == S_P50 ? rp->p50 : rp->p99;
	int saved = reps;
	reps = rp->windows;
	set_median(r, v);
	reps = saved;
	r->iters = (uint64_t)rp->conns;
	if (s == S_RPS && rp->replies > 0)
		bounds_note(r->note, sizeof r->note, rp);
}

static void run_echo(struct result *r, int conns, enum echo_stat s)
{
	const char *mode = getenv("BENCH_ECHO_SERVER");
	bool epoll_mode = mode && !strcmp(mode, "epoll");
#ifdef BENCH_WEFT
	if (epoll_mode) {
		na(r, "the epoll loop runs on glibc alone (bench-nptl)");
		return;
	}
#endif
	if (quick && conns > 1000) {
		na(r, "skipped in QUICK runs");
		return;
	}
	cpu_set_t cpus;
	if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		na(r, "needs 2 CPUs: the load generator runs on the other one");
		return;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < (rlim_t)conns + 64) {
		na(r, "RLIMIT_NOFILE %ld is below %d connections (raise the hard limit)", (long)rl.rlim_cur,
		   conns);
		return;
	}
	signal(SIGPIPE, SIG_IGN);

	char self[4096], load[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		na(r, "cannot find the load generator (readlink /proc/self/exe)");
		return;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	*slash = 0;
	snprintf(load, sizeof load, "%s/bench-echo-load", self);
	if (access(load, X_OK) != 0) {
		na(r, "%s is missing (build the bench target)", load);
		return;
	}

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4096) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen))
		die("listener", errno);

	static struct report rp;
	memset(&rp, 0, sizeof rp);
	rp.conns = conns;
	rp.base_rss = rss_now();

	int res[2];
	if (pipe2(res, O_CLOEXEC))
		die("pipe2", errno);
	char port[16], nc[16], wfd[16];
	snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
	snprintf(nc, sizeof nc, "%d", conns);
	const char *warm = quick ? "200" : conns > 1000 ? "1500" : "500";
	const char *win = quick ? "200" : "1000";
	const char *nwin = quick ? "3" : "5";
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		int d = dup(res[1]);              /* without close-on-exec */
		snprintf(wfd, sizeof wfd, "%d", d);
		execl(load, load, port, nc, "1", warm, win, nwin, wfd, (char *)NULL);
		_exit(127);
	}
	close(res[1]);

	if (epoll_mode) {
		epoll_server(lfd, res[0], &rp);
	} else {
		spawn(acceptor, (void *)(intptr_t)lfd);
		char buf[512];
		for (;;) {
			ssize_t k = read(res[0], buf, sizeof buf);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0 || !take(&rp, buf, (size_t)k))
				break;
		}
	}
	int st = 0;
	waitpid(pid, &st, 0);
	close(res[0]);
	if (rp.error[0]) {
		na(r, "%s", rp.error);
		return;
	}
	if (!rp.done || rp.windows == 0) {
		na(r, "the load generator stopped (status %d) after %d windows", st, rp.windows);
		return;
	}
	if (rp.empty) {
		na(r, "no request was answered in %d of the %d measuring windows: a stall of the server or the "
		   "generator", rp.empty, rp.windows);
		return;
	}
	summarize(r, s, &rp);
}

#define ECHO_ROWS(N, TAG)                                                                     \
	static void m_echo##TAG##_rps(struct result *r) { run_echo(r, N, S_RPS); }            \
	static void m_echo##TAG##_p50(struct result *r) { run_echo(r, N, S_P50); }            \
	static void m_echo##TAG##_p99(struct result *r) { run_echo(r, N, S_P99); }            \
	static void m_echo##TAG##_mem(struct result *r) { run_echo(r, N, S_MEM); }            \
	static void m_echo##TAG##_cpu(struct result *r) { run_echo(r, N, S_CPU); }

ECHO_ROWS(100, 100)
ECHO_ROWS(10000, 10k)

#define ROW(KEY, UNIT, LABEL, FN) { KEY, GROUP, UNIT, F_EPOLL, LABEL, "-", NULL, NULL, FN }

static const struct metric rows[] = {
	ROW("echo100_rps", U_COUNT, "100 connections: requests per second", m_echo100_rps),
	ROW("echo100_p50", U_NS, "100 connections: round trip, p50", m_echo100_p50),
	ROW("echo100_p99", U_NS, "100 connections: round trip, p99", m_echo100_p99),
	ROW("echo100_cpu", U_NS, "100 connections: server CPU per request", m_echo100_cpu),
	ROW("echo100_mem", U_BYTES, "100 connections: server memory per connection", m_echo100_mem),
	ROW("echo10k_rps", U_COUNT, "10,000 connections: requests per second", m_echo10k_rps),
	ROW("echo10k_p50", U_NS, "10,000 connections: round trip, p50", m_echo10k_p50),
	ROW("echo10k_p99", U_NS, "10,000 connections: round trip, p99", m_echo10k_p99),
	ROW("echo10k_cpu", U_NS, "10,000 connections: server CPU per request", m_echo10k_cpu),
	ROW("echo10k_mem", U_BYTES, "10,000 connections: server memory per connection", m_echo10k_mem),
};

BENCH_FAMILY(fam_echo, rows);
