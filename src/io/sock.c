/*
 * sock.c — the socket calls: recv, recvfrom, recvmsg, recvmmsg, send,
 * sendto, sendmsg, sendmmsg, accept, accept4, connect (with glibc's other
 * exported names: __recv_chk, __recvfrom_chk, __send, __connect), and
 * setsockopt, which only tells the table about SO_RCVTIMEO / SO_SNDTIMEO.
 *
 * The recv and send families take MSG_DONTWAIT, so each is tried once with
 * it added (one system call when it can complete), and retried after the
 * poller says the socket is ready.  Blocking semantics kept: MSG_WAITALL
 * on a stream socket gathers until the length is reached, EOF, an error or
 * a signal; a send on a stream socket moves every byte (ancillary data goes
 * with the first piece only); SO_RCVTIMEO / SO_SNDTIMEO end a wait with
 * EAGAIN, or the count moved so far; a signal with SA_RESTART restarts the
 * call unless such a timeout is set (signal(7)).
 *
 * accept has no per-call non-blocking form (accept4's SOCK_NONBLOCK is for
 * the new socket): it waits for the listener to be readable, then makes
 * the ordinary call, which returns at once — unless another process that
 * shares the listener took the connection first, when it blocks until the
 * next one (the price of never setting O_NONBLOCK on a shared description;
 * docs/io.md).  connect sets O_NONBLOCK for its one system call and clears
 * it at once — only on a socket no other process shares (made here since
 * the last fork, never sent), where nobody can see the flag, since no
 * other UT runs meanwhile; a shared one gets the plain blocking call —,
 * waits for the socket to be writable, and reads SO_ERROR,
 * as a blocking connect would report it; SO_SNDTIMEO ends it with
 * EINPROGRESS, as on Linux.  All but setsockopt are cancellation
 * points.
 *
 * Those plain calls that may block (accept on a shared listener, connect
 * on a shared socket) are made at the takeable system call (io.h,
 * io_take6): the runtime lock is let go for them under M:N, so they stop
 * only their own VP, and the monitor hands that VP on if they sleep
 * (runtime/monitor.c).  Made under the lock, they stopped every VP at its
 * next Weft call until they returned (mn_shared_socket_calls_takeable).
 */
#include "io.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

extern void __chk_fail(void) __attribute__((noreturn));

#define ON_VP_OR(plain)                         \
	do {                                    \
		if (!__weft_io_on_vp())         \
			return io_ret(plain);   \
	} while (0)

/* ---- recv, recvfrom ---- */

struct recv_ctx {
	char *buf;
	size_t n, done;
	int flags;
	struct sockaddr *addr;
	socklen_t *alen;
	bool gather;                   /* MSG_WAITALL on a stream socket */
};

static long recv_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)b;
	struct recv_ctx *x = c;
	for (;;) {
		/* the try without the runtime lock under M:N (io.h, io_try6) */
		long r = nowait ? io_try6(SYS_recvfrom, fd, x->buf + x->done, x->n - x->done, x->flags | MSG_DONTWAIT,
					  x->addr, x->alen)
				: io_sys6(SYS_recvfrom, fd, x->buf + x->done, x->n - x->done, x->flags, x->addr, x->alen);
		if (!x->gather)
			return r;
		if (r > 0) {
			x->done += (size_t)r;
			if (x->done < x->n && nowait)
				continue;
			return (long)x->done;
		}
		if (r == 0 || (r != -EAGAIN && x->done))
			return (long)x->done;     /* EOF, or an error after some bytes */
		return r;
	}
}

