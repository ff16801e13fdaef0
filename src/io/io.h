/*
 * io.h — the io layer's internal interface (nothing here is exported).
 *
 * The io layer makes the calls that can block on a descriptor block only
 * their caller (Marovich's wrapped calls, Xthreads' I/O): a wrapped call
 * first tries the operation without blocking, and if it would block, parks
 * the calling UT on the descriptor; the poller (poller.c, the epoll backend
 * behind the contract in poller.h) unparks it when the descriptor is ready,
 * and the call tries again.  Other UTs run meanwhile; the process sleeps in
 * the kernel only when no UT can run, in the poller (runtime/sched.c's idle
 * loop).  The layer calls the runtime (park/unpark, deadlines, timers, the
 * epilogue, the hook table for cancellation) and nothing above it.
 *
 * Files: fd.c (the descriptor table and the calls that create, copy, close
 * or change descriptors), wait.c (parking on descriptors: records, the
 * baton, signals, cancellation), poller.c (epoll, the idle hook, the poll
 * quantum), rw.c (read/write and their vector and positional forms),
 * sock.c (the socket calls), poll.c (poll/ppoll/select/pselect/epoll_wait),
 * child.c (wait/waitpid/wait3/wait4/waitid), splice.c (sendfile, splice,
 * tee).  docs/io.md describes the design for users and reviewers.
 *
 * The program's view of a descriptor never changes: Weft never sets
 * O_NONBLOCK on an open file description (which other processes may share).
 * It uses per-call non-blocking forms instead: RWF_NOWAIT (preadv2 /
 * pwritev2 with offset -1) for read/write on sockets, pipes and the other
 * files that support it, MSG_DONTWAIT for the socket calls; where the kernel
 * has no such form (ttys, accept, sendfile, splice ends that are not pipes)
 * it waits for readiness and then makes the ordinary call, which cannot
 * block unless another process takes the data first.  connect is the one
 * exception: O_NONBLOCK is set for the duration of the one connect system
 * call and cleared at once (there is no other way to start a connection
 * without waiting for it).
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include "../runtime/rt.h"
#include "../arch/arch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>

/* ---- glibc's other exported names for the wrapped calls (no header
 * declares them unless _FORTIFY_SOURCE asks) ---- */
struct pollfd;
struct sockaddr;
struct timespec;
ssize_t __read(int fd, void *buf, size_t n);
ssize_t __write(int fd, const void *buf, size_t n);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen);
ssize_t __send(int fd, const void *buf, size_t n, int flags);
int __connect(int fd, const struct sockaddr *addr, socklen_t alen);
int __poll(struct pollfd *fds, unsigned long n, int timeout);
int __poll_chk(struct pollfd *fds, unsigned long n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, unsigned long n, const struct timespec *ts, const sigset_t *mask,
		size_t fdslen);
int __select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv);
int __close(int fd);
int __dup2(int oldfd, int newfd);
int __fcntl(int fd, int cmd, ...);
int __pipe(int fds[2]);
pid_t __wait(int *status);
pid_t __waitpid(pid_t pid, int *status, int options);

/* ---- raw system calls: -errno on failure, errno untouched ---- */
#define io_sys0(nr) __weft_raw_syscall6((nr), 0, 0, 0, 0, 0, 0)
#define io_sys1(nr, a) __weft_raw_syscall6((nr), (long)(a), 0, 0, 0, 0, 0)
#define io_sys2(nr, a, b) __weft_raw_syscall6((nr), (long)(a), (long)(b), 0, 0, 0, 0)
#define io_sys3(nr, a, b, c) __weft_raw_syscall6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define io_sys4(nr, a, b, c, d) __weft_raw_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define io_sys5(nr, a, b, c, d, e) \
	__weft_raw_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define io_sys6(nr, a, b, c, d, e, f) \
	__weft_raw_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/*
 * A try that cannot block (RWF_NOWAIT, MSG_DONTWAIT), made under M:N
 * without the runtime lock (rt.h, __weft_try_syscall6), so that the VPs'
 * reads and writes overlap; M:1: io_sys*.  The descriptor's entry may
 * change meanwhile (another VP's close), so what the caller does after it
 * reads the entry again.  And the poller may take an edge for it
 * meanwhile (on another VP, under the lock), which sets f->ready with no
 * waiter to wake; the caller's next step after EAGAIN or a short write
 * clears that bit to wait (__weft_io_block), and edge-triggered epoll
 * sends no second edge: the wait would never end.  So a caller takes
 * f->edges (the poller's count, wait.c) before the try and gives it to
 * the wait (io_blk.edges), which tries again instead of waiting if it
 * moved; and a short read marks the descriptor empty only if it did not
 * (__weft_io_read_done).  Under M:1 nothing runs meanwhile and the count
 * never moves during a try.
 */
