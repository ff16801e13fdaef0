/*
 * splice.c — sendfile (and sendfile64), splice, tee: moving data between
 * descriptors without it passing through the program.
 *
 * None has a per-call non-blocking form that covers both ends (splice's
 * SPLICE_F_NONBLOCK covers only the pipe), so each waits until every end
 * that can be polled is ready, then makes the ordinary call, with
 * SPLICE_F_NONBLOCK added for the pipe ends and the length cut to
 * IO_CHUNK.  An end that is not a pipe (sendfile's output, a socket
 * spliced to) may still have less room than the call would move: on a
 * descriptor no other process shares, the call runs with O_NONBLOCK set
 * for its duration, as connect does (sock.c), and says EAGAIN or a short
 * count instead of waiting; on a shared one the ordinary call is made at
 * the takeable system call (io.h), as sock.c's plain calls are.  Linux
 * returns a short count there once some room was free, so it waits only
 * when another process filled the room since the poll; then, under M:N,
 * the runtime lock is let go meanwhile, and the monitor hands the VP on if
 * the call sleeps (docs/io.md, Limits).  sendfile, which on a blocking
 * socket moves the whole count, goes on chunk by chunk until it has, or
 * the input ends, or a program's signal handler ran.  A descriptor the program made non-blocking gets
 * the ordinary call.
 * glibc does not make these cancellation points, and neither does Weft;
 * a signal handler run for the waiting UT ends them with EINTR (or the
 * count moved so far), as Linux's own do.
 */
#include "io.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#define IO_CHUNK (64 * 1024)

/* Is fd an end that can block and that the program left blocking? */
static bool waits(int fd, struct io_fd **fp)
{
	struct io_fd *f = __weft_io_fd(fd);
	*fp = f;
	return f && f->kind != K_PASS && !(f->flags & F_UNPOLLABLE) && !__weft_io_nonblock(fd, f);
}

static bool ready(int fd, short ev) { return __weft_io_ready_now(fd, ev); }

/* Wait until both ends (where they wait) are ready: IO_WOKEN when they
 * are, else how the wait ended. */
static enum io_wake both_ready(int in, bool win, int out, bool wout)
{
	for (;;) {
		struct io_rec recs[2];
		unsigned n = 0;
		if (win && !ready(in, POLLIN)) {
			recs[n].fd = in;
			recs[n++].dir = IO_IN;
		}
		if (wout && !ready(out, POLLOUT)) {
			recs[n].fd = out;
			recs[n++].dir = IO_OUT;
		}
		if (!n)
			return IO_WOKEN;
		if (__weft_io_must_block())
			return IO_WOKEN;              /* the plain call blocks as a kernel thread's would */
		struct io_waiter w = { 0 };
		w.recs = recs;
		w.nrecs = n;
		w.deadline = -1;
		enum io_wake how = __weft_io_wait(&w);
		if (how != IO_WOKEN)
			return how;
	}
}

/* O_NONBLOCK on an end for one call (nb_on, the call, nb_off): only on
 * one that waits, is not a pipe (SPLICE_F_NONBLOCK covers those) and no
 * other process shares; fl < 0 when nothing was set. */
struct nb_end {
	int fd;
	long fl;
};

static void nb_on(struct nb_end *e, int fd, struct io_fd *f, bool wait)
{
	e->fd = fd;
	e->fl = -1;
	if (!wait || !f || !__weft_io_fd_local(f) || !(f->flags & F_SOCKET) || __weft_io_must_block())
		return;
	long fl = io_sys2(SYS_fcntl, fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK))
		return;
	if (io_sys3(SYS_fcntl, fd, F_SETFL, fl | O_NONBLOCK) == 0)
		e->fl = fl;
}

static void nb_off(const struct nb_end *e)
{
	if (e->fl >= 0)
		io_sys3(SYS_fcntl, e->fd, F_SETFL, e->fl);
}

/* sendfile's regular-file input is at its end (a short count may also be
 * the output's room, or a signal: only the file's size tells). */
static bool file_at_end(int in, const off_t *off)
{
	struct stat st;
	if (io_sys2(SYS_fstat, in, &st) != 0 || !S_ISREG(st.st_mode))
		return true;                          /* not a file whose end can be told: as before */
	long pos = off ? (long)*off : io_sys3(SYS_lseek, in, 0, SEEK_CUR);
	return pos < 0 || pos >= st.st_size;
}

