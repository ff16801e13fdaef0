/*
 * fd.c — the descriptor table, and the calls that make, copy, change or
 * close descriptors: socket, socketpair, pipe, pipe2, dup, dup2, dup3,
 * fcntl, fcntl64, ioctl (FIONBIO), close, close_range, closefrom; and
 * the stdio calls that close a descriptor inside the C library (fclose,
 * pclose, freopen, freopen64), which only keep the table right.
 *
 * Owns: one struct io_fd per descriptor number (io.h states the rules), in
 * pages of FD_PAGE entries mapped on demand by mmap — wrapped calls run in
 * signal handlers, where malloc must not be — and the flags epoch.
 *
 * The program's view.  Weft never changes a descriptor's file status flags
 * (io.h), so what F_GETFL returns is what the program set; the table caches
 * the program's O_NONBLOCK only to decide, without a system call, whether a
 * call that would block returns EAGAIN or parks.  An F_SETFL or FIONBIO
 * through one descriptor changes every descriptor that shares its open file
 * description (dup, fork): unless the descriptor was made by a wrapped call
 * and never copied, the change bumps an epoch that makes every cached flag
 * be read again, lazily, the next time some call would block.
 *
 * Close while another UT waits.  Linux: a thread blocked in read, write,
 * accept, recv, poll, select or epoll_wait on a descriptor that another
 * thread closes stays blocked: the call holds its own reference to the open
 * file, so the file (a socket: the connection) lives on, the call completes
 * when the file becomes ready (data, or the peer hanging up, or shutdown()),
 * and the descriptor number is free for reuse at once.  Weft does the same:
 * before closing a descriptor with waiters it duplicates it to a hidden
 * number (close-on-exec, out of the low numbers), moves the waiters to the
 * duplicate, and closes the program's number; the waiters go on waiting on
 * the file and complete their calls on the duplicate, and the last one out
 * closes it.
 */
#include "io.h"
#include "poller.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/close_range.h>

#define FD_PAGE_SHIFT 8
#define FD_PAGE (1u << FD_PAGE_SHIFT)
#define FD_LIMIT (1u << 20)         /* fs.nr_open's default; larger numbers are not tracked */

#define M_PRIVATE 0x01u             /* made by a wrapped call and never copied: no other number here shares it */
#define M_ORPHAN 0x02u              /* a hidden duplicate kept for waiters of a closed descriptor */
#define M_LOCAL 0x04u               /* no other process shares it: made here by a wrapped call since
				     * the last fork, never sent with SCM_RIGHTS (a posix_spawn child
				     * that inherits it is not seen: docs/io.md) */

static struct io_fd *pages[FD_LIMIT / FD_PAGE];
static uint32_t epoch = 1;