static long do_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS)
		return io_sys6(SYS_recvfrom, fd, buf, n, flags, addr, alen);
	struct recv_ctx x = { buf, n, 0, flags, addr, alen,
			      (flags & (MSG_WAITALL | MSG_PEEK)) == MSG_WAITALL && f->kind == K_STREAM };
	long r;
	/* the edge count before each try, which M:N makes without the
	 * runtime lock (io.h, io_try6, says why) */
	uint16_t edges = f->edges;
	if (flags == 0 && __weft_io_known_empty(fd, f)) {
		r = -EAGAIN;                      /* its last read was short: no system call (io.h) */
	} else {
		r = recv_try(fd, &x, NULL, true);
		if (flags == 0)
			__weft_io_read_done(f, r, n, edges);
		if (likely(r != -EAGAIN) && (!x.gather || r <= 0 || (size_t)r >= n)) {
			if (unlikely(f->waiters[IO_IN] != NULL) && r >= 0)
				__weft_io_baton(f, IO_IN);
			return r;
		}
	}
	r = __weft_io_run_from(fd, f, IO_IN, true, -2, recv_try, &x, &edges);
	if (flags == 0)
		__weft_io_read_done(f, r, n, edges);      /* f reset if closed meanwhile: no mark */
	return (r == -EAGAIN || r == -EINTR) && x.done ? (long)x.done : r;
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	ON_VP_OR(io_sys6(SYS_recvfrom, fd, buf, n, flags, 0, 0));
	WEFT_CALL();
	return io_ret(do_recvfrom(fd, buf, n, flags, NULL, NULL));
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		__chk_fail();
	ON_VP_OR(io_sys6(SYS_recvfrom, fd, buf, n, flags, 0, 0));
	WEFT_CALL();
	return io_ret(do_recvfrom(fd, buf, n, flags, NULL, NULL));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	ON_VP_OR(io_sys6(SYS_recvfrom, fd, buf, n, flags, addr, alen));
	WEFT_CALL();
	return io_ret(do_recvfrom(fd, buf, n, flags, addr, alen));
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
			      socklen_t *alen)
{
	if (n > buflen)
		__chk_fail();
	ON_VP_OR(io_sys6(SYS_recvfrom, fd, buf, n, flags, addr, alen));
	WEFT_CALL();
	return io_ret(do_recvfrom(fd, buf, n, flags, addr, alen));
}

/* ---- recvmsg, recvmmsg ---- */

struct rmsg_ctx {
	struct msghdr *msg;
	int flags;
};

static long rmsg_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)b;
	struct rmsg_ctx *x = c;
	/* the try without the runtime lock under M:N (io.h, io_try6) */
	return nowait ? io_try6(SYS_recvmsg, fd, x->msg, x->flags | MSG_DONTWAIT, 0, 0, 0)
		      : io_sys3(SYS_recvmsg, fd, x->msg, x->flags);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ON_VP_OR(io_sys3(SYS_recvmsg, fd, msg, flags));
	WEFT_CALL();
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS)
		return io_ret(io_sys3(SYS_recvmsg, fd, msg, flags));
	struct rmsg_ctx x = { msg, flags };
	uint16_t edges = f->edges;                /* before the try: io.h, io_try6 */
	long r = rmsg_try(fd, &x, NULL, true);
	if (likely(r != -EAGAIN)) {
		if (unlikely(f->waiters[IO_IN] != NULL) && r >= 0)
			__weft_io_baton(f, IO_IN);
		return io_ret(r);
	}
	return io_ret(__weft_io_run_from(fd, f, IO_IN, true, -2, rmsg_try, &x, &edges));
}

struct rmm_ctx {
	struct mmsghdr *vec;
	unsigned vlen, done;
	int flags;
	struct timespec *tmo;
	int64_t until;                 /* the timeout as a deadline (-1: none) */
};

/* Blocking recvmmsg: wait for the first datagram, then go on until vlen
 * (or, MSG_WAITFORONE, return what is there); the timeout is looked at
 * once a datagram has come, as the kernel does. */
