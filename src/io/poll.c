/*
 * poll.c — poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2 (and __poll, __select, the _FORTIFY_SOURCE __poll_chk and
 * __ppoll_chk).
 *
 * Each first asks the kernel with a zero timeout — the real poll, select or
 * epoll_wait on the program's own arguments, so what it reports is exactly
 * what the kernel reports — and returns if anything is ready or the timeout
 * is zero.  Otherwise the caller parks with one record per descriptor and
 * direction asked about (an epoll instance is itself a descriptor that
 * becomes readable, so epoll_wait waits on one), records that take nothing
 * (all are woken), and asks again whenever it is woken.  Timeouts are the
 * caller's deadline; select writes the time left back, as Linux does.  A
 * signal handler run for the waiting UT ends the wait with EINTR: POSIX
 * never restarts these calls.  All are cancellation points.
 *
 * Signal masks (ppoll, pselect, epoll_pwait, epoll_pwait2).  The caller's
 * mask is its UT's own for the call's duration (runtime/sigdeliver.c keeps
 * one per UT, and the carrier's kernel mask lets through what any UT could
 * take): a signal it lets through is routed to this UT and ends its wait;
 * the handler runs with that mask, then the UT's old mask is back, as the
 * kernel restores it.  The kernel itself is asked with the carrier's mask.
 */
#include "io.h"

#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>

extern void __chk_fail(void) __attribute__((noreturn));

#define RECS_ON_STACK 32

static const struct timespec zero_ts = { 0, 0 };

/* The time left until `deadline` as a relative timespec in *ts, for a
 * call made in the kernel after all; NULL for no deadline (-1). */
static struct timespec *time_left(int64_t deadline, struct timespec *ts)
{
	if (deadline < 0)
		return NULL;
	*ts = __weft_time_left(deadline);
	return ts;
}

/* ---- the signal mask around a masked call ---- */

/* The UT's mask is the call's for its duration (runtime/sigdeliver.c
 * keeps one per UT): a signal the call lets through ends its wait, and its
 * handler runs with that mask, before the old one is back. */
struct mask_guard {
	uint64_t before;
	const sigset_t *mask;
};

static void mask_begin(struct mask_guard *g, const sigset_t *mask)
{
	g->mask = mask;
	if (mask)
		__weft_sig_mask_swap(mask, &g->before);
}

static void mask_end(struct mask_guard *g)
{
	if (!g->mask)
		return;
	struct vp *vp = __weft_vp();
	if (vp->signals)
		__weft_signals_deliver(vp);       /* handlers first, as the kernel runs them */
	__weft_sig_run_cur(vp);
	__weft_sig_mask_restore(g->before);
}

/* ---- records for many descriptors ---- */

struct recs {
	struct io_rec *v;
	unsigned n, cap;
	struct io_rec stack[RECS_ON_STACK];
	size_t mapped;
};

static bool recs_init(struct recs *r, size_t want)
{
	r->n = 0;
	r->mapped = 0;
	if (want <= RECS_ON_STACK) {
		r->v = r->stack;
		r->cap = RECS_ON_STACK;
		return true;
	}
	/* mmap, not malloc: poll is async-signal-safe */
	size_t bytes = want * sizeof(struct io_rec);
	long p = io_sys6(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)p > -4096ul)
		return false;
	r->v = (struct io_rec *)p;
	r->cap = (unsigned)want;
	r->mapped = bytes;
	return true;
}

static void recs_free(struct recs *r)
{
	if (r->mapped)
		io_sys2(SYS_munmap, r->v, r->mapped);
}

static void recs_add(struct recs *r, int fd, int dir)
{
	if (r->n == r->cap || !__weft_io_fd(fd))
		return;
	r->v[r->n].fd = fd;
	r->v[r->n].dir = (uint8_t)dir;
	r->v[r->n].tag = (uint32_t)fd;            /* the number the caller gave */
	r->n++;
}

/* Records moved to a hidden duplicate (their descriptor was closed while
 * this call waited): done with it. */
static void release_moved(struct recs *r)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->v[i].fd != (int)r->v[i].tag)
			__weft_io_orphan_done(r->v[i].fd);
}

