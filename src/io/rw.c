/*
 * rw.c — read, readv, write, writev, and the positional forms (pread,
 * pwrite, preadv, pwritev, preadv2, pwritev2 and their 64 names), with
 * glibc's other exported names for them (__read, __write, the _FORTIFY_SOURCE
 * checks __read_chk, __pread_chk, __pread64_chk).
 *
 * Every one is a preadv2 / pwritev2 with RWF_NOWAIT first (offset -1 is
 * "the file position", so it serves read and write too) — or, for one
 * buffer on a stream socket, the equivalent recvfrom / sendto with
 * MSG_DONTWAIT: one system call when the call can complete at once, and the
 * descriptor's flags are never touched.  Sockets, pipes, FIFOs, eventfd and timerfd take RWF_NOWAIT; a
 * file that does not (a tty, inotify) answers EOPNOTSUPP once, and from
 * then on the call asks poll() first and makes the ordinary call only when
 * it will not block.  Regular files, directories and block devices cannot
 * be polled and get the ordinary call (the next issue gives them a kernel
 * thread of their own).
 *
 * Blocking semantics kept: a read returns what is there as soon as
 * something is; a write moves every byte before it returns (a stream
 * socket or pipe may take them in pieces), or returns the count moved so
 * far when a signal or SO_SNDTIMEO ends it; EPIPE and SIGPIPE come from the
 * kernel as before.  All of these are cancellation points.
 */
#include "io.h"

#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

extern void __chk_fail(void) __attribute__((noreturn));

static long sys_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	return io_sys6(SYS_preadv2, fd, iov, cnt, off, 0, rwf);
}

static long sys_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	return io_sys6(SYS_pwritev2, fd, iov, cnt, off, 0, rwf);
}

/* The same with RWF_NOWAIT, which cannot block: under M:N without the
 * runtime lock (io.h, io_try6, says what the callers must then do). */
static long try_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	return io_try6(SYS_preadv2, fd, iov, cnt, off, 0, rwf | RWF_NOWAIT);
}

static long try_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	return io_try6(SYS_pwritev2, fd, iov, cnt, off, 0, rwf | RWF_NOWAIT);
}

/* The ordinary call: a plain readv at the file position when off is -1
 * (preadv2 with -1 would reject files that have no position). */
static long plain_readv(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (off == -1 && !rwf)
		return cnt == 1 ? io_sys3(SYS_read, fd, iov->iov_base, iov->iov_len) : io_sys3(SYS_readv, fd, iov, cnt);
	return sys_preadv2(fd, iov, cnt, off, rwf);
}

static long plain_writev(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (off == -1 && !rwf)
		return cnt == 1 ? io_sys3(SYS_write, fd, iov->iov_base, iov->iov_len) : io_sys3(SYS_writev, fd, iov, cnt);
	return sys_pwritev2(fd, iov, cnt, off, rwf);
}

static bool poll_ready(int fd, short ev) { return __weft_io_ready_now(fd, ev); }

/* ---- what cannot be polled: regular files, directories, block devices ----
 * What the page cache holds comes at once: the first try is the read with
 * RWF_NOWAIT, one system call like the plain read.  What must come from
 * the device is read off the VP (runtime/handoff.c), so only the caller
 * waits.  A file system without RWF_NOWAIT, a vector read, and every write
 * (the page cache takes it, unless writeback throttles it) make the plain
 * call at the takeable system call, where the monitor hands the VP on if
 * it sleeps too long (runtime/monitor.c). */
static long takeable_readv(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (off == -1 && !rwf)
		return cnt == 1 ? io_take3(SYS_read, fd, iov->iov_base, iov->iov_len) : io_take3(SYS_readv, fd, iov, cnt);
	return io_take6(SYS_preadv2, fd, iov, cnt, off, 0, rwf);
}

static long takeable_writev(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (off == -1 && !rwf)
		return cnt == 1 ? io_take3(SYS_write, fd, iov->iov_base, iov->iov_len)
				: io_take3(SYS_writev, fd, iov, cnt);
	return io_take6(SYS_pwritev2, fd, iov, cnt, off, 0, rwf);
}