static struct io_fd *page_of(int fd, bool make)
{
	if (fd < 0 || (unsigned)fd >= FD_LIMIT)
		return NULL;
	struct io_fd **pp = &pages[(unsigned)fd >> FD_PAGE_SHIFT];
	if (unlikely(!*pp)) {
		if (!make)
			return NULL;
		long p = io_sys6(SYS_mmap, 0, FD_PAGE * sizeof(struct io_fd), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if ((unsigned long)p > -4096ul)
			return NULL;
		*pp = (struct io_fd *)p;
	}
	return *pp;
}

struct io_fd *__weft_io_fd_peek(int fd)
{
	struct io_fd *p = page_of(fd, false);
	return p ? &p[(unsigned)fd & (FD_PAGE - 1)] : NULL;
}

static struct io_fd *slot(int fd)
{
	struct io_fd *p = page_of(fd, true);
	return p ? &p[(unsigned)fd & (FD_PAGE - 1)] : NULL;
}

static bool stream_socket(int fd)
{
	int type = 0;
	socklen_t len = sizeof type;
	return io_sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* First use of a number Weft has not seen made: what is it? */
static bool classify(int fd, struct io_fd *f)
{
	struct stat st;
	if (io_sys2(SYS_fstat, fd, &st) != 0)
		return false;                     /* not open: the plain call says EBADF */
	f->flags = 0;
	f->ready = 0;
	f->misc = 0;
	f->flags_epoch = 0;                       /* O_NONBLOCK read when first needed */
	switch (st.st_mode & S_IFMT) {
	case S_IFSOCK:
		f->flags = F_SOCKET;
		f->kind = stream_socket(fd) ? K_STREAM : K_NOWAIT;
		break;
	case S_IFIFO:
		f->kind = K_STREAM;
		break;
	case S_IFCHR:
	case 0:                                   /* anonymous inodes: eventfd, timerfd, epoll, ... */
		f->kind = K_NOWAIT;
		break;
	default:                                  /* regular files, directories, block devices */
		f->kind = K_PASS;
		break;
	}
	return true;
}

struct io_fd *__weft_io_fd(int fd)
{
	struct io_fd *f = slot(fd);
	if (unlikely(!f))
		return NULL;
	if (unlikely(f->kind == K_UNKNOWN) && !classify(fd, f))
		return NULL;
	return f;
}

/* Detach whatever still waits on an entry that is being reset behind its
 * back (the number was closed where Weft could not see it, and reused):
 * wake them to look again. */
static void reset(struct io_fd *f)
{
	if (unlikely(f->waiters[IO_IN] || f->waiters[IO_OUT]))
		__weft_io_wake_fd(f);
	f->gen++;
	f->kind = K_UNKNOWN;
	f->flags = 0;
	f->ready = 0;
	f->misc = 0;
	f->flags_epoch = 0;
	f->drain = 0;
	f->rcvtimeo_ms = f->sndtimeo_ms = 0;
}

void __weft_io_fd_born(int fd, enum io_kind kind, bool socket, bool nonblock)
{
	struct io_fd *f = slot(fd);
	if (!f)
		return;
	reset(f);
	f->kind = (uint8_t)kind;
	/* a new socket has no SO_RCVTIMEO / SO_SNDTIMEO (accept copies the
	 * listener's over this: sock.c) */
	f->flags = (uint8_t)((socket ? F_SOCKET | F_TMO_KNOWN : 0) | (nonblock ? F_NONBLOCK : 0));
	f->misc = M_PRIVATE | M_LOCAL;
	f->flags_epoch = epoch;
}

void __weft_io_fd_copy(int fd, int from)
{
	struct io_fd *f = slot(fd), *src = __weft_io_fd_peek(from);
	if (!f)
		return;
	reset(f);
	if (!src || src->kind == K_UNKNOWN)
		return;                           /* classified at first use */
	f->kind = src->kind;
	f->flags = src->flags & (F_NONBLOCK | F_SOCKET | F_POLLONLY_IN | F_POLLONLY_OUT | F_TMO_KNOWN);
	f->flags_epoch = src->flags_epoch;
	f->rcvtimeo_ms = src->rcvtimeo_ms;
	f->sndtimeo_ms = src->sndtimeo_ms;
	f->misc = src->misc & M_LOCAL;
	f->drain = src->drain;
	src->misc &= (uint8_t)~M_PRIVATE;         /* two numbers share one open file description now */
}

/* A pipe was put in packet mode (F_SETFL O_DIRECT): its reads stop at
 * each packet, so a short read no longer says it is empty.  The copies that
 * share its description cannot be listed: no descriptor keeps the mark
 * (rare; the marks of descriptors made later are unaffected). */
static void drains_off_everywhere(void)
{
	for (unsigned p = 0; p < FD_LIMIT / FD_PAGE; p++)
		if (pages[p])
			for (unsigned i = 0; i < FD_PAGE; i++)
				pages[p][i].drain &= (uint8_t)~D_SHORT_DRAINS;
}

void __weft_io_fd_set_drain(int fd, unsigned drain)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (f)
		f->drain = (uint8_t)drain;
}

bool __weft_io_fd_local(const struct io_fd *f)
{
	return f->misc & M_LOCAL;
}

void __weft_io_fd_sent(int fd)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (f)
		f->misc &= (uint8_t)~M_LOCAL;
}

bool __weft_io_nonblock(int fd, struct io_fd *f)
{
	if (unlikely(f->flags_epoch != epoch)) {
		long fl = io_sys2(SYS_fcntl, fd, F_GETFL);
		if (fl >= 0) {
			f->flags = (uint8_t)((f->flags & ~F_NONBLOCK) | ((fl & O_NONBLOCK) ? F_NONBLOCK : 0));
			f->flags_epoch = epoch;
		}
	}
	return f->flags & F_NONBLOCK;
}