static long rmm_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	struct rmm_ctx *x = c;
	if (!nowait)
		return io_sys5(SYS_recvmmsg, fd, x->vec + x->done, x->vlen - x->done, x->flags, x->tmo);
	for (;;) {
		/* the tries without the runtime lock under M:N (io.h, io_try6) */
		long r = io_try6(SYS_recvmmsg, fd, x->vec + x->done, x->vlen - x->done,
				 (x->flags & ~MSG_WAITFORONE) | MSG_DONTWAIT, NULL, 0);
		if (r > 0) {
			x->done += (unsigned)r;
			if (x->done == x->vlen || (x->flags & MSG_WAITFORONE) ||
			    (x->until >= 0 && __weft_now() >= x->until))
				return x->done;
			if (b && x->until >= 0 && (b->deadline < 0 || x->until < b->deadline))
				b->deadline = x->until;
			continue;
		}
		if (r == -EAGAIN)
			return (x->done && (x->flags & MSG_WAITFORONE)) ? (long)x->done : -EAGAIN;
		return x->done ? (long)x->done : r;
	}
}

EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags, struct timespec *tmo)
{
	ON_VP_OR(io_sys5(SYS_recvmmsg, fd, vec, vlen, flags, tmo));
	WEFT_CALL();
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS || vlen == 0)
		return (int)io_ret(io_sys5(SYS_recvmmsg, fd, vec, vlen, flags, tmo));
	int64_t until = -1;
	if (tmo && __weft_rel_deadline(tmo, &until) != 0)
		return (int)io_ret(-EINVAL);
	struct rmm_ctx x = { vec, vlen, 0, flags, tmo, until };
	uint16_t edges = f->edges;                /* before the try: io.h, io_try6 */
	long r = rmm_try(fd, &x, NULL, true);
	if (r != -EAGAIN) {
		if (unlikely(f->waiters[IO_IN] != NULL) && r >= 0)
			__weft_io_baton(f, IO_IN);
		return (int)io_ret(r);
	}
	r = __weft_io_run_from(fd, f, IO_IN, true, x.done && until >= 0 ? until : -2, rmm_try, &x, &edges);
	return (int)io_ret((r == -EAGAIN || r == -EINTR) && x.done ? (long)x.done : r);
}

/* ---- send, sendto ---- */

struct send_ctx {
	const char *buf;
	size_t n, done;
	int flags;
	const struct sockaddr *addr;
	socklen_t alen;
	bool stream;
};

static long send_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)b;
	struct send_ctx *x = c;
	for (;;) {
		/* the try without the runtime lock under M:N (io.h, io_try6) */
		long r = nowait ? io_try6(SYS_sendto, fd, x->buf + x->done, x->n - x->done, x->flags | MSG_DONTWAIT,
					  x->addr, x->alen)
				: io_sys6(SYS_sendto, fd, x->buf + x->done, x->n - x->done, x->flags, x->addr, x->alen);
		if (r < 0)
			return r == -EAGAIN || !x->done ? r : (long)x->done;
		x->done += (size_t)r;
		if (!x->stream || x->done >= x->n || !nowait)
			return (long)x->done;
	}
}

static long do_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS)
		return io_sys6(SYS_sendto, fd, buf, n, flags, addr, alen);
	uint16_t edges = f->edges;                /* before the try: io.h, io_try6 */
	long r = io_try6(SYS_sendto, fd, buf, n, flags | MSG_DONTWAIT, addr, alen);
	if (likely(r >= 0 ? (size_t)r >= n || f->kind != K_STREAM : r != -EAGAIN))
		return r;
	struct send_ctx x = { buf, n, r > 0 ? (size_t)r : 0, flags, addr, alen, f->kind == K_STREAM };
	r = __weft_io_run_from(fd, f, IO_OUT, false, -2, send_try, &x, &edges);
	return (r == -EAGAIN || r == -EINTR) && x.done ? (long)x.done : r;
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	ON_VP_OR(io_sys6(SYS_sendto, fd, buf, n, flags, 0, 0));
	WEFT_CALL();
	return io_ret(do_sendto(fd, buf, n, flags, NULL, 0));
}