static long do_sendfile(int out, int in, off_t *off, size_t count)
{
	struct io_fd *fo, *fi;
	bool wout = waits(out, &fo), win = waits(in, &fi);
	if (!wout && !win)
		return io_sys4(SYS_sendfile, out, in, off, count);
	size_t done = 0;
	long r = 0;
	while (done < count) {
		enum io_wake how = both_ready(in, win, out, wout);
		if (how != IO_WOKEN) {
			r = -EINTR;
			break;
		}
		size_t n = count - done < IO_CHUNK ? count - done : IO_CHUNK;
		uint64_t caught = __weft_io_caught();
		struct nb_end e;
		nb_on(&e, out, fo, wout);
		r = e.fl >= 0 ? io_sys4(SYS_sendfile, out, in, off, n) : io_take6(SYS_sendfile, out, in, off, n, 0, 0);
		nb_off(&e);
		if (r == -EAGAIN && e.fl >= 0)
			continue;                     /* no room after all: wait for it */
		if (r <= 0)
			break;
		done += (size_t)r;
		if ((size_t)r == n)
			continue;
		/* short: the output's room (O_NONBLOCK), Weft's tick or the
		 * monitor cutting a blocked chunk, a program's handler, or the
		 * input's end */
		if (__weft_io_caught() != caught)
			break;                        /* a handler ran: the count so far, as Linux */
		if (!(fi && fi->kind != K_PASS) && file_at_end(in, off))
			break;
	}
	return done ? (long)done : r;
}

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	if (!__weft_io_on_vp())
		return io_ret(io_sys4(SYS_sendfile, out, in, off, count));
	WEFT_CALL();
	return io_ret(do_sendfile(out, in, off, count));
}

EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t count) IO_ALIAS(sendfile);

EXPORT ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len, unsigned flags)
{
	if (!__weft_io_on_vp())
		return io_ret(io_sys6(SYS_splice, in, off_in, out, off_out, len, flags));
	WEFT_CALL();
	struct io_fd *fo, *fi;
	bool win = !(flags & SPLICE_F_NONBLOCK) && waits(in, &fi);
	bool wout = !(flags & SPLICE_F_NONBLOCK) && waits(out, &fo);
	if (!win && !wout)
		return io_ret(io_sys6(SYS_splice, in, off_in, out, off_out, len, flags));
	for (;;) {
		enum io_wake how = both_ready(in, win, out, wout);
		if (how != IO_WOKEN)
			return io_ret(-EINTR);
		struct nb_end e;
		nb_on(&e, out, fo, wout);
		size_t n = len < IO_CHUNK ? len : IO_CHUNK;
		long r = e.fl >= 0 ? io_sys6(SYS_splice, in, off_in, out, off_out, n, flags | SPLICE_F_NONBLOCK)
				   : io_take6(SYS_splice, in, off_in, out, off_out, n, flags | SPLICE_F_NONBLOCK);
		nb_off(&e);
		if (r != -EAGAIN)
			return io_ret(r);
	}
}

EXPORT ssize_t tee(int in, int out, size_t len, unsigned flags)
{
	if (!__weft_io_on_vp())
		return io_ret(io_sys4(SYS_tee, in, out, len, flags));
	WEFT_CALL();
	struct io_fd *fo, *fi;
	bool win = !(flags & SPLICE_F_NONBLOCK) && waits(in, &fi);
	bool wout = !(flags & SPLICE_F_NONBLOCK) && waits(out, &fo);
	if (!win && !wout)
		return io_ret(io_sys4(SYS_tee, in, out, len, flags));
	for (;;) {
		long r = io_sys4(SYS_tee, in, out, len, flags | SPLICE_F_NONBLOCK);
		if (r != -EAGAIN)
			return io_ret(r);
		enum io_wake how = both_ready(in, win, out, wout);
		if (how != IO_WOKEN)
			return io_ret(-EINTR);
		if (!(win && !ready(in, POLLIN)) && !(wout && !ready(out, POLLOUT))) {
			/* both look ready and tee still says EAGAIN (an empty
			 * pipe reads as "ready" once its writers are gone): the
			 * plain call decides */
			return io_ret(io_sys4(SYS_tee, in, out, len, flags));
		}
	}
}
