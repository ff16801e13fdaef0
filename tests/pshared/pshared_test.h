/*
 * pshared_test.h — the Weft side's helpers for the process-shared tests:
 * make the shared page, start the NPTL peer (pshared_nptl_peer, whose path
 * the test gets as argv[1] or in WEFT_PSHARED_PEER) on it, and collect its
 * verdict.  The workers both sides run are in pshared_common.h.
 */
#ifndef WEFT_TEST_PSHARED_TEST_H
#define WEFT_TEST_PSHARED_TEST_H

#define PS_SIDE "weft"
#include "check.h"
#include "pshared_common.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static const char *peer_path;
static int page_fd = -1;

/* The shared page, zeroed; its memfd stays open (and inheritable) for
 * the peers. */
static inline struct shared *ps_setup(int argc, char **argv)
{
	peer_path = argc > 1 ? argv[1] : getenv("WEFT_PSHARED_PEER");
	if (!peer_path)
		SKIP("usage: test PATH-TO-pshared_nptl_peer (or WEFT_PSHARED_PEER)");
	if (access(peer_path, X_OK) != 0)
		SKIP("the NPTL peer is missing");
	page_fd = (int)syscall(SYS_memfd_create, "weft-pshared", 0);
	CHECK(page_fd >= 0);
	CHECK_OK(ftruncate(page_fd, sizeof(struct shared)));
	sh = ps_map(page_fd);
	CHECK(sh != NULL);
	memset(sh, 0, sizeof *sh);
	return sh;
}

/* Start the peer in MODE (n, threads, x: its argv); returns its pid. */
static inline pid_t peer_start(const char *mode, long pn, int threads, long px)
{
	char fds[16], ns[32], ts[16], xs[32];
	snprintf(fds, sizeof fds, "%d", page_fd);
	snprintf(ns, sizeof ns, "%ld", pn);
	snprintf(ts, sizeof ts, "%d", threads);
	snprintf(xs, sizeof xs, "%ld", px);
	fflush(NULL);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		/* a test that dies (a timeout) takes its peers with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(peer_path, peer_path, fds, mode, ns, ts, xs, (char *)NULL);
		_exit(127);
	}
	return p;
}

/* The peer's exit status (0: every check on its side held). */
static inline int peer_status(pid_t p)
{
	int st;
	CHECK_EQ(waitpid(p, &st, 0), p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline void peer_done(pid_t p)
{
	CHECK_EQ(peer_status(p), 0);
}

static inline void peer_run(const char *mode, long pn, int threads, long px)
{
	peer_done(peer_start(mode, pn, threads, px));
}

/* Both sides at once: the peer runs MODE with `pt` threads while `wt` UTs
 * here run fn(arg); both with the same n and x. */
static inline void ps_both(const char *mode, int pt, int wt, void *(*fn)(void *), void *arg)
{
	pid_t p = peer_start(mode, n, pt, x);
	ps_run_threads(wt, fn, arg);
	peer_done(p);
}

#endif