void __weft_io_flags_changed(int fd, bool nonblock)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (f && f->kind != K_UNKNOWN && (f->misc & M_PRIVATE)) {
		f->flags = (uint8_t)((f->flags & ~F_NONBLOCK) | (nonblock ? F_NONBLOCK : 0));
		f->flags_epoch = epoch;
		return;
	}
	epoch++;                                  /* other numbers may share the description */
	if (f && f->kind != K_UNKNOWN) {
		f->flags = (uint8_t)((f->flags & ~F_NONBLOCK) | (nonblock ? F_NONBLOCK : 0));
		f->flags_epoch = epoch;
	}
}

static int32_t timeval_ms(const struct timeval *tv)
{
	if (tv->tv_sec < 0 || (tv->tv_sec == 0 && tv->tv_usec <= 0))
		return 0;
	int64_t ms = (int64_t)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
	return ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

int64_t __weft_io_sock_deadline(int fd, struct io_fd *f, int dir)
{
	if (!(f->flags & F_SOCKET))
		return -1;
	if (!(f->flags & F_TMO_KNOWN)) {
		struct timeval r = { 0, 0 }, s = { 0, 0 };
		socklen_t rl = sizeof r, sl = sizeof s;
		io_sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_RCVTIMEO, &r, &rl);
		io_sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, &s, &sl);
		f->rcvtimeo_ms = timeval_ms(&r);
		f->sndtimeo_ms = timeval_ms(&s);
		f->flags |= F_TMO_KNOWN;
	}
	int32_t ms = dir == IO_IN ? f->rcvtimeo_ms : f->sndtimeo_ms;
	return ms ? __weft_now() + (int64_t)ms * 1000000 : -1;
}

/* SO_RCVTIMEO / SO_SNDTIMEO changed: read them again when next needed. */
void __weft_io_timeouts_changed(int fd)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (f)
		f->flags &= (uint8_t)~F_TMO_KNOWN;
}

/* ---- Weft's own descriptors: the poller's and hidden duplicates ---- */

bool __weft_io_fd_is_weft(int fd)
{
	if (__weft_io_poller_owns(fd) || __weft_io_child_owns(fd))
		return true;
	struct io_fd *f = __weft_io_fd_peek(fd);
	return f && (f->misc & M_ORPHAN);
}

/* A number for a descriptor of Weft's own: above the ones programs use
 * (select's 1024 included when the limit allows), so that the program's
 * lowest-free numbering is undisturbed. */
int __weft_io_hide_fd(int fd)
{
	struct io_rlim { unsigned long cur, max; } rl;
	long lo = 1024 - 64;
	if (io_sys2(SYS_getrlimit, RLIMIT_NOFILE, &rl) == 0 && rl.cur < 1024 + 64)
		lo = rl.cur > 128 ? (long)rl.cur - 64 : 3;
	long d = io_sys3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, lo);
	if (d < 0)
		d = io_sys3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
	return (int)d;
}

/* The last waiter left a hidden duplicate: close it. */
void __weft_io_orphan_done(int fd)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (!f || !(f->misc & M_ORPHAN) || f->waiters[IO_IN] || f->waiters[IO_OUT])
		return;
	if (f->flags & F_REGISTERED)
		__weft_io_unregister(fd, f);
	reset(f);
	io_sys1(SYS_close, fd);
}

bool __weft_io_fd_closing(int fd)
{
	if (__weft_io_poller_owns(fd) || __weft_io_child_owns(fd))
		return false;
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (!f || f->kind == K_UNKNOWN)
		return true;
	if (unlikely(f->waiters[IO_IN] || f->waiters[IO_OUT])) {
		/* waiters keep the file, as Linux's blocked calls do */
		int d = __weft_io_hide_fd(fd);
		struct io_fd *o = d >= 0 ? slot(d) : NULL;
		if (o) {
			reset(o);
			o->kind = f->kind;
			o->flags = f->flags & (F_NONBLOCK | F_SOCKET | F_POLLONLY_IN | F_POLLONLY_OUT | F_TMO_KNOWN);
			o->flags_epoch = f->flags_epoch;
			o->rcvtimeo_ms = f->rcvtimeo_ms;
			o->sndtimeo_ms = f->sndtimeo_ms;
			o->misc = M_ORPHAN;
			if (__weft_io_register(d, o) == 0) {
				for (int dir = 0; dir < 2; dir++) {
					struct io_rec *r;
					while ((r = f->waiters[dir]) != NULL) {
						__weft_io_rec_move(r, f, o, d);
					}
				}
			} else {
				reset(o);
				io_sys1(SYS_close, d);
			}
		} else if (d >= 0) {
			io_sys1(SYS_close, d);
		}
		if (f->waiters[IO_IN] || f->waiters[IO_OUT])
			__weft_io_wake_fd(f);     /* no duplicate: they find EBADF */
	}
	if (f->flags & F_REGISTERED)
		__weft_io_unregister(fd, f);
	reset(f);
	return true;
}

