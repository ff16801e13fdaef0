/*
 * fam_echo.c — the "Echo server" rows (issue 12): a thread-per-connection
 * echo server, the same source on Weft (bench-weft) and on NPTL
 * (bench-nptl), against a hand-written single-threaded epoll loop
 * (bench-nptl with BENCH_ECHO_SERVER=epoll) and Go's net package
 * (bench/echo_go/echo.go, a goroutine per connection; bench-nptl with
 * BENCH_ECHO_SERVER=go starts it).  bench/run.sh runs the last two as
 * extra columns.
 *
 * Not timed by the harness: an experiment starts the server (in this
 * process, pinned to CPU 0 by run.sh; the Go server in a child, which
 * inherits the pinning), forks and execs the load generator (echo_load.c,
 * glibc only, pinned to CPU 1), which opens 100 or 10,000 connections on
 * loopback and keeps one 64-byte request outstanding on each (a closed
 * loop), then reports requests per second and the p50 and p99 round trip
 * of each measuring window.  A row's median, min and max are over the
 * windows.
 *
 * The method (docs/performance.md says why): every server gets the same
 * share of its CPU while it has work — half by default (BENCH_ECHO_CPU; 1:
 * the whole CPU) — against a burner, a loop that never sleeps, in a
 * cgroup of the same weight beside the server's (cpu_share.h), while the
 * generator has the whole of the other CPU.  On loopback the generator's
 * kernel work per request is about the server's, so with both on a whole
 * CPU the generator saturates about where the fastest servers do and
 * requests per second cannot tell them apart; with the server held to half
 * a CPU, the generator runs at about half of its own, and the throughput
 * ratio of two servers is the inverse ratio of their CPU per request.
 * Where no cgroup can be made the rows run on the whole CPU and their
 * notes say so.
 *
 * The memory row is the server process's resident memory per connection:
 * its RSS once every connection is open and warm, less its RSS before the
 * first one (kernel socket buffers and, for NPTL, the 16 KiB kernel stack
 * of each thread are not in it).  The CPU row is the server process's CPU
 * time (user and system, every thread) over the measuring windows divided
 * by the requests answered in them.  Its note (and the CSV note of the
 * requests-per-second row) says what bounded the run: the server's and the
 * generator's CPU per request, how much of its CPU each used (against the
 * share the server was given) and how idle each CPU was (/proc/stat,
 * cpu_idle.h).  The generator samples all of it (the server's CPU clock
 * too) at the windows' edges, so that a server slow to read the report
 * does not skew it.
 *
 * All five rows of one server and connection count come from one
 * experiment: run.sh names a directory in BENCH_ECHO_CACHE, the first row
 * keeps there what the generator reported and the others read it back.
 *
 * The server thread reads up to 4 KiB and writes back what it read, with
 * plain blocking calls; the epoll loop does the same on a level-triggered
 * epoll set, one read per readable connection; the Go server the same on
 * net.Conn.  Invariant: the servers differ only in how a connection waits,
 * and every server runs with the same share of the same CPU, against the
 * same generator.  The load generator's output comes back on a pipe the
 * server's main thread reads with read(2) (wrapped under Weft: it parks
 * only that thread).  BENCH_ECHO_WINDOWS (up to 32) makes the measuring
 * phase longer, to profile a server meanwhile.
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

#include "cpu_share.h"
#include "harness.h"

#define GROUP "Echo server, thread per connection, 64-byte ping-pong on loopback"

#ifdef BENCH_WEFT
#define THREADS_TAG "weft"
#else
#define THREADS_TAG "nptl"
#endif

#ifndef BENCH_ECHO_GO_PATH
#define BENCH_ECHO_GO_PATH ""
#endif

/* The server's share of its CPU while it has work (BENCH_ECHO_CPU
 * overrides it; 1 or more: the whole CPU, no burner). */
#define SHARE 0.5

enum echo_stat { S_RPS, S_P50, S_P99, S_MEM, S_CPU };
enum server { SRV_THREADS, SRV_EPOLL, SRV_GO };