/* After a wait and a fresh look that found r (> 0: ready, < 0: an error):
 * is the call over?  Yes with something to report, at the deadline (r
 * stays 0), or after a signal meant for this UT (EINTR: POSIX never
 * restarts these calls). */
static bool look_done(long *r, enum io_wake how)
{
	if (*r != 0 || how == IO_TIMEDOUT)
		return true;
	if (how == IO_SIGNALED) {
		*r = -EINTR;
		return true;
	}
	return false;
}

/* Park with these records until woken, the deadline, or a signal. */
static enum io_wake park_on(struct recs *r, int64_t deadline, bool consuming,
			    struct io_waiter *w)
{
	w->recs = r->v;
	w->nrecs = r->n;
	w->deadline = deadline;
	w->consuming = consuming;
	w->cancel_point = 1;
	return __weft_io_wait(w);
}

/* ---- poll, ppoll ---- */

static long sys_ppoll0(struct pollfd *fds, nfds_t n, const sigset_t *mask)
{
	struct timespec ts;
	return IO_NO_TICK_EINTR((ts = zero_ts, io_sys5(SYS_ppoll, fds, n, &ts, mask, 8)));
}

static long do_ppoll(struct pollfd *fds, nfds_t n, int64_t deadline, const sigset_t *mask)
{
	__weft_io_testcancel();
	struct mask_guard g;
	mask_begin(&g, mask);
	long r = sys_ppoll0(fds, n, NULL);
	if (r != 0 || deadline == 0)
		goto out;
	if (__weft_io_must_block()) {
		/* in the kernel after all; the tick may interrupt it: again */
		struct timespec ts;
		r = IO_NO_TICK_EINTR(io_sys5(SYS_ppoll, fds, n, time_left(deadline, &ts), NULL, 8));
		goto out;
	}
	struct recs rs;
	if (!recs_init(&rs, (size_t)n * 2)) {
		r = -ENOMEM;
		goto out;
	}
	for (nfds_t i = 0; i < n; i++) {
		if (fds[i].fd < 0)
			continue;
		short e = fds[i].events;
		bool out = e & (POLLOUT | POLLWRNORM | POLLWRBAND);
		if ((e & ~(POLLOUT | POLLWRNORM | POLLWRBAND)) || !out)
			recs_add(&rs, fds[i].fd, IO_IN);   /* hang-ups and errors come this way too */
		if (out)
			recs_add(&rs, fds[i].fd, IO_OUT);
	}
	struct io_waiter w;
	memset(&w, 0, sizeof w);
	for (;;) {
		enum io_wake how = park_on(&rs, deadline, false, &w);
		/* Linux's poll: woken by the files it saw when it started (a file
		 * closed meanwhile is watched on its hidden duplicate, fd.c),
		 * it looks again at the numbers it was given: a number closed
		 * since reports POLLNVAL, a number reused the new file's state */
		r = sys_ppoll0(fds, n, NULL);
		if (look_done(&r, how))
			break;
	}
	release_moved(&rs);
	recs_free(&rs);
out:
	mask_end(&g);
	return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys3(SYS_poll, fds, n, timeout));
	WEFT_CALL();
	return (int)io_ret(do_ppoll(fds, n, timeout == 0 ? 0 : __weft_io_ms_deadline(timeout), NULL));
}

EXPORT int __poll(struct pollfd *fds, nfds_t n, int timeout) IO_ALIAS(poll);

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof *fds < n)
		__chk_fail();
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys3(SYS_poll, fds, n, timeout));
	WEFT_CALL();
	return (int)io_ret(do_ppoll(fds, n, timeout == 0 ? 0 : __weft_io_ms_deadline(timeout), NULL));
}

/* A relative timespec as a deadline: 0 for a zero timeout, -1 for none. */
static int ts_deadline(const struct timespec *ts, int64_t *out)
{
	if (!ts) {
		*out = -1;
		return 0;
	}
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000)
		return -EINVAL;
	if (ts->tv_sec == 0 && ts->tv_nsec == 0) {
		*out = 0;
		return 0;
	}
	int e = __weft_rel_deadline(ts, out);
	return e ? -e : 0;
}