/* Both sides of a fork: every description is shared with the other
 * process now. */
static void all_shared(void)
{
	/* a store only where the bit is set: each store to a page of the
	 * table that fork made copy-on-write is a page fault, in the parent
	 * as in the child */
	for (unsigned p = 0; p < FD_LIMIT / FD_PAGE; p++)
		if (pages[p])
			for (unsigned i = 0; i < FD_PAGE; i++)
				if (pages[p][i].misc & M_LOCAL)
					pages[p][i].misc &= (uint8_t)~M_LOCAL;
}

void __weft_io_fd_after_fork_parent(void)
{
	all_shared();
}

void __weft_io_fd_after_fork(void)
{
	all_shared();
	for (unsigned p = 0; p < FD_LIMIT / FD_PAGE; p++) {
		struct io_fd *page = pages[p];
		if (!page)
			continue;
		for (unsigned i = 0; i < FD_PAGE; i++) {
			struct io_fd *f = &page[i];
			/* stores only where something changes (all_shared says why) */
			if (f->waiters[IO_IN] || f->waiters[IO_OUT])
				f->waiters[IO_IN] = f->waiters[IO_OUT] = NULL;   /* the parent's UTs */
			if (f->flags & F_REGISTERED)
				f->flags &= (uint8_t)~F_REGISTERED;
			if (f->ready)
				f->ready = 0;
			if (f->misc & M_ORPHAN) {
				io_sys1(SYS_close, (int)(p * FD_PAGE + i));
				f->gen++;
				f->kind = K_UNKNOWN;
				f->flags = 0;
				f->misc = 0;
			}
		}
	}
	epoch++;
}

/* ---- the calls ----------------------------------------------------------- */

EXPORT int close(int fd)
{
	WEFT_CALL();
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys1(SYS_close, fd));
	__weft_io_testcancel();                   /* POSIX: a cancellation point */
	if (!__weft_io_fd_closing(fd))
		return 0;                         /* Weft's own: it stays (docs/io.md) */
	return (int)io_ret(io_sys1(SYS_close, fd));
}

EXPORT int __close(int fd) IO_ALIAS(close);

/* close_range over Weft's own descriptors: close around them. */
static long close_span(unsigned first, unsigned last, int flags)
{
	if (first > last)
		return 0;
	if (!(flags & CLOSE_RANGE_CLOEXEC)) {
		for (unsigned fd = first; fd <= last && fd < FD_LIMIT; fd++) {
			if (__weft_io_fd_is_weft((int)fd)) {
				long r = fd > first ? close_span(first, fd - 1, flags) : 0;
				if (r < 0 || fd == last)
					return r;
				return close_span(fd + 1, last, flags & ~CLOSE_RANGE_UNSHARE);
			}
			if (!pages[fd >> FD_PAGE_SHIFT])
				fd |= FD_PAGE - 1;        /* nothing tracked in this page */
			else
				__weft_io_fd_closing((int)fd);
		}
	}
	return io_sys3(SYS_close_range, first, last, flags);
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	WEFT_CALL();
	if (!__weft_io_on_vp() || first > last)
		return (int)io_ret(io_sys3(SYS_close_range, first, last, flags));
	return (int)io_ret(close_span(first, last, flags));
}