static long file_readv(int fd, struct io_fd *f, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (cnt != 1 || (f->flags & F_POLLONLY_IN))
		return takeable_readv(fd, iov, cnt, off, rwf);
	size_t done = 0;
	for (;;) {
		struct iovec v = { (char *)iov->iov_base + done, iov->iov_len - done };
		off_t at = off == -1 ? -1 : off + (off_t)done;
		long r = try_preadv2(fd, &v, 1, at, rwf);
		if (r == -EOPNOTSUPP && !done) {
			f->flags |= F_POLLONLY_IN;       /* this file system has no RWF_NOWAIT */
			return takeable_readv(fd, iov, cnt, off, rwf);
		}
		if (r > 0 && (done += (size_t)r) < iov->iov_len)
			continue;                        /* short: the end of the file, or the cache's */
		if (r != -EAGAIN)
			return done ? (long)done : r;
		/* the rest must come from the device */
		r = at == -1 && !rwf ? __weft_blocking_syscall6(SYS_read, fd, (long)v.iov_base, (long)v.iov_len, 0, 0, 0)
				     : __weft_blocking_syscall6(SYS_preadv2, fd, (long)&v, 1, at, 0, rwf);
		return r > 0 ? (long)done + r : done ? (long)done : r;
	}
}

/* One attempt that must not block: -EAGAIN when it would. */
/* A read or write of one buffer on a stream socket: recvfrom / sendto with
 * MSG_DONTWAIT is the same call for the kernel (sock_read_iter and
 * sock_write_iter make exactly that msghdr; a stream socket adds no
 * MSG_EOR) and a shorter path than preadv2's iovec import. */
static inline bool stream_socket_buffer(const struct io_fd *f, const struct iovec *iov, int cnt, off_t off,
					int rwf)
{
	return (f->flags & F_SOCKET) && f->kind == K_STREAM && cnt == 1 && off == -1 && !rwf && iov->iov_len;
}

static long try_read(int fd, struct io_fd *f, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (stream_socket_buffer(f, iov, cnt, off, rwf))
		return io_try6(SYS_recvfrom, fd, iov->iov_base, iov->iov_len, MSG_DONTWAIT, 0, 0);
	if (likely(!(f->flags & F_POLLONLY_IN))) {
		long r = try_preadv2(fd, iov, cnt, off, rwf);
		if (likely(r != -EOPNOTSUPP))
			return r;
		f->flags |= F_POLLONLY_IN;          /* this file has no RWF_NOWAIT */
	}
	if (!__weft_io_nonblock(fd, f) && !poll_ready(fd, POLLIN))
		return -EAGAIN;
	/* takeable: another reader of a shared tty may have taken the input
	 * since the poll, and the call then waits for the next */
	return takeable_readv(fd, iov, cnt, off, rwf);
}

static long try_write(int fd, struct io_fd *f, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	if (stream_socket_buffer(f, iov, cnt, off, rwf))
		return io_try6(SYS_sendto, fd, iov->iov_base, iov->iov_len, MSG_DONTWAIT, 0, 0);
	if (likely(!(f->flags & F_POLLONLY_OUT))) {
		long r = try_pwritev2(fd, iov, cnt, off, rwf);
		if (likely(r != -EOPNOTSUPP))
			return r;
		f->flags |= F_POLLONLY_OUT;
	}
	if (!__weft_io_nonblock(fd, f) && !poll_ready(fd, POLLOUT))
		return -EAGAIN;
	return takeable_writev(fd, iov, cnt, off, rwf);
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - t)
			return SSIZE_MAX;
		t += iov[i].iov_len;
	}
	return t;
}

static long readv_slow(int fd, struct io_fd *f, const struct iovec *iov, int cnt, off_t off, int rwf,
		       uint16_t edges)
{
	struct io_blk b;
	__weft_io_blk_init(&b, fd, f, IO_IN, true);
	b.edges = edges;                          /* before the caller's try */
	long r = -EAGAIN;
	for (;;) {
		switch (__weft_io_block(&b)) {
		case IO_RETRY: {
			r = try_read(b.fd, b.f, iov, cnt, off, rwf);
			if (r == -EAGAIN)
				continue;
			if (off == -1 && !rwf)     /* b.edges: the count before the try */
				__weft_io_read_done(b.f, r, cnt == 1 ? iov->iov_len : iov_total(iov, cnt), b.edges);
			if (b.f->waiters[IO_IN])
				__weft_io_baton(b.f, IO_IN);
			break;
		}
		case IO_RET_EAGAIN:
			r = -EAGAIN;
			break;
		case IO_RET_BLOCK:
			r = plain_readv(b.fd, iov, cnt, off, rwf);
			break;
		default:
			r = -EINTR;
			break;
		}
		break;
	}
	__weft_io_block_end(&b);
	return r;
}

