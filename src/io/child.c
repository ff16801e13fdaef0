/*
 * child.c — wait, waitpid, wait3, wait4, waitid (and __wait, __waitpid):
 * waiting for a child parks only the caller.
 *
 * A child's end is a descriptor event: a pidfd becomes readable when its
 * process exits.  So each call first asks the kernel with WNOHANG (one
 * system call when a child is already done); if nothing is, it opens a
 * pidfd for the child it waits for — or for each child of every kernel
 * thread of the process, read from /proc/self/task/<tid>/children, when it
 * waits for any child or a process group (the UT that forked may have run
 * on another kernel thread: under M:N, or after a hand-off) — and parks on
 * them, then asks again.  Stops and continues (WUNTRACED, WCONTINUED) make
 * no pidfd event, and a child made meanwhile by posix_spawn has no pidfd in
 * the set: those waits, and every wait for any child, also look again at
 * growing intervals (10 ms to 200 ms); a fork() by another UT wakes a wait
 * for any child at once.  Cancellation points; a signal handler run for the
 * waiting UT makes it look once more, then EINTR unless SA_RESTART.  A
 * cancelled wait closes its pidfds and leaves the list of any-child waiters
 * before it unwinds: the list would otherwise point into a frame gone.
 * Also posix/system.c's wait for its shell (__weft_io_waitpid): the same
 * wait, inside that call.
 *
 * Stops the waiter must hear of at once are the kernel's own blocking wait,
 * made in the blocking bracket, kept on the VP (runtime/handoff.c), where
 * the program's signals still interrupt it: every wait of a process that
 * may be a tracer, for which wait reports each ptrace stop of a tracee
 * whatever the options (strace, gdb: a pidfd wait never woke for them, and
 * `strace true` under Weft waited forever), and every wait of a UT that
 * is alone (a shell's; beside other UTs it keeps the pidfd, and a
 * WUNTRACED one its looks: exact_wait says why).  A process may
 * be a tracer (for good: the runtime's pinned carriers) once it has called ptrace (the wrapper
 * here), or once a child it forked has asked to be traced: PTRACE_TRACEME
 * makes the parent the tracer before the parent calls anything, and the
 * parent may already be parked on the child's pidfd.  So the first fork
 * makes an eventfd the children inherit (trace_efd, close-on-exec, a
 * hidden number); a child's PTRACE_TRACEME adds 1 to it first, and every
 * parked wait of the family watches it: once it is readable, the waiter
 * pins the carriers and asks again, in the bracket.  A vfork child's
 * PTRACE_TRACEME pins the parent's itself (one memory).
 */
#include "io.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define MAX_PIDFDS 32
#define LOOK_MIN_NS 10000000ll
#define LOOK_MAX_NS 200000000ll

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* The family's "a child asked to be traced" counter: made by the first
 * fork's prepare handler (on the forking kernel thread, a CAS against a
 * second forking VP), inherited by every child forked since, closed by
 * exec.  -1 until then. */
static int trace_efd = -1;

/* This process may trace a child: its waits are the kernel's own (above).
 * The runtime's pinned carriers are that fact (rt.h: the tracer is the
 * kernel thread that carries the VP, kept from then on); a late reader
 * only makes one more pidfd wait, which trace_efd or the tracee's own
 * call ends. */
static bool may_trace(void)
{
	return __atomic_load_n(&__weft_carriers_pinned, __ATOMIC_RELAXED);
}

/* A descriptor of Weft's own just opened: moved above the program's
 * numbers (fd.c), and its number returned. */
static int hidden(long fd)
{
	int h = __weft_io_hide_fd((int)fd);
	if (h < 0)
		return (int)fd;
	io_sys1(SYS_close, fd);
	return h;
}