EXPORT void closefrom(int lowfd)
{
	WEFT_CALL();
	unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
	if (!__weft_io_on_vp()) {
		io_sys3(SYS_close_range, first, ~0u, 0);
		return;
	}
	if (close_span(first, ~0u, 0) < 0) {
		/* no close_range: one at a time, up to the limit */
		struct io_rlim { unsigned long cur, max; } rl = { 1024, 1024 };
		io_sys2(SYS_getrlimit, RLIMIT_NOFILE, &rl);
		for (unsigned long fd = first; fd < rl.cur && fd < FD_LIMIT; fd++)
			if (!__weft_io_fd_is_weft((int)fd)) {
				__weft_io_fd_closing((int)fd);
				io_sys1(SYS_close, fd);
			}
	}
}

EXPORT int dup(int fd)
{
	WEFT_CALL();
	long r = io_sys1(SYS_dup, fd);
	if (r >= 0 && __weft_io_on_vp())
		__weft_io_fd_copy((int)r, fd);
	return (int)io_ret(r);
}

/* dup2/dup3 onto newfd: newfd is closed first, with its waiters kept; the
 * poller's own descriptor moves out of the way. */
static long dup_onto(int oldfd, int newfd, int flags, bool dup2)
{
	if (!__weft_io_on_vp())
		return dup2 ? io_sys2(SYS_dup2, oldfd, newfd) : io_sys3(SYS_dup3, oldfd, newfd, flags);
	if (oldfd == newfd)
		return dup2 ? io_sys2(SYS_dup2, oldfd, newfd) : -EINVAL;
	if (__weft_io_poller_owns(newfd))
		__weft_io_poller_move(newfd);
	__weft_io_child_move(newfd);
	if (io_sys2(SYS_fcntl, oldfd, F_GETFD) < 0)
		return -EBADF;                    /* before newfd is touched, as the kernel checks */
	__weft_io_fd_closing(newfd);
	long r = dup2 ? io_sys2(SYS_dup2, oldfd, newfd) : io_sys3(SYS_dup3, oldfd, newfd, flags);
	if (r >= 0)
		__weft_io_fd_copy((int)r, oldfd);
	return r;
}

EXPORT int dup2(int oldfd, int newfd)
{
	WEFT_CALL();
	return (int)io_ret(dup_onto(oldfd, newfd, 0, true));
}

EXPORT int __dup2(int oldfd, int newfd) IO_ALIAS(dup2);

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	WEFT_CALL();
	return (int)io_ret(dup_onto(oldfd, newfd, flags, false));
}

/* fcntl as glibc's: F_GETOWN through F_GETOWN_EX (a negative owner is a
 * process group, not an error); F_SETLKW is a cancellation point. */
static long do_fcntl(int fd, int cmd, long arg)
{
	if (cmd == F_GETOWN) {
		struct f_owner_ex ex;
		long r = io_sys3(SYS_fcntl, fd, F_GETOWN_EX, &ex);
		if (r == 0)
			return ex.type == F_OWNER_PGRP ? -ex.pid : ex.pid;
		if (r != -EINVAL)
			return r;
	}
	bool vp = __weft_io_on_vp();
	long r;
	if (vp && (cmd == F_SETLKW || cmd == F_OFD_SETLKW)) {
		__weft_io_testcancel();
		/* a lock to be had now costs its one call; one another process
		 * holds is waited for off the VP (runtime/handoff.c) */
		r = io_sys3(SYS_fcntl, fd, cmd == F_SETLKW ? F_SETLK : F_OFD_SETLK, arg);
		if (r == -EAGAIN || r == -EACCES) {
			/* the lock is read as the call starts (a copy-stack
			 * caller's copied off its stack) */
			const long args[6] = { fd, cmd, arg };
			const struct weft_bounce b[] = { { 2, WEFT_BOUNCE_IN, sizeof(struct flock) } };
			r = __weft_blocking_cancellable_b(SYS_fcntl, args, b, 1);
		}
		return r;
	}
	r = io_sys3(SYS_fcntl, fd, cmd, arg);
	if (r < 0 || !vp)
		return r;
	switch (cmd) {
	case F_SETFL:
		__weft_io_flags_changed(fd, arg & O_NONBLOCK);
		if (arg & O_DIRECT)
			drains_off_everywhere();

		break;
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		__weft_io_fd_copy((int)r, fd);
		break;
	default:
		break;
	}
	return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	WEFT_CALL();
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	return (int)io_ret(do_fcntl(fd, cmd, arg));
}