#define io_try6(nr, a, b, c, d, e, f) \
	__weft_try_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* The same at the takeable system call (runtime/monitor.c): for calls that
 * may sleep long where nothing can be polled (regular files). */
#define io_take3(nr, a, b, c) __weft_takeable_syscall6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define io_take6(nr, a, b, c, d, e, f) \
	__weft_takeable_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* Another exported name for the same function (glibc's __read, pread64, ...). */
#define IO_ALIAS(target) __attribute__((alias(#target), copy(target)))

/* A raw result as the C library returns it: -1 and errno, or the value. */
static inline long io_ret(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- the descriptor table (fd.c) ----
 * One entry per descriptor number the program has used with a wrapped call,
 * in pages mapped on demand (never malloc: wrapped calls run in signal
 * handlers).  Rules:
 *   - gen changes whenever the number is closed or reused through a wrapped
 *     call; the poller's registration carries (gen, fd), so an event for a
 *     descriptor that was closed since is recognised and dropped.
 *   - kind says how the descriptor is made to not block (below); K_UNKNOWN
 *     until first used, then classified once with fstat (descriptors made
 *     by wrapped calls — socket, accept, pipe, dup — are classified at birth).
 *   - nonblock is the program's own O_NONBLOCK, valid while flags_epoch
 *     equals the table's epoch (every F_SETFL / FIONBIO on a descriptor
 *     that may share its open file description bumps the epoch, so entries
 *     that share it re-read the flag, lazily, on the would-block path).
 *   - registered: the descriptor is in the poller (edge-triggered, both
 *     directions) under this gen; ready: an edge was seen since the last
 *     time the direction would have blocked (IO_READY_*); hup: the poller
 *     reported hang-up or error, which stays.
 *   - waiters[dir]: the records of UTs parked on it (wait.c).
 * A descriptor closed or reused behind Weft's back (a close inside the C
 * library, fclose of an fdopen'd socket) keeps a stale entry until a
 * wrapped call reuses its number: see docs/io.md, Limits. */
enum io_kind {
	K_UNKNOWN = 0,
	K_PASS,       /* regular file, directory, block device: the plain call (the next issue's) */
	K_STREAM,     /* stream socket, pipe, FIFO: RWF_NOWAIT / MSG_DONTWAIT; a short read drains */
	K_NOWAIT,     /* other socket, eventfd, timerfd, char devices: per-call non-blocking */
};

enum { IO_IN = 0, IO_OUT = 1 };
#define IO_READY_IN 1u
#define IO_READY_OUT 2u

/* entry flags */
#define F_NONBLOCK 0x01u        /* the program's O_NONBLOCK (valid with flags_epoch) */
#define F_REGISTERED 0x02u      /* in the poller under gen */
#define F_HUP 0x04u             /* the poller saw hang-up or error: never skip a read */
#define F_SOCKET 0x08u          /* a socket (the MSG_* calls, SO_*TIMEO apply) */
#define F_POLLONLY_IN 0x10u     /* no RWF_NOWAIT for reading: poll, then read */
#define F_POLLONLY_OUT 0x20u    /* no RWF_NOWAIT for writing: poll, then write */
#define F_TMO_KNOWN 0x40u       /* rcvtimeo/sndtimeo read from the socket */
#define F_UNPOLLABLE 0x80u      /* the poller refused it (EPERM): the plain call */

struct io_rec;

struct io_fd {
	uint32_t gen;
	uint32_t flags_epoch;
	uint8_t kind;                 /* enum io_kind */
	uint8_t flags;                /* F_* */
	uint8_t ready;                /* IO_READY_* */
	uint8_t misc;                 /* fd.c's: private, local (never shared with another process), a hidden dup */
	uint8_t drain;                /* D_*: what a short read says (below) */
	uint16_t edges;               /* the poller's events for it, counted (wrapping):
				       * a try made without the runtime lock (M:N, io_try6)
				       * sees whether one came meanwhile */
	int32_t rcvtimeo_ms, sndtimeo_ms;   /* SO_RCVTIMEO / SO_SNDTIMEO (F_TMO_KNOWN), 0: none */
	struct io_rec *waiters[2];    /* circular lists, oldest first */
};

/* drain: a read that returns less than it asked for has emptied the
 * descriptor — true of TCP sockets (but at an urgent-data mark: a
 * priority event clears D_SHORT_DRAINS for good) and of pipes that are not
 * in packet mode; not of Unix stream sockets (a read stops where file
 * descriptors or other credentials come) or datagrams.  Set only for
 * descriptors Weft saw made (socket, accept, pipe), since a file's
 * history decides it.  A registered descriptor whose last read was short
 * has no data until the poller says so (an edge after the read, which
 * edge-triggered epoll reports), so the next blocking read parks at once
 * instead of making a system call that would say EAGAIN (rw.c, sock.c).
 * D_TCP marks a TCP socket, so that what accept returns is one too. */
#define D_SHORT_DRAINS 0x01u
#define D_TCP 0x02u

/* The entry of fd, or NULL if fd is out of the table's range (then the
 * caller makes the plain call).  Classified: never K_UNKNOWN. */
struct io_fd *__weft_io_fd(int fd) HIDDEN;
/* The entry without classifying or allocating (NULL if none yet). */
struct io_fd *__weft_io_fd_peek(int fd) HIDDEN;
/* A descriptor was just made by a wrapped call (socket, accept, pipe, ...):
 * a fresh entry of that kind. */
void __weft_io_fd_born(int fd, enum io_kind kind, bool socket, bool nonblock) HIDDEN;
/* A descriptor just born is one whose short reads drain it (D_*). */
void __weft_io_fd_set_drain(int fd, unsigned drain) HIDDEN;
/* fd now refers to what `from` refers to (dup2, F_DUPFD). */
void __weft_io_fd_copy(int fd, int from) HIDDEN;
/* fd is about to be closed: drop it from the poller, hand its waiters a
 * hidden duplicate (so they wait on the file, as Linux's blocked calls do),
 * forget it.  false: fd is Weft's own (the poller's), which the program
 * cannot close. */
bool __weft_io_fd_closing(int fd) HIDDEN;
/* The program's O_NONBLOCK on f (re-read once per epoch change). */
bool __weft_io_nonblock(int fd, struct io_fd *f) HIDDEN;
/* SO_RCVTIMEO (dir IN) or SO_SNDTIMEO (OUT) of a socket, as a deadline
 * from now; -1 when none. */
int64_t __weft_io_sock_deadline(int fd, struct io_fd *f, int dir) HIDDEN;
/* O_NONBLOCK changed on fd's open file description. */
void __weft_io_flags_changed(int fd, bool nonblock) HIDDEN;
/* In a forked child: every registration and waiter belongs to the parent,
 * and every description is shared with it. */
void __weft_io_fd_after_fork(void) HIDDEN;
/* In the parent after a fork: every description is shared with the child. */
void __weft_io_fd_after_fork_parent(void) HIDDEN;
/* No other process shares f's open file description (made here by a
 * wrapped call since the last fork, never sent): a change to its status
 * flags is seen by no one else. */
bool __weft_io_fd_local(const struct io_fd *f) HIDDEN;
/* fd was sent to another process (SCM_RIGHTS). */
void __weft_io_fd_sent(int fd) HIDDEN;
/* Is fd one of Weft's own descriptors (the poller's, a hidden dup)? */
bool __weft_io_fd_is_weft(int fd) HIDDEN;
/* Duplicate fd to a number of Weft's own (close-on-exec, above the numbers
 * programs use): the new number, or -errno. */
int __weft_io_hide_fd(int fd) HIDDEN;
/* A call that waited on fd, a hidden duplicate of a descriptor closed
 * meanwhile, is done with it: the last one closes it. */
void __weft_io_orphan_done(int fd) HIDDEN;
/* SO_RCVTIMEO or SO_SNDTIMEO was set on fd. */
void __weft_io_timeouts_changed(int fd) HIDDEN;

/* ---- waiting on descriptors (wait.c) ----
 * A UT that must wait fills one io_waiter and one io_rec per (descriptor,
 * direction) it waits on, all on its own stack, and parks on no runtime
 * queue; the poller walks the descriptor's records to find whom to wake.
 * Records of "consuming" calls (read, accept, recv, epoll_wait: what one
 * takes the next cannot) are woken one at a time, oldest first: the woken
 * one, when it took something, passes the baton to the next (wait.c);
 * records of poll and select, which take nothing, are all woken. */
struct io_waiter;

struct io_rec {
	struct io_rec *next, *prev;   /* on the descriptor's list for dir */
	struct io_waiter *w;
	int fd;                       /* the descriptor the wait uses (a hidden dup after a close) */
	uint32_t gen;                 /* fd's gen when linked */
	uint8_t dir;                  /* IO_IN / IO_OUT */
	uint8_t linked;
	uint32_t tag;                 /* the caller's (poll, select: the number it was given) */
};

/* How a wait ended (io_wait's result). */
enum io_wake {
	IO_WOKEN = 0,        /* readiness (or a reason to look again): try the call again */
	IO_TIMEDOUT,         /* the caller's deadline passed */
	IO_SIGNALED,         /* a signal handler ran for this UT: EINTR, or restart */
	IO_CANCELED,         /* a cancel request, left to a cancel_late caller to act on */
};

struct io_waiter {
	struct io_waiter *next, *prev;   /* the poller's list of parked waiters, oldest first */
	struct ut *ut;
	struct io_rec *recs;
	unsigned nrecs;
	int64_t deadline;              /* the caller's own (-1: none) */
	int signo;                     /* the signal that interrupted it (0: not known) */
	int64_t backoff_ns;            /* polling a descriptor the poller refused: the interval */
	int64_t own_until;             /* the timer it parked with, before any poll quantum (-1: none) */
	int64_t quantum_at;            /* when its poll quantum expires (valid while quantum) */
	uint8_t consuming;
	uint8_t cancel_point;          /* POSIX lists the call as a cancellation point */
	uint8_t cancel_late;           /* the caller has things to undo first: a request
					* comes back as IO_CANCELED, and the caller acts on it */
	uint8_t quantum;               /* holds the poller's poll quantum (a timer of its own) */
};

/* Park the caller on w's records until one is ready, the deadline passes,
 * a signal is meant for it, or (a cancellation point) a cancel request
 * comes — which is acted on here, after the records are unlinked, or (with
 * cancel_late) returned as IO_CANCELED for the caller to act on.  The
 * records' fds are registered with the poller first; one that cannot be
 * registered makes the wait a poll at growing intervals. */
enum io_wake __weft_io_wait(struct io_waiter *w) HIDDEN;
/* Wait for one direction of one descriptor (the common case).  *fd may
 * come back changed: another UT closed it meanwhile, and the wait went on
 * on a hidden duplicate (fd.c), on which the caller completes its call and
 * which it hands to __weft_io_orphan_done when it returns. */
enum io_wake __weft_io_wait1(int *fd, int dir, int64_t deadline, bool consuming, bool cancel_point,
			     int *signo) HIDDEN;
/*
 * The slow path every single-descriptor call shares.  A call tries its
 * operation without blocking; when that says EAGAIN it asks
 * __weft_io_block what to do, and tries again on IO_RETRY:
 *   IO_RETRY       woken (readiness, or a signal to look at once more)
 *   IO_RET_EAGAIN  the program asked for O_NONBLOCK, or the deadline
 *                  (SO_RCVTIMEO / SO_SNDTIMEO, or the call's own) passed
 *   IO_RET_BLOCK   waiting here is impossible (a handler over protected
 *                  code; a descriptor the poller refuses): make the
 *                  ordinary blocking call
 *   IO_RET_EINTR   a signal handler ran for this UT and the call is not
 *                  to be restarted (no SA_RESTART, a socket timeout set,
 *                  or a call POSIX never restarts)
 * A call that moved some bytes before IO_RET_EAGAIN / IO_RET_EINTR returns
 * that count instead, as Linux does.  __weft_io_block_end is called once
 * the call is done (it releases a hidden duplicate, fd.c).
 */
enum { IO_RETRY = 0, IO_RET_EAGAIN, IO_RET_BLOCK, IO_RET_EINTR };

struct io_blk {
	int fd;                        /* the descriptor used: the program's, or a hidden dup */
	int orig_fd;
	struct io_fd *f;
	int64_t deadline;              /* -2: not computed yet; -1: none */
	int signaled;                  /* 1 + the signal that woke it (0: none) */
	uint8_t dir;
	uint8_t consuming;
	uint8_t cancel_point;
	uint8_t restartable;           /* SA_RESTART restarts it (no socket timeout set) */
	uint8_t sock_timeout;          /* SO_RCVTIMEO / SO_SNDTIMEO apply (dir picks which) */
	uint16_t edges;                /* f->edges before the caller's last try: one that came
					* since (a try made without the runtime lock, io_try6)
					* makes the next block try again, not wait */
};

static inline void __weft_io_blk_init(struct io_blk *b, int fd, struct io_fd *f, int dir, bool consuming)
{
	b->fd = b->orig_fd = fd;
	b->f = f;
	b->deadline = -2;
	b->signaled = 0;
	b->dir = (uint8_t)dir;
	b->consuming = consuming;
	b->cancel_point = 1;
	b->restartable = 1;
	b->sock_timeout = 1;
	b->edges = f->edges;
}
int __weft_io_block(struct io_blk *b) HIDDEN;
static inline void __weft_io_block_end(struct io_blk *b)
{
	if (unlikely(b->fd != b->orig_fd))
		__weft_io_orphan_done(b->fd);
}

/* The whole slow path for calls whose attempt is one function: try(fd,
 * ctx, nowait) makes the call (nowait: without blocking, -EAGAIN when it
 * would); __weft_io_run retries it as __weft_io_block says and returns its
 * final result (-EAGAIN / -EINTR as the block said; a call that counts
 * partial progress keeps it in ctx).  deadline: the wait's (-2: the
 * socket's SO_RCVTIMEO or SO_SNDTIMEO); try may move b->deadline. */
typedef long (*io_try_fn)(int fd, void *ctx, struct io_blk *b, bool nowait);
long __weft_io_run(int fd, struct io_fd *f, int dir, bool consuming, int64_t deadline, io_try_fn try,
		   void *ctx) HIDDEN;
/* The same after a first try the caller made with the descriptor's edge
 * count *edges before it (io_blk.edges: a try made without the runtime
 * lock may have missed an edge, io_try6); *edges is left the count before
 * the last try made here (for __weft_io_read_done). */
long __weft_io_run_from(int fd, struct io_fd *f, int dir, bool consuming, int64_t deadline, io_try_fn try,
			void *ctx, uint16_t *edges) HIDDEN;

/* After a consuming call took something (or failed for good) on fd: if
 * other consuming waiters wait on that direction, wake the oldest, which
 * tries again (there may be more). */
void __weft_io_baton(struct io_fd *f, int dir) HIDDEN;
/* Should a call interrupted by signal `signo` (0: not known) be restarted
 * (SA_RESTART)?  Calls POSIX never restarts do not ask. */
bool __weft_io_restart(int signo) HIDDEN;
/* Wake every waiter of f (both directions) to look again, and detach
 * their records from f. */
void __weft_io_wake_fd(struct io_fd *f) HIDDEN;
/* Move a linked record from `from` to `to` (descriptor number tofd). */
void __weft_io_rec_move(struct io_rec *r, struct io_fd *from, struct io_fd *to, int tofd) HIDDEN;

/* ---- the poller (poller.c) ---- */
/* Register fd (edge-triggered, both directions) if it is not yet: 0, or
 * -errno (-EPERM: fd cannot be polled; it never blocks). */
int __weft_io_register(int fd, struct io_fd *f) HIDDEN;
/* Drop fd from the poller (before it is closed). */
void __weft_io_unregister(int fd, struct io_fd *f) HIDDEN;
/* An event on (gen, fd): mark readiness, wake its waiters. */
void __weft_io_event(int fd, uint32_t gen, uint32_t events) HIDDEN;
/* Look for readiness without sleeping (a waiter holding the poll quantum). */
void __weft_io_poll_now(void) HIDDEN;
/* The parked waiters, for the poll quantum and for signals. */
void __weft_io_waiter_add(struct io_waiter *w) HIDDEN;
void __weft_io_waiter_del(struct io_waiter *w) HIDDEN;
/* fd is one of the poller's own descriptors (the epoll instance, the wake
 * eventfd). */
bool __weft_io_poller_owns(int fd) HIDDEN;
/* child.c's descriptor of Weft's own (the family's tracing counter), and
 * its move out of the way of a dup2 onto its number. */
bool __weft_io_child_owns(int fd) HIDDEN;
void __weft_io_child_move(int fd) HIDDEN;
/* Move the poller's descriptor away from fd (the program dup2s onto it). */
void __weft_io_poller_move(int fd) HIDDEN;
/* How many forks this process came out of as the child: a waiter that
 * parked under another count is a copy of a parent's UT (poller.c). */
/* A new child process may exist: waiters for "any child" look again. */
void __weft_io_children_changed(void) HIDDEN;
/* waitpid(pid, status, 0) without an exported call's entry and epilogue:
 * posix/system.c's wait for its shell, inside system()'s own call.  Parks
 * only the caller; a cancellation point.  The pid, or -errno. */
long __weft_io_waitpid(pid_t pid, int *status) HIDDEN;

/* ---- shared helpers ---- */
/* Program signals the dispatcher has seen (Weft's tick is not one). */
static inline uint64_t __weft_io_caught(void)
{
	return __weft_vp()->async.caught;
}
/* A system call that cannot block (a zero timeout, a probe) said EINTR:
 * was it Weft's tick?  Then it is made again — the program never sees an
 * EINTR the tick caused.  A program signal (caught moved) keeps its EINTR. */
#define IO_NO_TICK_EINTR(call)                                                    \
	({                                                                        \
		uint64_t io_c0_ = __weft_io_caught();                              \
		long io_r_;                                                       \
		do                                                                \
			io_r_ = (call);                                           \
		while (unlikely(io_r_ == -EINTR) && __weft_io_caught() == io_c0_); \
		io_r_;                                                            \
	})
/* Is fd ready for `events` now (a zero-timeout poll)?  An error the call
 * will report counts as ready; EINTR never does. */
static inline bool __weft_io_ready_now(int fd, short events)
{
	struct pollfd p = { fd, events, 0 };
	long r;
	do
		r = __weft_raw_syscall6(SYS_poll, (long)&p, 1, 0, 0, 0, 0);
	while (r == -EINTR);
	return r != 0;
}
/* True on the kernel thread that runs UTs (others make the plain call). */
static inline bool __weft_io_on_vp(void)
{
	__weft_ensure();
	return __weft_on_vp_thread(__weft_vp());
}
/* A program's signal handler runs over protected code, or the caller is
 * not RUNNING (a handler run by the idle loop): no UT may switch, so a
 * wrapped call blocks in the kernel as a kernel thread's would. */
static inline bool __weft_io_must_block(void)
{
	struct vp *vp = __weft_vp();
	return unlikely(vp->noswitch_set) && (vp->cur->state != UT_RUNNING || __weft_noswitch(vp));
}
/* A deadline `ms` milliseconds from now (poll, epoll_wait; < 0: none). */
int64_t __weft_io_ms_deadline(int ms) HIDDEN;
/* A blocking read of `want` bytes on f may park without trying: its last
 * read was short and no edge came since (D_SHORT_DRAINS). */
static inline bool __weft_io_known_empty(int fd, struct io_fd *f)
{
	return (f->drain & D_SHORT_DRAINS) && !(f->ready & IO_READY_IN) &&
	       (f->flags & (F_REGISTERED | F_HUP)) == F_REGISTERED && !__weft_io_nonblock(fd, f);
}
/* A read of `want` bytes on f returned r: a short one empties it — unless
 * an edge came since the read began (`edges`, f->edges then: a read made
 * without the runtime lock, io_try6), which says more data came after. */
static inline void __weft_io_read_done(struct io_fd *f, long r, size_t want, uint16_t edges)
{
	if ((f->drain & D_SHORT_DRAINS) && r > 0 && (size_t)r < want && f->edges == edges)
		f->ready &= (uint8_t)~IO_READY_IN;
}

/* The caller's pending cancel, at a cancellation point's entry. */
static inline void __weft_io_testcancel(void)
{
	__weft_testcancel();
}

#endif