static long ppoll_entry(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int64_t d;
	int e = ts_deadline(ts, &d);
	if (e)
		return e;
	return do_ppoll(fds, n, d, mask);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	if (!__weft_io_on_vp()) {
		struct timespec t, *tp = NULL;
		if (ts) {
			t = *ts;
			tp = &t;
		}
		return (int)io_ret(io_sys5(SYS_ppoll, fds, n, tp, mask, 8));
	}
	WEFT_CALL();
	return (int)io_ret(ppoll_entry(fds, n, ts, mask));
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		       size_t fdslen)
{
	if (fdslen / sizeof *fds < n)
		__chk_fail();
	return ppoll(fds, n, ts, mask);
}

/* ---- select, pselect ---- */

#define NFDBITS_ (8 * (int)sizeof(unsigned long))

static size_t set_bytes(int nfds) { return (size_t)((nfds + NFDBITS_ - 1) / NFDBITS_) * sizeof(unsigned long); }

static bool in_set(const fd_set *s, int fd)
{
	return s && (((const unsigned long *)s)[fd / NFDBITS_] >> (fd % NFDBITS_)) & 1;
}

/* select's zero-timeout look, on copies so that the caller's sets stay as
 * they were until something is ready. */
static long select0(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const sigset_t *mask, unsigned long *copy)
{
	size_t b = set_bytes(nfds);
	unsigned long *c[3] = { copy, copy + b / sizeof *copy, copy + 2 * (b / sizeof *copy) };
	fd_set *in[3] = { rd, wr, ex };
	for (int i = 0; i < 3; i++)
		if (in[i])
			memcpy(c[i], in[i], b);
	struct timespec ts;
	struct { const sigset_t *m; size_t len; } sm = { mask, 8 };
	long r = IO_NO_TICK_EINTR((ts = zero_ts, io_sys6(SYS_pselect6, nfds, rd ? c[0] : NULL, wr ? c[1] : NULL,
							ex ? c[2] : NULL, &ts, mask ? &sm : NULL)));
	if (r > 0)
		for (int i = 0; i < 3; i++)
			if (in[i])
				memcpy(in[i], c[i], b);
	if (r == 0)
		for (int i = 0; i < 3; i++)
			if (in[i])
				memset(in[i], 0, b);   /* nothing ready yet: restored below if we wait */
	return r;
}

/* select0 said EBADF after a wait: a number the caller gave was closed
 * while it waited.  Linux's select, looking again, reports such a number
 * in every set it was asked for (ready, so that the caller notices); the
 * others as they are. */
static long select_closed(int nfds, fd_set *in[3], const unsigned long *orig, size_t b, const sigset_t *mask,
			  unsigned long *copy)
{
	const unsigned long *o[3] = { orig, orig + b / sizeof *orig, orig + 2 * (b / sizeof *orig) };
	long closed = 0;
	for (int i = 0; i < 3; i++)
		if (in[i])
			memcpy(in[i], o[i], b);
	for (int fd = 0; fd < nfds; fd++) {
		bool asked = false;
		for (int i = 0; i < 3; i++)
			asked |= in[i] && in_set((const fd_set *)o[i], fd);
		if (!asked || io_sys2(SYS_fcntl, fd, F_GETFD) != -EBADF)
			continue;
		for (int i = 0; i < 3; i++)
			if (in[i] && in_set((const fd_set *)o[i], fd)) {
				FD_CLR(fd, in[i]);
				closed++;
			}
	}
	long r = select0(nfds, in[0], in[1], in[2], mask, copy);
	if (r < 0 || !closed)
		return r;
	for (int fd = 0; fd < nfds; fd++)
		for (int i = 0; i < 3; i++)
			if (in[i] && in_set((const fd_set *)o[i], fd) && io_sys2(SYS_fcntl, fd, F_GETFD) == -EBADF)
				FD_SET(fd, in[i]);
	return r + closed;
}