EXPORT ssize_t __send(int fd, const void *buf, size_t n, int flags) IO_ALIAS(send);

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
	ON_VP_OR(io_sys6(SYS_sendto, fd, buf, n, flags, addr, alen));
	WEFT_CALL();
	return io_ret(do_sendto(fd, buf, n, flags, addr, alen));
}

/* ---- sendmsg, sendmmsg ---- */

#define IOV_REST_MAX 64

struct smsg_ctx {
	const struct msghdr *msg;
	size_t total, done;
	int flags;
	bool stream;
};

static long smsg_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)b;
	struct smsg_ctx *x = c;
	for (;;) {
		struct msghdr m = *x->msg;
		struct iovec rest[IOV_REST_MAX];
		if (x->done) {
			/* the rest of a stream's message; its ancillary data went with the first piece */
			size_t skip = x->done;
			int i = 0, n = 0;
			while (i < (int)m.msg_iovlen && skip >= m.msg_iov[i].iov_len)
				skip -= m.msg_iov[i++].iov_len;
			for (; i < (int)m.msg_iovlen && n < IOV_REST_MAX; i++, n++) {
				rest[n] = m.msg_iov[i];
				if (n == 0) {
					rest[0].iov_base = (char *)rest[0].iov_base + skip;
					rest[0].iov_len -= skip;
				}
			}
			m.msg_iov = rest;
			m.msg_iovlen = (size_t)n;
			m.msg_control = NULL;
			m.msg_controllen = 0;
		}
		/* the try without the runtime lock under M:N (io.h, io_try6) */
		long r = nowait ? io_try6(SYS_sendmsg, fd, &m, x->flags | MSG_DONTWAIT, 0, 0, 0)
				: io_sys3(SYS_sendmsg, fd, &m, x->flags);
		if (r < 0)
			return r == -EAGAIN || !x->done ? r : (long)x->done;
		x->done += (size_t)r;
		if (!x->stream || x->done >= x->total || !nowait)
			return (long)x->done;
	}
}

static size_t msg_total(const struct msghdr *m)
{
	size_t t = 0;
	for (size_t i = 0; m->msg_iov && i < m->msg_iovlen; i++)
		t += m->msg_iov[i].iov_len;
	return t;
}

/* A blocking sendmsg whose first `done` bytes are sent (0: none): wait for
 * room and send the rest, as the kernel's blocking call would (a stream's
 * message goes whole unless a signal or an error cuts it short).  edges:
 * the descriptor's edge count before the caller's try, which was made
 * without the runtime lock (io.h, io_try6). */
static long sendmsg_rest(int fd, struct io_fd *f, const struct msghdr *msg, int flags, size_t done,
			 uint16_t *edges)
{
	struct smsg_ctx x = { msg, msg_total(msg), done, flags, f->kind == K_STREAM };
	long r = __weft_io_run_from(fd, f, IO_OUT, false, -2, smsg_try, &x, edges);
	return (r == -EAGAIN || r == -EINTR) && x.done ? (long)x.done : r;
}

static long do_sendmsg(int fd, struct io_fd *f, const struct msghdr *msg, int flags)
{
	uint16_t edges = f->edges;                /* before the try: io.h, io_try6 */
	long r = io_try6(SYS_sendmsg, fd, msg, flags | MSG_DONTWAIT, 0, 0, 0);
	if (r >= 0 && f->kind != K_STREAM)
		return r;
	size_t total = r > 0 ? msg_total(msg) : 0;
	if (likely(r >= 0 ? (size_t)r >= total : r != -EAGAIN))
		return r;
	return sendmsg_rest(fd, f, msg, flags, r > 0 ? (size_t)r : 0, &edges);
}