EXPORT int fcntl64(int fd, int cmd, ...) IO_ALIAS(fcntl);
EXPORT int __fcntl(int fd, int cmd, ...) IO_ALIAS(fcntl);

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	WEFT_CALL();
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	long r = io_sys3(SYS_ioctl, fd, req, arg);
	if (r == 0 && req == FIONBIO && arg && __weft_io_on_vp())
		__weft_io_flags_changed(fd, *(const int *)arg != 0);
	return (int)io_ret(r);
}

EXPORT int socket(int domain, int type, int proto)
{
	WEFT_CALL();
	long r = io_sys3(SYS_socket, domain, type, proto);
	if (r >= 0 && __weft_io_on_vp()) {
		__weft_io_fd_born((int)r, (type & 0xf) == SOCK_STREAM ? K_STREAM : K_NOWAIT, true,
				  type & SOCK_NONBLOCK);
		if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM &&
		    (proto == 0 || proto == IPPROTO_TCP))
			__weft_io_fd_set_drain((int)r, D_TCP | D_SHORT_DRAINS);
	}
	return (int)io_ret(r);
}

EXPORT int socketpair(int domain, int type, int proto, int sv[2])
{
	WEFT_CALL();
	long r = io_sys4(SYS_socketpair, domain, type, proto, sv);
	if (r == 0 && __weft_io_on_vp())
		for (int i = 0; i < 2; i++)
			__weft_io_fd_born(sv[i], (type & 0xf) == SOCK_STREAM ? K_STREAM : K_NOWAIT, true,
					  type & SOCK_NONBLOCK);
	return (int)io_ret(r);
}

EXPORT int pipe2(int fds[2], int flags)
{
	WEFT_CALL();
	long r = io_sys2(SYS_pipe2, fds, flags);
	if (r == 0 && __weft_io_on_vp())
		for (int i = 0; i < 2; i++)
		{
			__weft_io_fd_born(fds[i], (flags & O_DIRECT) ? K_NOWAIT : K_STREAM, false,
					  flags & O_NONBLOCK);
			if (!(flags & O_DIRECT))
				__weft_io_fd_set_drain(fds[i], D_SHORT_DRAINS);
		}
	return (int)io_ret(r);
}

EXPORT int pipe(int fds[2])
{
	WEFT_CALL();
	long r = io_sys2(SYS_pipe2, fds, 0);
	if (r == 0 && __weft_io_on_vp())
		for (int i = 0; i < 2; i++)
		{
			__weft_io_fd_born(fds[i], K_STREAM, false, false);
			__weft_io_fd_set_drain(fds[i], D_SHORT_DRAINS);
		}
	return (int)io_ret(r);
}

EXPORT int __pipe(int fds[2]) IO_ALIAS(pipe);

/* ---- stdio closes its descriptor where Weft cannot see it ----
 * fclose, pclose and freopen close a FILE's descriptor inside the C
 * library, behind the wrapped close.  An entry left behind would describe
 * whatever file takes the number next (opened by open(), which Weft does
 * not wrap): a pipe's "registered" state on a regular file could park a
 * reader on a file the poller never watches.  So these forget the entry
 * (as close does: waiters keep the file on a hidden duplicate) and then
 * make glibc's call.  glibc's pclose is its fclose (libio/pclose.c); its
 * wait for the child is glibc's own and blocks the VP (docs/io.md). */
extern int _IO_fclose(FILE *f);

static void forget_stream(FILE *f)
{
	if (!f || !__weft_io_on_vp())
		return;
	int fd = fileno_unlocked(f);
	if (fd >= 0 && !__weft_io_fd_is_weft(fd))
		__weft_io_fd_closing(fd);
}

EXPORT int fclose(FILE *f)
{
	WEFT_CALL();
	forget_stream(f);
	return _IO_fclose(f);
}

EXPORT int pclose(FILE *f)
{
	WEFT_CALL();
	forget_stream(f);
	return _IO_fclose(f);
}

typedef FILE *(*freopen_fn)(const char *, const char *, FILE *);

static FILE *reopen(const char *name, const char *path, const char *mode, FILE *f)
{
	freopen_fn real = (freopen_fn)dlsym(RTLD_NEXT, name);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	forget_stream(f);
	return real(path, mode, f);
}

EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
	WEFT_CALL();
	return reopen("freopen", path, mode, f);
}

EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	WEFT_CALL();
	return reopen("freopen64", path, mode, f);
}