/* Resident bytes of process pid (0: this one). */
static double rss_of(pid_t pid)
{
	char buf[128], path[64];
	if (pid)
		snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/statm");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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
	pid_t srv_pid;                     /* the server process (0: this one) */
	double base_rss;
	int conns;
	double replies;                    /* answered in the measuring windows */
	double gen_cpu, gen_idle, gen_wall; /* the generator's CPU time, its CPU's idle time, wall (ns) */
	char engine[16];                   /* the generator's: io_uring or epoll */
	double srv_cpu, srv_idle;          /* the server's CPU time and its CPU's idle time in the
					      windows, as the generator sampled them (ns) */
	double share;                      /* the server's share of its CPU (0: the whole CPU) */
	char cpu_note[300];                /* how the server's CPU was shared */
	char log[4096];                    /* the lines taken, as the cache keeps them */
	size_t loglen;
};

static void log_line(struct report *rp, const char *l)
{
	int k = snprintf(rp->log + rp->loglen, sizeof rp->log - rp->loglen, "%s\n", l);
	if (k > 0 && (size_t)k < sizeof rp->log - rp->loglen)
		rp->loglen += (size_t)k;
}

/* One line of the generator's (or the cache's); false once it is finished.
 * "ready" (live only) is kept in the log as "mem BYTES_PER_CONNECTION". */
static bool take_line(struct report *rp, char *l)
{
	double r, n, gc, gi, gw, sc, si, mem, sh;
	long long p50, p99;
	if (!strcmp(l, "ready")) {
		rp->mem_per_conn = (rss_of(rp->srv_pid) - rp->base_rss) / rp->conns;
		char m[64];
		snprintf(m, sizeof m, "mem %.1f", rp->mem_per_conn);
		log_line(rp, m);
		return true;
	}
	log_line(rp, l);
	if (sscanf(l, "mem %lf", &mem) == 1) {
		rp->mem_per_conn = mem;
	} else if (sscanf(l, "share %lf", &sh) == 1) {
		rp->share = sh;
		const char *d = strchr(l + 6, ' ');
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "%s", d ? d + 1 : "");
	} else if (sscanf(l, "window %lf %lld %lld %lf %lf %lf %lf %lf %lf", &r, &p50, &p99, &n, &gc, &gi, &gw, &sc,
			  &si) == 9) {
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
	} else if (!strncmp(l, "done", 4)) {
		snprintf(rp->engine, sizeof rp->engine, "%s", l[4] ? l + 5 : "epoll");
		rp->done = true;
		return false;
	} else {
		snprintf(rp->error, sizeof rp->error, "load generator: %s", l);
		return false;
	}
	return true;
}

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
		if (!take_line(rp, rp->line))
			return false;
	}
	return true;
}

/* ---- the cache: one experiment for the five rows of a server and size ---- */

static bool cache_path(char *out, size_t n, const char *tag, int conns)
{
	const char *d = getenv("BENCH_ECHO_CACHE");
	if (!d || !*d)
		return false;
	snprintf(out, n, "%s/%s-%d.txt", d, tag, conns);
	return true;
}

/* Replay a kept experiment into rp: true if there was a whole one. */
static bool cache_load(struct report *rp, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char b[sizeof rp->log];
	ssize_t n = read(fd, b, sizeof b);
	close(fd);
	if (n <= 0)
		return false;
	take(rp, b, (size_t)n);
	return rp->done && !rp->error[0];
}