/* Descriptors sent with SCM_RIGHTS are shared with the receiver from now. */
static void note_sent(const struct msghdr *m)
{
	if (!m || !m->msg_control || m->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *d = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int sent;
			memcpy(&sent, d + i * sizeof(int), sizeof sent);
			__weft_io_fd_sent(sent);
		}
	}
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ON_VP_OR(io_sys3(SYS_sendmsg, fd, msg, flags));
	WEFT_CALL();
	__weft_io_testcancel();
	note_sent(msg);
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS)
		return io_ret(io_sys3(SYS_sendmsg, fd, msg, flags));
	return io_ret(do_sendmsg(fd, f, msg, flags));
}

EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	ON_VP_OR(io_sys4(SYS_sendmmsg, fd, vec, vlen, flags));
	WEFT_CALL();
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	for (unsigned i = 0; vec && i < vlen; i++)
		note_sent(&vec[i].msg_hdr);
	if (unlikely(!f) || (flags & MSG_DONTWAIT) || f->kind == K_PASS || vlen == 0)
		return (int)io_ret(io_sys4(SYS_sendmmsg, fd, vec, vlen, flags));
	uint16_t edges = f->edges;                /* before the try: io.h, io_try6 */
	long r = io_try6(SYS_sendmmsg, fd, vec, vlen, flags | MSG_DONTWAIT, 0, 0);
	if (r < 0 && r != -EAGAIN)
		return (int)io_ret(r);
	unsigned done = r > 0 ? (unsigned)r : 0;
	/* a stream's last message may have gone in part (the room ran out
	 * mid-message): a blocking call would have sent the rest of it */
	if (done && f->kind == K_STREAM) {
		struct mmsghdr *last = &vec[done - 1];
		size_t total = msg_total(&last->msg_hdr);
		if (last->msg_len < total) {
			long s = sendmsg_rest(fd, f, &last->msg_hdr, flags, last->msg_len, &edges);
			if (s > 0)
				last->msg_len = (unsigned)s;
			if (s < 0 || (size_t)s < total)
				return (int)done;   /* cut short: the count so far */
		}
	}
	/* the rest one at a time, each as a blocking sendmsg (the kernel's
	 * sendmmsg is a loop of them too) */
	while (done < vlen) {
		long s = do_sendmsg(fd, f, &vec[done].msg_hdr, flags);
		if (s < 0)
			return done ? (int)done : (int)io_ret(s);
		vec[done++].msg_len = (unsigned)s;
		if (f->kind == K_STREAM && (size_t)s < msg_total(&vec[done - 1].msg_hdr))
			break;                    /* interrupted part-way */
	}
	return (int)done;
}

/* ---- accept, accept4 ---- */

struct acc_ctx {
	struct sockaddr *addr;
	socklen_t *alen;
	int flags;
};

static long acc_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)b;
	struct acc_ctx *x = c;
	if (nowait && !__weft_io_ready_now(fd, POLLIN))
		return -EAGAIN;
	/* takeable: it blocks if another process that shares the listener
	 * took the connection since the poll (the file's comment) */
	return io_take6(SYS_accept4, fd, x->addr, x->alen, x->flags, 0, 0);
}