static long do_pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int64_t deadline, const sigset_t *mask)
{
	__weft_io_testcancel();
	if (nfds < 0 || nfds > (1 << 20))
		return -EINVAL;
	size_t b = set_bytes(nfds);
	struct mask_guard g;
	mask_begin(&g, mask);
	long r;
	/* the sets as given, and room for the kernel's copies */
	size_t need = 6 * b;
	unsigned long small[6 * (1024 / NFDBITS_)];
	unsigned long *keep = small;
	long mapped = 0;
	if (need > sizeof small) {
		mapped = io_sys6(SYS_mmap, 0, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if ((unsigned long)mapped > -4096ul) {
			r = -ENOMEM;
			goto out;
		}
		keep = (unsigned long *)mapped;
	}
	unsigned long *orig = keep + 3 * (b / sizeof *keep), *copy = keep;
	fd_set *in[3] = { rd, wr, ex };
	/* a set not given is empty: the loops below read all three (memcheck
	 * saw them read the stack's leftovers, and waits were added for
	 * numbers the caller never named) */
	for (int i = 0; i < 3; i++)
		if (in[i])
			memcpy(orig + i * (b / sizeof *orig), in[i], b);
		else
			memset(orig + i * (b / sizeof *orig), 0, b);
	r = select0(nfds, rd, wr, ex, NULL, copy);
	if (r != 0 || deadline == 0 || __weft_io_must_block()) {
		if (r == 0 && deadline != 0) {
			/* a handler over protected code: block as a kernel thread would */
			for (int i = 0; i < 3; i++)
				if (in[i])
					memcpy(in[i], orig + i * (b / sizeof *orig), b);
			struct timespec ts;
			r = IO_NO_TICK_EINTR(io_sys6(SYS_pselect6, nfds, rd, wr, ex, time_left(deadline, &ts),
						     NULL));
		}
		goto unmap;
	}
	size_t count = 0;
	for (int fd = 0; fd < nfds; fd++)
		for (int i = 0; i < 3; i++)
			if (in_set((fd_set *)(orig + i * (b / sizeof *orig)), fd))
				count++;
	struct recs rs;
	if (!recs_init(&rs, count)) {
		r = -ENOMEM;
		goto unmap;
	}
	for (int fd = 0; fd < nfds; fd++) {
		bool rdw = in_set((fd_set *)orig, fd) || in_set((fd_set *)(orig + 2 * (b / sizeof *orig)), fd);
		if (rdw)
			recs_add(&rs, fd, IO_IN);
		if (in_set((fd_set *)(orig + (b / sizeof *orig)), fd))
			recs_add(&rs, fd, IO_OUT);
	}
	struct io_waiter w;
	memset(&w, 0, sizeof w);
	for (;;) {
		enum io_wake how = park_on(&rs, deadline, false, &w);
		for (int i = 0; i < 3; i++)
			if (in[i])
				memcpy(in[i], orig + i * (b / sizeof *orig), b);
		r = select0(nfds, rd, wr, ex, NULL, copy);
		if (r == -EBADF)
			r = select_closed(nfds, in, orig, b, NULL, copy);
		if (r != 0 || how == IO_TIMEDOUT)
			break;
		if (how == IO_SIGNALED) {
			for (int i = 0; i < 3; i++)
				if (in[i])
					memcpy(in[i], orig + i * (b / sizeof *orig), b);
			r = -EINTR;
			break;
		}
	}
	release_moved(&rs);
	recs_free(&rs);
unmap:
	if (mapped)
		io_sys2(SYS_munmap, mapped, need);
out:
	mask_end(&g);
	return r;
}

EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys5(SYS_select, nfds, rd, wr, ex, tv));
	WEFT_CALL();
	int64_t deadline = -1;
	if (tv) {
		if (tv->tv_sec < 0 || tv->tv_usec < 0)
			return (int)io_ret(-EINVAL);
		/* as the kernel: microseconds past a second carry over */
		struct timespec ts = { tv->tv_sec + tv->tv_usec / 1000000, (tv->tv_usec % 1000000) * 1000 };
		int e = ts_deadline(&ts, &deadline);
		if (e)
			return (int)io_ret(e);
	}
	long r = do_pselect(nfds, rd, wr, ex, deadline, NULL);
	if (tv && deadline > 0 && r != -EINVAL) {
		/* Linux writes back the time left */
		int64_t left = deadline - __weft_now();
		if (left < 0)
			left = 0;
		tv->tv_sec = left / 1000000000;
		tv->tv_usec = (left % 1000000000) / 1000;
	}
	return (int)io_ret(r);
}