static void cache_save(const struct report *rp, const char *path)
{
	char tmp[720];
	snprintf(tmp, sizeof tmp, "%s.part", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bool ok = write_all(fd, rp->log, rp->loglen) == (ssize_t)rp->loglen;
	close(fd);
	if (ok)
		rename(tmp, path);
	else
		unlink(tmp);
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

/* ---- the Go server ---- */

/* Start the Go server in a child (in cgroup `cg` if not ""): its pid, its
 * port in *port, the write end of its standard input (closing it ends the
 * server) in *in; -1 and the reason in why. */
static pid_t go_start(const char *path, const char *cg, int *port, int *in, char *why, size_t n)
{
	int out[2], inp[2];
	if (pipe2(out, O_CLOEXEC) || pipe2(inp, O_CLOEXEC))
		die("pipe2", errno);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		if (*cg && !share_move(cg, 0))
			_exit(126);
		dup2(inp[0], 0);
		dup2(out[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(inp[0]);
	*in = inp[1];
	char b[64];
	size_t len = 0;
	*port = 0;
	while (len < sizeof b - 1 && !memchr(b, '\n', len)) {
		struct pollfd p = { out[0], POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0)
			break;
		ssize_t k = read(out[0], b + len, sizeof b - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	b[len] = 0;
	close(out[0]);
	if (sscanf(b, "port %d", port) != 1) {
		int st = 0;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		snprintf(why, n, "%s did not start (status %d%s)", path, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			 WIFEXITED(st) && WEXITSTATUS(st) == 126 ? ": could not join the server's cgroup" : "");
		close(*in);
		return -1;
	}
	return pid;
}

/* The generator has closed every connection: wait (10 s at most) until
 * the connections' threads have ended, so that NPTL's 10,000 exits are not
 * in the next run's windows. */
static void threads_gone(void)
{
	for (int i = 0; i < 1000; i++) {
		char b[4096];
		int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return;
		b[n] = 0;
		const char *t = strstr(b, "Threads:");
		if (!t || atoi(t + 8) <= 8)
			return;
		usleep(10000);
	}
}

/* ---- the burner: what the server's share leaves of its CPU ---- */

/* Start the burner (the load generator's binary, --burn) in the share's
 * cgroup on cpu: its pid once it is there, or -1. */
static pid_t burner_start(const char *load, const struct cpu_share *sh, int cpu)
{
	char c[16], procs[600];
	snprintf(c, sizeof c, "%d", cpu);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execl(load, load, "--burn", sh->burn, c, (char *)NULL);
		_exit(127);
	}
	snprintf(procs, sizeof procs, "%s/cgroup.procs", sh->burn);
	for (int i = 0; i < 200; i++) {
		char b[32];
		int fd = open(procs, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, b, sizeof b) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* The run is over: the burner ends, the server (this process, if it is
 * the server) goes home, and the cgroups go. */
static void share_end(struct cpu_share *sh, pid_t burner, bool in_process)
{
	if (burner > 0) {
		kill(burner, SIGKILL);
		waitpid(burner, NULL, 0);
	}
	if (sh->dir[0] && in_process)
		share_move(sh->home, 0);
	share_remove(sh);
}

/* ---- one experiment ---- */

/* What limited the run: how busy the server's CPU and the generator's were,
 * how much of that each process used itself (the rest is other work on the
 * machine, the burner, or the kernel's interrupts), and the server's share. */
static void bounds_note(char *b, size_t n, const struct report *rp)
{
	double wall = rp->gen_wall, srv = rp->srv_cpu;
	double gen_share = wall > 0 ? rp->gen_cpu / wall : 0, srv_share = wall > 0 ? srv / wall : 0;
	int k = snprintf(b, n, "server %.2f us/request and %.0f%% of a CPU (share: %s)", srv / rp->replies / 1e3,
			 100 * srv_share, rp->cpu_note);
	if (k > 0 && (size_t)k < n && rp->srv_idle >= 0)
		k += snprintf(b + k, n - (size_t)k, " (its CPU %.0f%% idle)", 100 * rp->srv_idle / wall);
	if (k > 0 && (size_t)k < n && rp->gen_wall > 0)
		k += snprintf(b + k, n - (size_t)k, "; load generator (%s) %.2f us/request and %.0f%% of its CPU",
			      rp->engine, rp->gen_cpu / rp->replies / 1e3, 100 * gen_share);
	if (k > 0 && (size_t)k < n && rp->gen_wall > 0 && rp->gen_idle >= 0)
		k += snprintf(b + k, n - (size_t)k, " (%.0f%% idle)", 100 * rp->gen_idle / rp->gen_wall);
	double want = rp->share > 0 ? rp->share : 1;
	const char *bound = gen_share >= 0.9         ? "the load generator"
			    : srv_share >= 0.9 * want ? (rp->share > 0 ? "the server's share of its CPU" : "the server's CPU")
						      : "neither process used all it had (other work on the machine?)";
	if (k > 0 && (size_t)k < n)
		snprintf(b + k, n - (size_t)k, "; bound: %s", bound);
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

/* The server's share of its CPU asked for (>= 1: the whole CPU). */
static double share_asked(void)
{
	const char *v = getenv("BENCH_ECHO_CPU");
	double c = v && *v ? strtod(v, NULL) : SHARE;
	return c > 0 ? c : SHARE;
}

/* The one CPU this process may run on, or -1. */
static int pinned_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return -1;
}

/* Run one experiment (or read it back from the cache) into rp: false with
 * the reason in r (n/a) when it could not be run or did not finish. */
static bool experiment(struct result *r, struct report *rp, int conns, enum server kind)
{
	const char *tag = kind == SRV_EPOLL ? "epoll" : kind == SRV_GO ? "go" : THREADS_TAG;
	const char *go = getenv("BENCH_ECHO_GO");
	if (!go || !*go)
		go = BENCH_ECHO_GO_PATH;
#ifdef BENCH_WEFT
	if (kind != SRV_THREADS) {
		na(r, "the %s server runs on glibc alone (bench-nptl)", tag);
		return false;
	}
#endif
	if (kind == SRV_GO && (!*go || access(go, X_OK) != 0)) {
		na(r, "no Go: go was not found when the benchmark was built (apt-get install golang-go; then cmake "
		      "again)");
		return false;
	}
	if (quick && conns > 1000) {
		na(r, "skipped in QUICK runs");
		return false;
	}
	cpu_set_t cpus;
	if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		na(r, "needs 2 CPUs: the load generator runs on the other one");
		return false;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < (rlim_t)conns + 64) {
		na(r, "RLIMIT_NOFILE %ld is below %d connections (raise the hard limit)", (long)rl.rlim_cur,
		   conns);
		return false;
	}
	signal(SIGPIPE, SIG_IGN);

	char self[4096], load[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		na(r, "cannot find the load generator (readlink /proc/self/exe)");
		return false;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	*slash = 0;
	snprintf(load, sizeof load, "%s/bench-echo-load", self);
	if (access(load, X_OK) != 0) {
		na(r, "%s is missing (build the bench target)", load);
		return false;
	}

	memset(rp, 0, sizeof *rp);
	rp->conns = conns;
	char cache[700];
	bool cached = cache_path(cache, sizeof cache, tag, conns);
	if (cached && cache_load(rp, cache))
		return true;
	memset(rp, 0, sizeof *rp);
	rp->conns = conns;

	/* the share: the server's cgroup, and the burner's beside it */
	struct cpu_share sh;
	memset(&sh, 0, sizeof sh);
	double want = share_asked();
	int cpu = pinned_cpu();
	char why[300] = "", line[400];
	pid_t burner = -1;
	if (want >= 1)
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "the whole CPU (BENCH_ECHO_CPU=%g)", want);
	else if (cpu < 0)
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "the whole CPU: the server is not pinned to one CPU");
	else if (!share_make(&sh, want, why, sizeof why))
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "the whole CPU: %s", why);
	else
		burner = burner_start(load, &sh, cpu);
	if (sh.dir[0] && burner < 0) {
		share_remove(&sh);
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "the whole CPU: the burner did not start");
	} else if (sh.dir[0]) {
		snprintf(rp->cpu_note, sizeof rp->cpu_note, "%s", sh.what);
	}
	snprintf(line, sizeof line, "share %g %s", sh.dir[0] ? want : 0.0, rp->cpu_note);
	take_line(rp, line);

	/* the server's listener (the Go server makes its own) */
	int lfd = -1, port = 0, go_in = -1;
	pid_t srv = 0;
	if (kind == SRV_GO) {
		srv = go_start(go, sh.dir, &port, &go_in, why, sizeof why);
		if (srv < 0) {
			share_end(&sh, burner, false);
			na(r, "%s", why);
			return false;
		}
	} else {
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t alen = sizeof a;
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 4096) ||
		    getsockname(lfd, (struct sockaddr *)&a, &alen))
			die("listener", errno);
		port = ntohs(a.sin_port);
		if (sh.dir[0] && !share_move(sh.dir, 0)) {
			int e = errno;
			share_end(&sh, burner, false);
			na(r, "cannot move the server into %s (%s)", sh.dir, strerror(e));
			return false;
		}
	}
	rp->srv_pid = srv;
	rp->base_rss = rss_of(srv);

	int res[2];
	if (pipe2(res, O_CLOEXEC))
		die("pipe2", errno);
	char sport[16], nc[16], wfd[16], spid[16];
	snprintf(sport, sizeof sport, "%d", port);
	snprintf(nc, sizeof nc, "%d", conns);
	snprintf(spid, sizeof spid, "%d", (int)(srv ? srv : getpid()));
	const char *warm = quick ? "200" : conns > 1000 ? "1500" : "500";
	const char *win = quick ? "200" : "1000";
	const char *nwin = getenv("BENCH_ECHO_WINDOWS");   /* more, to profile a server meanwhile */
	if (!nwin || atoi(nwin) < 1 || atoi(nwin) > 32)
		nwin = quick ? "3" : "5";
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		/* the generator never shares the server's cgroup */
		if (sh.dir[0] && kind != SRV_GO && !share_move(sh.home, 0))
			_exit(126);
		int d = dup(res[1]);              /* without close-on-exec */
		snprintf(wfd, sizeof wfd, "%d", d);
		execl(load, load, sport, nc, "1", warm, win, nwin, wfd, spid, (char *)NULL);
		_exit(127);
	}
	close(res[1]);

	if (kind == SRV_EPOLL) {
		epoll_server(lfd, res[0], rp);
	} else {
		if (kind == SRV_THREADS)
			spawn(acceptor, (void *)(intptr_t)lfd);
		char buf[512];
		for (;;) {
			ssize_t k = read(res[0], buf, sizeof buf);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0 || !take(rp, buf, (size_t)k))
				break;
		}
	}
	int st = 0;
	waitpid(pid, &st, 0);
	close(res[0]);
	if (kind == SRV_THREADS)
		threads_gone();
	if (kind == SRV_GO) {
		close(go_in);
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
	}
	share_end(&sh, burner, kind != SRV_GO);
	if (rp->error[0]) {
		na(r, "%s", rp->error);
		return false;
	}
	if (!rp->done || rp->windows == 0) {
		na(r, "the load generator stopped (status %d%s) after %d windows", st,
		   WIFEXITED(st) && WEXITSTATUS(st) == 126 ? ": it could not leave the server's cgroup" : "",
		   rp->windows);
		return false;
	}
	if (rp->empty) {
		na(r, "no request was answered in %d of the %d measuring windows: a stall of the server or the "
		   "generator", rp->empty, rp->windows);
		return false;
	}
	if (cached)
		cache_save(rp, cache);
	return true;
}

static void run_echo(struct result *r, int conns, enum echo_stat s)
{
	const char *mode = getenv("BENCH_ECHO_SERVER");
	enum server kind = !mode ? SRV_THREADS : !strcmp(mode, "epoll") ? SRV_EPOLL
					       : !strcmp(mode, "go")    ? SRV_GO
									: SRV_THREADS;
	static struct report rp;
	if (experiment(r, &rp, conns, kind))
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