static long do_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	long r;
	if (unlikely(!f) || f->kind == K_PASS || __weft_io_nonblock(fd, f)) {
		r = io_sys4(SYS_accept4, fd, addr, alen, flags);
	} else {
		struct acc_ctx x = { addr, alen, flags };
		r = acc_try(fd, &x, NULL, true);
		if (r == -EAGAIN)
			r = __weft_io_run(fd, f, IO_IN, true, -2, acc_try, &x);
		else if (unlikely(f->waiters[IO_IN] != NULL) && r >= 0)
			__weft_io_baton(f, IO_IN);
	}
	if (r >= 0) {
		__weft_io_fd_born((int)r, f && f->kind == K_NOWAIT ? K_NOWAIT : K_STREAM, true, flags & SOCK_NONBLOCK);
		if (f && (f->drain & D_TCP))
			__weft_io_fd_set_drain((int)r, D_TCP | D_SHORT_DRAINS);
		/* the kernel copies the listener's SO_RCVTIMEO / SO_SNDTIMEO */
		struct io_fd *n = __weft_io_fd_peek((int)r);
		if (n && f && (f->flags & F_TMO_KNOWN)) {
			n->rcvtimeo_ms = f->rcvtimeo_ms;
			n->sndtimeo_ms = f->sndtimeo_ms;
		} else if (n) {
			n->flags &= (uint8_t)~F_TMO_KNOWN;
		}
	}
	return r;
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	ON_VP_OR(io_sys4(SYS_accept4, fd, addr, alen, 0));
	WEFT_CALL();
	return (int)io_ret(do_accept4(fd, addr, alen, 0));
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	ON_VP_OR(io_sys4(SYS_accept4, fd, addr, alen, flags));
	WEFT_CALL();
	return (int)io_ret(do_accept4(fd, addr, alen, flags));
}

/* ---- connect ---- */

/* Whether a connection in progress has ended: 0 (connected), -errno
 * (failed), or -EAGAIN (still going). */
static long conn_try(int fd, void *c, struct io_blk *b, bool nowait)
{
	(void)c;
	(void)b;
	(void)nowait;
	if (!__weft_io_ready_now(fd, POLLOUT))
		return -EAGAIN;
	int err = 0;
	socklen_t len = sizeof err;
	long r = io_sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return r < 0 ? r : -err;
}

static long do_connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	__weft_io_testcancel();
	struct io_fd *f = __weft_io_fd(fd);
	if (unlikely(!f) || f->kind == K_PASS || !(f->flags & F_SOCKET) || __weft_io_nonblock(fd, f) ||
	    __weft_io_must_block() || !__weft_io_fd_local(f))
		return io_take3(SYS_connect, fd, addr, alen);  /* shared with another process: docs/io.md */
	long fl = io_sys2(SYS_fcntl, fd, F_GETFL);
	if (fl < 0)
		return fl;
	/* O_NONBLOCK for this one system call only (sock.c's comment) */
	io_sys3(SYS_fcntl, fd, F_SETFL, fl | O_NONBLOCK);
	long r = io_sys3(SYS_connect, fd, addr, alen);
	io_sys3(SYS_fcntl, fd, F_SETFL, fl);
	if (r == -EAGAIN) {
		/* a Unix socket's listener has a full backlog: a blocking
		 * connect would wait for room; wait and try again */
		int64_t back = 1000000;
		while (r == -EAGAIN) {
			struct io_waiter w = { 0 };
			w.deadline = __weft_now() + back;
			w.cancel_point = 1;
			if (__weft_io_wait(&w) == IO_SIGNALED)
				return -EINTR;
			if (back < 64000000)
				back *= 2;
			io_sys3(SYS_fcntl, fd, F_SETFL, fl | O_NONBLOCK);
			r = io_sys3(SYS_connect, fd, addr, alen);
			io_sys3(SYS_fcntl, fd, F_SETFL, fl);
		}
	}
	if (r != -EINPROGRESS)
		return r;
	r = __weft_io_run(fd, f, IO_OUT, false, -2, conn_try, NULL);
	return r == -EAGAIN ? -EINPROGRESS : r;       /* SO_SNDTIMEO: as Linux */
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	ON_VP_OR(io_sys3(SYS_connect, fd, addr, alen));
	WEFT_CALL();
	return (int)io_ret(do_connect(fd, addr, alen));
}

EXPORT int __connect(int fd, const struct sockaddr *addr, socklen_t alen) IO_ALIAS(connect);

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	long r = io_sys5(SYS_setsockopt, fd, level, name, val, len);
	if (r == 0 && level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO) && __weft_io_on_vp())
		__weft_io_timeouts_changed(fd);
	return (int)io_ret(r);
}