/* A read-side call from the VP thread.  A cancellation point. */
static long do_readv(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (rwf & RWF_NOWAIT))
		return plain_readv(fd, iov, cnt, off, rwf);
	if (f->kind == K_PASS)
		return file_readv(fd, f, iov, cnt, off, rwf);
	bool stream = off == -1 && !rwf;
	if (stream && __weft_io_known_empty(fd, f))
		return readv_slow(fd, f, iov, cnt, off, rwf, f->edges);   /* its last read was short: no system call */
	uint16_t edges = f->edges;
	long r = try_read(fd, f, iov, cnt, off, rwf);
	if (likely(r != -EAGAIN)) {
		if (stream)
			__weft_io_read_done(f, r, cnt == 1 ? iov->iov_len : iov_total(iov, cnt), edges);
		if (unlikely(f->waiters[IO_IN] != NULL) && r >= 0)
			__weft_io_baton(f, IO_IN);
		return r;
	}
	return readv_slow(fd, f, iov, cnt, off, rwf, edges);
}

#define IOV_REST_MAX 64

/* The iovec left after `done` bytes, at most IOV_REST_MAX entries of it
 * (a write that has moved some bytes may go on in pieces). */
static int iov_rest(const struct iovec *iov, int cnt, size_t done, struct iovec *v)
{
	int i = 0;
	while (i < cnt && done >= iov[i].iov_len) {
		done -= iov[i].iov_len;
		i++;
	}
	int n = 0;
	for (; i < cnt && n < IOV_REST_MAX; i++, n++) {
		v[n] = iov[i];
		if (n == 0) {
			v[0].iov_base = (char *)v[0].iov_base + done;
			v[0].iov_len -= done;
		}
	}
	return n;
}

/* The rest of a write that moved `done` bytes (or none) and would block:
 * the blocking call moves them all. */
static long writev_slow(int fd, struct io_fd *f, const struct iovec *iov, int cnt, off_t off, int rwf,
			size_t total, size_t done, uint16_t edges)
{
	struct io_blk b;
	__weft_io_blk_init(&b, fd, f, IO_OUT, false);
	b.edges = edges;                          /* before the caller's try */
	struct iovec rest[IOV_REST_MAX];
	long r = 0;
	for (;;) {
		int st = __weft_io_block(&b);
		const struct iovec *v = iov;
		int n = cnt;
		if (done) {
			n = iov_rest(iov, cnt, done, rest);
			v = rest;
		}
		off_t at = off == -1 ? -1 : off + (off_t)done;
		if (st == IO_RETRY) {
			r = try_write(b.fd, b.f, v, n, at, rwf);
			if (r > 0) {
				done += (size_t)r;
				if (done < total)
					continue;
			}
			if (r == -EAGAIN)
				continue;
		} else if (st == IO_RET_BLOCK) {
			r = plain_writev(b.fd, v, n, at, rwf);
			if (r > 0)
				done += (size_t)r;
		} else {
			r = st == IO_RET_EAGAIN ? -EAGAIN : -EINTR;
		}
		break;
	}
	__weft_io_block_end(&b);
	return done ? (long)done : r;
}

static long do_writev(int fd, const struct iovec *iov, int cnt, off_t off, int rwf)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (rwf & RWF_NOWAIT))
		return plain_writev(fd, iov, cnt, off, rwf);
	if (f->kind == K_PASS)
		return takeable_writev(fd, iov, cnt, off, rwf);
	uint16_t edges = f->edges;
	long r = try_write(fd, f, iov, cnt, off, rwf);
	if (likely(r != -EAGAIN)) {
		if (r <= 0 || cnt <= 0)
			return r;
		size_t total = iov_total(iov, cnt);
		if (likely((size_t)r >= total))
			return r;
		/* part of it: a blocking write goes on */
		if (__weft_io_nonblock(fd, f))
			return r;
		return writev_slow(fd, f, iov, cnt, off, rwf, total, (size_t)r, edges);
	}
	return writev_slow(fd, f, iov, cnt, off, rwf, cnt > 0 ? iov_total(iov, cnt) : 0, 0, edges);
}