EXPORT int __select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
	IO_ALIAS(select);

EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
		   const sigset_t *mask)
{
	if (!__weft_io_on_vp()) {
		struct timespec t, *tp = NULL;
		if (ts) {
			t = *ts;
			tp = &t;
		}
		struct { const sigset_t *m; size_t len; } sm = { mask, 8 };
		return (int)io_ret(io_sys6(SYS_pselect6, nfds, rd, wr, ex, tp, mask ? &sm : NULL));
	}
	WEFT_CALL();
	int64_t deadline;
	int e = ts_deadline(ts, &deadline);
	if (e)
		return (int)io_ret(e);
	return (int)io_ret(do_pselect(nfds, rd, wr, ex, deadline, mask));
}

/* ---- epoll_wait and its masked forms ---- */

static long do_epoll(int epfd, struct epoll_event *ev, int max, int64_t deadline, const sigset_t *mask)
{
	__weft_io_testcancel();
	struct mask_guard g;
	mask_begin(&g, mask);
	struct timespec ts = zero_ts;
	long r = io_sys6(SYS_epoll_pwait2, epfd, ev, max, &ts, NULL, 8);
	if (r == -ENOSYS)
		r = io_sys6(SYS_epoll_pwait, epfd, ev, max, 0, NULL, 8);
	if (r != 0 || deadline == 0)
		goto out;
	struct io_fd *f = __weft_io_fd(epfd);
	if (!f || __weft_io_must_block() || __weft_io_register(epfd, f) != 0) {
		struct timespec t;
		r = IO_NO_TICK_EINTR(io_sys6(SYS_epoll_pwait2, epfd, ev, max, time_left(deadline, &t), NULL, 8));
		if (r == -ENOSYS)
			r = IO_NO_TICK_EINTR(io_sys6(SYS_epoll_pwait, epfd, ev, max,
						     time_left(deadline, &t) ? (long)((t.tv_sec * 1000) +
										 (t.tv_nsec + 999999) / 1000000)
									: -1,
						     NULL, 8));
		goto out;
	}
	struct io_rec rec;
	struct io_waiter w;
	memset(&w, 0, sizeof w);
	int fd = epfd;
	for (;;) {
		rec.fd = fd;
		rec.dir = IO_IN;
		struct recs rs = { .v = &rec, .n = 1, .cap = 1 };
		f->ready &= (uint8_t)~IO_READY_IN;
		enum io_wake how = park_on(&rs, deadline, true, &w);
		if (rec.fd != fd) {
			fd = rec.fd;              /* closed meanwhile: its hidden duplicate */
			f = __weft_io_fd_peek(fd);
		}
		ts = zero_ts;
		r = io_sys6(SYS_epoll_pwait2, fd, ev, max, &ts, NULL, 8);
		if (r == -ENOSYS)
			r = io_sys6(SYS_epoll_pwait, fd, ev, max, 0, NULL, 8);
		if (r > 0 && f->waiters[IO_IN])
			__weft_io_baton(f, IO_IN);
		if (look_done(&r, how))
			break;
	}
	if (fd != epfd)
		__weft_io_orphan_done(fd);
out:
	mask_end(&g);
	return r;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys6(SYS_epoll_pwait, epfd, ev, max, timeout, 0, 8));
	WEFT_CALL();
	return (int)io_ret(do_epoll(epfd, ev, max, timeout == 0 ? 0 : __weft_io_ms_deadline(timeout), NULL));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys6(SYS_epoll_pwait, epfd, ev, max, timeout, mask, 8));
	WEFT_CALL();
	return (int)io_ret(do_epoll(epfd, ev, max, timeout == 0 ? 0 : __weft_io_ms_deadline(timeout), mask));
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
			const sigset_t *mask)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys6(SYS_epoll_pwait2, epfd, ev, max, ts, mask, 8));
	WEFT_CALL();
	int64_t deadline;
	int e = ts_deadline(ts, &deadline);
	if (e)
		return (int)io_ret(e);
	return (int)io_ret(do_epoll(epfd, ev, max, deadline, mask));
}