/* pthread_atfork's prepare: the family's counter, before the first child. */
static void trace_prepare(void)
{
	if (__atomic_load_n(&trace_efd, __ATOMIC_ACQUIRE) >= 0)
		return;
	long e = io_sys2(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e < 0)
		return;                   /* then a TRACEME child's parent learns at its first ptrace */
	int fd = hidden(e);
	int none = -1;
	if (!__atomic_compare_exchange_n(&trace_efd, &none, fd, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		io_sys1(SYS_close, fd);
}

__attribute__((constructor(102))) static void trace_atfork(void)
{
	pthread_atfork(trace_prepare, NULL, NULL);
}

/* trace_efd is Weft's own, as the poller's descriptors are (fd.c): the
 * program's close, close_range and closefrom leave it, and a dup2 onto
 * its number moves it first.  Else a program that closes every
 * descriptor above 2 lost it, and a later file of the program's that
 * got its number would be watched as the family's counter, and written
 * to by a child's PTRACE_TRACEME. */
bool __weft_io_child_owns(int fd)
{
	return fd >= 0 && fd == __atomic_load_n(&trace_efd, __ATOMIC_ACQUIRE);
}

void __weft_io_child_move(int fd)
{
	if (!__weft_io_child_owns(fd))
		return;
	long d = io_sys3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd + 1);
	if (d < 0)
		d = __weft_io_hide_fd(fd);
	if (d < 0)
		return;                   /* the dup2 takes the number; the counter is lost */
	__weft_io_fd_born((int)d, K_NOWAIT, false, false);
	__atomic_store_n(&trace_efd, (int)d, __ATOMIC_RELEASE);
}

/* trace_efd has been added to: some child of the family asked to be
 * traced.  One poll, made only when a parked wait woke. */
static bool trace_asked(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec zero = { 0, 0 };
	return io_sys5(SYS_ppoll, &p, 1, &zero, 0, 0) == 1 && (p.revents & POLLIN);
}

/* ptrace, as glibc's: the PEEK requests return the word read (errno 0). */
EXPORT long ptrace(enum __ptrace_request req, ...)
{
	va_list ap;
	va_start(ap, req);
	pid_t pid = va_arg(ap, pid_t);
	void *addr = va_arg(ap, void *);
	void *data = va_arg(ap, void *);
	va_end(ap);
	bool peek = req == PTRACE_PEEKTEXT || req == PTRACE_PEEKDATA || req == PTRACE_PEEKUSER;
	long word = 0;
	if (peek)
		data = &word;
	__weft_pin_carriers();            /* the tracer is this kernel thread: keep it */
	if (req == PTRACE_TRACEME) {
		/* tell the parent before it can see a stop of ours */
		int fd = __atomic_load_n(&trace_efd, __ATOMIC_ACQUIRE);
		if (fd >= 0) {
			uint64_t one = 1;
			io_sys3(SYS_write, fd, &one, sizeof one);
		}
	}
	long r = __weft_raw_syscall6(SYS_ptrace, req, pid, (long)addr, (long)data, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	if (peek) {
		errno = 0;
		return word;
	}
	return r;
}

/* UTs waiting for "any child": a fork wakes them. */
static struct io_waiter *any_waiters[64];
static unsigned n_any;

void __weft_io_children_changed(void)
{
	for (unsigned i = 0; i < n_any; i++) {
		struct ut *t = any_waiters[i]->ut;
		if (t && t->state == UT_BLOCKED)
			__weft_unpark_nopreempt(t, 0);
	}
}

static int pidfd_for(pid_t pid)
{
	long p = io_sys2(SYS_pidfd_open, pid, 0);
	if (p < 0)
		return -1;
	int fd = hidden(p);
	__weft_io_fd_born(fd, K_NOWAIT, false, false);
	return fd;
}

static void pidfd_drop(int fd)
{
	__weft_io_fd_closing(fd);
	io_sys1(SYS_close, fd);
}

/* Add pidfds for the children listed in /proc/self/task/<tid>/children
 * to fds[*k]; false if the list could not be read whole or a pidfd not be
 * opened. */
static bool task_children(const char *tid, int *fds, int *k)
{
	char path[64] = "/proc/self/task/";
	size_t n0 = strlen(path), tl = strlen(tid);
	if (n0 + tl + sizeof "/children" > sizeof path)
		return false;
	memcpy(path + n0, tid, tl);
	memcpy(path + n0 + tl, "/children", sizeof "/children");
	long d = io_sys4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (d < 0)
		return false;
	char buf[4096];
	long n = io_sys3(SYS_read, d, buf, sizeof buf - 1);
	io_sys1(SYS_close, d);
	if (n < 0)
		return false;
	buf[n] = 0;
	bool all = n < (long)sizeof buf - 1;
	for (char *p = buf; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (*k == MAX_PIDFDS)
			return false;
		long pid = 0;
		while (*p >= '0' && *p <= '9')
			pid = pid * 10 + (*p++ - '0');
		int fd = pidfd_for((pid_t)pid);
		if (fd >= 0)
			fds[(*k)++] = fd;
		else
			all = false;
	}
	return all;
}

/* pidfds for the children of every kernel thread of the process (a wait
 * for any child takes a child of any of them, and under M:N, or after a
 * hand-off, the UT that forked may have run on another kernel thread than
 * the waiter's); how many.  *all: every child is in the set. */
static int children_pidfds(int *fds, bool *all)
{
	int k = 0;
	*all = false;
	long d = io_sys4(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (d < 0)
		return 0;
	bool whole = true;
	char buf[4096];
	for (;;) {
		long n = io_sys3(SYS_getdents64, d, buf, sizeof buf);
		if (n <= 0) {
			whole = whole && n == 0;
			break;
		}
		for (long off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *e = (void *)(buf + off);
			off += e->reclen;
			if (e->name[0] < '0' || e->name[0] > '9')
				continue;
			if (!task_children(e->name, fds, &k))
				whole = false;
		}
	}
	io_sys1(SYS_close, d);
	*all = whole;
	return k;
}

/* Park until a child may have changed state (or a signal: *signo). */
static enum io_wake wait_children(idtype_t type, id_t id, int options, int64_t *look, int *signo)
{
	int fds[MAX_PIDFDS];
	int k = 0;
	bool all = false;
	if (type == P_PID) {
		int fd = pidfd_for((pid_t)id);
		if (fd >= 0) {
			fds[k++] = fd;
			all = true;
		}
	} else if (type == P_PIDFD) {
		struct io_fd *f = __weft_io_fd((int)id);
		all = f != NULL;
	} else {
		k = children_pidfds(fds, &all);
	}
	struct io_rec recs[MAX_PIDFDS + 2];
	unsigned n = 0;
	if (type == P_PIDFD) {
		recs[n].fd = (int)id;
		recs[n++].dir = IO_IN;
	}
	for (int i = 0; i < k; i++) {
		recs[n].fd = fds[i];
		recs[n++].dir = IO_IN;
	}
	/* a child of the family that asks to be traced ends the wait (the
	 * caller then waits the kernel's way) */
	int tfd = __atomic_load_n(&trace_efd, __ATOMIC_ACQUIRE);
	if (tfd >= 0) {
		struct io_fd *tf = __weft_io_fd_peek(tfd);
		if (!tf || tf->kind == K_UNKNOWN)
			__weft_io_fd_born(tfd, K_NOWAIT, false, false);
		recs[n].fd = tfd;
		recs[n++].dir = IO_IN;
	}
	struct io_waiter w;
	memset(&w, 0, sizeof w);
	w.recs = recs;
	w.nrecs = n;
	w.cancel_point = 1;
	w.cancel_late = 1;             /* the pidfds and the any-child entry go first */
	w.deadline = -1;
	/* Look again now and then when the set may miss a child: stops and
	 * continues make no pidfd event, and a wait for any child may miss one
	 * made meanwhile without Weft's fork (posix_spawn's clone, a foreign
	 * thread's fork) between the kernel's answer and the lists read. */
	if (!all || (options & (WUNTRACED | WCONTINUED)) || (type != P_PID && type != P_PIDFD)) {
		w.deadline = __weft_now() + *look;
		*look = *look * 2 > LOOK_MAX_NS ? LOOK_MAX_NS : *look * 2;
	}
	bool any = type != P_PID && type != P_PIDFD && n_any < 64;
	if (any)
		any_waiters[n_any++] = &w;
	w.ut = __weft_self();
	enum io_wake how = __weft_io_wait(&w);
	if (any)
		for (unsigned i = 0; i < n_any; i++)
			if (any_waiters[i] == &w) {
				any_waiters[i] = any_waiters[--n_any];
				break;
			}
	for (int i = 0; i < k; i++)
		pidfd_drop(fds[i]);
	if (how == IO_CANCELED)
		__weft_hooks.cancel_act();       /* tidied: now unwind */
	if (tfd >= 0 && trace_asked(tfd))
		__weft_pin_carriers();
	*signo = w.signo;
	return how == IO_TIMEDOUT ? IO_WOKEN : how;
}

/* The kernel's own blocking wait, in the bracket, where the bracket keeps
 * the VP and the call stays interruptible by the program's signals (its
 * handlers run while it waits, runtime/handoff.c, kept_call): always for
 * a tracer (its carriers are pinned; the kernel reports each ptrace stop
 * to its wait, which a pidfd never hears), and for any wait of a UT that
 * is alone (a shell's, make's, a script's subprocess: nothing else needs
 * the VP, and the pidfd's dozen system calls made the waitpid after a
 * fork take 152 µs here, 118 without them, NPTL's 65).  Beside other UTs a wait would be handed on, and a
 * handler meant for the caller (an alarm that bounds the wait) would run
 * only when the child changed state, not end the wait with EINTR: it
 * parks on the pidfd, and a WUNTRACED or WCONTINUED one looks again now
 * and then for a stop. */
static bool exact_wait(void)
{
	if (may_trace())
		return true;
	return __atomic_load_n(&__weft_proc.live, __ATOMIC_RELAXED) < 2;
}

static long do_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	__weft_io_testcancel();
	if (options & WNOHANG)
		return io_sys4(SYS_wait4, pid, status, options, ru);
	idtype_t type = pid > 0 ? P_PID : P_ALL;
	int64_t look = LOOK_MIN_NS;
	for (;;) {
		long r = io_sys4(SYS_wait4, pid, status, options | WNOHANG, ru);
		if (r != 0)
			return r;
		if (__weft_io_must_block())
			return io_sys4(SYS_wait4, pid, status, options, ru);
		if (exact_wait()) {
			const long a[6] = { pid, (long)status, options, (long)ru };
			const struct weft_bounce b[] = { { 1, WEFT_BOUNCE_OUT, sizeof *status },
							 { 3, WEFT_BOUNCE_OUT, sizeof *ru } };
			return __weft_blocking_cancellable_b(SYS_wait4, a, b, 2);
		}
		int signo = 0;
		enum io_wake how = wait_children(type, (id_t)pid, options, &look, &signo);
		if (how == IO_SIGNALED) {
			r = io_sys4(SYS_wait4, pid, status, options | WNOHANG, ru);
			if (r != 0)
				return r;
			if (!__weft_io_restart(signo))
				return -EINTR;
		}
	}
}

EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	if (!__weft_io_on_vp())
		return (pid_t)io_ret(io_sys4(SYS_wait4, pid, status, options, ru));
	WEFT_CALL();
	return (pid_t)io_ret(do_wait4(pid, status, options, ru));
}

EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	if (!__weft_io_on_vp())
		return (pid_t)io_ret(io_sys4(SYS_wait4, pid, status, options, 0));
	WEFT_CALL();
	return (pid_t)io_ret(do_wait4(pid, status, options, NULL));
}