/* ---- the exported names ---------------------------------------------- */

#define ON_VP_OR(plain)                         \
	do {                                    \
		if (!__weft_io_on_vp())         \
			return io_ret(plain);   \
	} while (0)

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	ON_VP_OR(io_sys3(SYS_read, fd, buf, n));
	WEFT_CALL();
	struct iovec v = { buf, n };
	return io_ret(do_readv(fd, &v, 1, -1, 0));
}

EXPORT ssize_t __read(int fd, void *buf, size_t n) IO_ALIAS(read);

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	ON_VP_OR(io_sys3(SYS_read, fd, buf, n));
	WEFT_CALL();
	struct iovec v = { buf, n };
	return io_ret(do_readv(fd, &v, 1, -1, 0));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	ON_VP_OR(io_sys3(SYS_readv, fd, iov, cnt));
	WEFT_CALL();
	return io_ret(do_readv(fd, iov, cnt, -1, 0));
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	ON_VP_OR(io_sys3(SYS_write, fd, buf, n));
	WEFT_CALL();
	struct iovec v = { (void *)buf, n };
	return io_ret(do_writev(fd, &v, 1, -1, 0));
}

EXPORT ssize_t __write(int fd, const void *buf, size_t n) IO_ALIAS(write);

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	ON_VP_OR(io_sys3(SYS_writev, fd, iov, cnt));
	WEFT_CALL();
	return io_ret(do_writev(fd, iov, cnt, -1, 0));
}

static long do_pread(int fd, void *buf, size_t n, off_t off)
{
	if (off < 0)
		return -EINVAL;
	struct iovec v = { buf, n };
	return do_readv(fd, &v, 1, off, 0);
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	ON_VP_OR(io_sys4(SYS_pread64, fd, buf, n, off));
	WEFT_CALL();
	return io_ret(do_pread(fd, buf, n, off));
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off) IO_ALIAS(pread);
EXPORT ssize_t __pread64(int fd, void *buf, size_t n, off_t off) IO_ALIAS(pread);

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	ON_VP_OR(io_sys4(SYS_pread64, fd, buf, n, off));
	WEFT_CALL();
	return io_ret(do_pread(fd, buf, n, off));
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
	IO_ALIAS(__pread_chk);

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ON_VP_OR(io_sys4(SYS_pwrite64, fd, buf, n, off));
	WEFT_CALL();
	if (off < 0)
		return io_ret(-EINVAL);
	struct iovec v = { (void *)buf, n };
	return io_ret(do_writev(fd, &v, 1, off, 0));
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) IO_ALIAS(pwrite);
EXPORT ssize_t __pwrite64(int fd, const void *buf, size_t n, off_t off) IO_ALIAS(pwrite);

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	ON_VP_OR(io_sys5(SYS_preadv, fd, iov, cnt, off, 0));
	WEFT_CALL();
	if (off < 0)
		return io_ret(-EINVAL);
	return io_ret(do_readv(fd, iov, cnt, off, 0));
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off) IO_ALIAS(preadv);

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	ON_VP_OR(io_sys5(SYS_pwritev, fd, iov, cnt, off, 0));
	WEFT_CALL();
	if (off < 0)
		return io_ret(-EINVAL);
	return io_ret(do_writev(fd, iov, cnt, off, 0));
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off) IO_ALIAS(pwritev);

EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	ON_VP_OR(sys_preadv2(fd, iov, cnt, off, flags));
	WEFT_CALL();
	if (off < -1)
		return io_ret(-EINVAL);
	return io_ret(do_readv(fd, iov, cnt, off, flags));
}

EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
	IO_ALIAS(preadv2);

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	ON_VP_OR(sys_pwritev2(fd, iov, cnt, off, flags));
	WEFT_CALL();
	if (off < -1)
		return io_ret(-EINVAL);
	return io_ret(do_writev(fd, iov, cnt, off, flags));
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
	IO_ALIAS(pwritev2);