EXPORT pid_t __waitpid(pid_t pid, int *status, int options) IO_ALIAS(waitpid);

long __weft_io_waitpid(pid_t pid, int *status)
{
	if (!__weft_io_on_vp())
		return io_sys4(SYS_wait4, pid, status, 0, 0);
	return do_wait4(pid, status, 0, NULL);
}

EXPORT pid_t wait(int *status)
{
	if (!__weft_io_on_vp())
		return (pid_t)io_ret(io_sys4(SYS_wait4, -1, status, 0, 0));
	WEFT_CALL();
	return (pid_t)io_ret(do_wait4(-1, status, 0, NULL));
}

EXPORT pid_t __wait(int *status) IO_ALIAS(wait);

EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	if (!__weft_io_on_vp())
		return (pid_t)io_ret(io_sys4(SYS_wait4, -1, status, options, ru));
	WEFT_CALL();
	return (pid_t)io_ret(do_wait4(-1, status, options, ru));
}

static long do_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	__weft_io_testcancel();
	if (options & WNOHANG)
		return io_sys5(SYS_waitid, type, id, info, options, 0);
	int64_t look = LOOK_MIN_NS;
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		long r = io_sys5(SYS_waitid, type, id, &si, options | WNOHANG, 0);
		if (r != 0 || si.si_pid != 0) {
			if (info && r == 0)
				*info = si;
			return r;
		}
		if (__weft_io_must_block())
			return io_sys5(SYS_waitid, type, id, info, options, 0);
		if (exact_wait()) {
			const long a[6] = { type, (long)id, (long)info, options, 0 };
			const struct weft_bounce b[] = { { 2, WEFT_BOUNCE_OUT, sizeof *info } };
			return __weft_blocking_cancellable_b(SYS_waitid, a, b, 1);
		}
		int signo = 0;
		enum io_wake how = wait_children(type, id, options, &look, &signo);
		if (how == IO_SIGNALED) {
			memset(&si, 0, sizeof si);
			r = io_sys5(SYS_waitid, type, id, &si, options | WNOHANG, 0);
			if (r != 0 || si.si_pid != 0) {
				if (info && r == 0)
					*info = si;
				return r;
			}
			if (!__weft_io_restart(signo))
				return -EINTR;
		}
	}
}

EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	if (!__weft_io_on_vp())
		return (int)io_ret(io_sys5(SYS_waitid, type, id, info, options, 0));
	WEFT_CALL();
	return (int)io_ret(do_waitid(type, id, info, options));
}
