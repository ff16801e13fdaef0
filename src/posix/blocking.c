/*
 * blocking.c — calls that cannot be polled and may block for long: the VP
 * is handed on while the kernel holds the caller (runtime/handoff.c).
 *
 * Owns the wrappers for fsync, fdatasync, syncfs, flock, lockf, SysV
 * semop/semtimedop and msgsnd/msgrcv.  Each is the raw system call inside
 * the blocking bracket, so only its caller waits; the variants that
 * cannot block (LOCK_NB, F_TLOCK, F_TEST, IPC_NOWAIT) skip the bracket.
 * A call that has a non-blocking form is tried that way first (LOCK_NB,
 * F_SETLK, IPC_NOWAIT): one that can complete at once costs its system
 * call and no handoff.  An EINTR that only Weft's own signals can have caused (the tick, a
 * kick) is never shown to the program: the call is made again, with what
 * is left of its timeout.  errno is set after the bracket, on the kernel
 * thread that carries the VP then.  The cancellation points among them
 * (fsync, fdatasync, lockf's F_LOCK, msgsnd, msgrcv) act on a request
 * before the call and, sent while the call waits, end it with EINTR and
 * act (runtime/handoff.c, the cancellable bracket).
 */
#include "posix.h"
#include "../arch/arch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One raw call inside the bracket (runtime/handoff.c), unless it cannot block. */
static long blocking6(bool may_block, long nr, long a, long b, long c, long d, long e, long f)
{
	if (!may_block)
		return __weft_raw_syscall6(nr, a, b, c, d, e, f);
	return __weft_blocking_syscall6(nr, a, b, c, d, e, f);
}

static int result(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

EXPORT int fsync(int fd)
{
	__weft_ensure();
	WEFT_CALL();
	const long args[6] = { fd };
	return result(__weft_blocking_cancellable_b(SYS_fsync, args, NULL, 0));
}

EXPORT int fdatasync(int fd)
{
	__weft_ensure();
	WEFT_CALL();
	const long args[6] = { fd };
	return result(__weft_blocking_cancellable_b(SYS_fdatasync, args, NULL, 0));
}

EXPORT int syncfs(int fd)
{
	__weft_ensure();
	WEFT_CALL();
	return result(blocking6(true, SYS_syncfs, fd, 0, 0, 0, 0, 0));
}

EXPORT int flock(int fd, int op)
{
	__weft_ensure();
	WEFT_CALL();
	bool may_block = !(op & LOCK_NB) && !(op & LOCK_UN);
	if (may_block) {
		long r = __weft_raw_syscall6(SYS_flock, fd, op | LOCK_NB, 0, 0, 0, 0);
		if (r != -EWOULDBLOCK)
			return result(r);
	}
	return result(blocking6(may_block, SYS_flock, fd, op, 0, 0, 0, 0));
}

/* lockf is fcntl's record locks over [offset, offset + len) (glibc's
 * io/lockf64.c): F_LOCK waits, F_TLOCK does not, F_TEST asks. */
EXPORT int lockf64(int fd, int cmd, off64_t len)
{
	__weft_ensure();
	WEFT_CALL();
	struct flock64 fl = { .l_whence = SEEK_CUR, .l_start = 0, .l_len = len };
	switch (cmd) {
	case F_TEST: {
		fl.l_type = F_RDLCK;
		long r = __weft_raw_syscall6(SYS_fcntl, fd, F_GETLK, (long)&fl, 0, 0, 0);
		if (r < 0)
			return result(r);
		if (fl.l_type == F_UNLCK || fl.l_pid == getpid())
			return 0;
		errno = EACCES;
		return -1;
	}
	case F_ULOCK:
		fl.l_type = F_UNLCK;
		return result(__weft_raw_syscall6(SYS_fcntl, fd, F_SETLK, (long)&fl, 0, 0, 0));
	case F_LOCK: {
		__weft_testcancel();
		fl.l_type = F_WRLCK;
		long r = __weft_raw_syscall6(SYS_fcntl, fd, F_SETLK, (long)&fl, 0, 0, 0);
		if (r != -EAGAIN && r != -EACCES)
			return result(r);
		const long args[6] = { fd, F_SETLKW, (long)&fl };
		const struct weft_bounce b[] = { { 2, WEFT_BOUNCE_IN, sizeof fl } };
		return result(__weft_blocking_cancellable_b(SYS_fcntl, args, b, 1));
	}
	case F_TLOCK:
		fl.l_type = F_WRLCK;
		return result(__weft_raw_syscall6(SYS_fcntl, fd, F_SETLK, (long)&fl, 0, 0, 0));
	default:
		errno = EINVAL;
		return -1;
	}
}

EXPORT int lockf(int fd, int cmd, off_t len)
{
	return lockf64(fd, cmd, len);
}

/* The whole set with IPC_NOWAIT: 1 done, 0 would block, <0 an error. */
static long sem_try(int id, const struct sembuf *ops, size_t n)
{
	struct sembuf now[64];
	if (n > sizeof now / sizeof now[0])
		return 0;
	for (size_t i = 0; i < n; i++) {
		now[i] = ops[i];
		now[i].sem_flg |= IPC_NOWAIT;
	}
	long r = __weft_raw_syscall6(SYS_semtimedop, id, (long)now, (long)n, 0, 0, 0);
	return r == 0 ? 1 : r == -EAGAIN ? 0 : r;
}

static bool sem_may_block(const struct sembuf *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(ops[i].sem_flg & IPC_NOWAIT))
			return true;
	return false;
}

/* semtimedop's timeout is relative: made again after an EINTR of Weft's,
 * the call gets what is left of it. */
EXPORT int semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *timeout)
{
	__weft_ensure();
	WEFT_CALL();
	bool may_block = ops && n && sem_may_block(ops, n);
	if (may_block) {
		long r = sem_try(id, ops, n);
		if (r != 0)
			return r > 0 ? 0 : result(r);
	}
	/* the operations (and the timeout) are read as the call starts: a
	 * copy-stack caller's are copied off its stack (runtime/handoff.c) */
	if (!may_block)
		return result(__weft_raw_syscall6(SYS_semtimedop, id, (long)ops, (long)n, (long)timeout, 0, 0));
	if (!timeout) {
		const long args[6] = { id, (long)ops, (long)n };
		const struct weft_bounce b[] = { { 1, WEFT_BOUNCE_IN, n * sizeof *ops } };
		return result(__weft_blocking_syscall_b(SYS_semtimedop, args, b, 1));
	}
	int64_t deadline;
	if (timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000 || timeout->tv_sec < 0)
		return result(__weft_raw_syscall6(SYS_semtimedop, id, (long)ops, (long)n, (long)timeout, 0, 0));
	if (__weft_rel_deadline(timeout, &deadline) != 0)
		deadline = INT64_MAX;
	for (;;) {
		int64_t left = deadline - __weft_now();
		struct timespec ts = { left > 0 ? left / 1000000000 : 0, left > 0 ? left % 1000000000 : 0 };
		const long args[6] = { id, (long)ops, (long)n, (long)&ts };
		const struct weft_bounce b[] = { { 1, WEFT_BOUNCE_IN, n * sizeof *ops },
						 { 3, WEFT_BOUNCE_IN, sizeof ts } };
		bool weft;
		long r = __weft_blocking_call(SYS_semtimedop, args, b, 2, false, &weft);
		if (!weft)
			return result(r);
	}
}

EXPORT int semop(int id, struct sembuf *ops, size_t n)
{
	return semtimedop(id, ops, n, NULL);
}

EXPORT int msgsnd(int id, const void *msg, size_t size, int flags)
{
	__weft_ensure();
	WEFT_CALL();
	__weft_testcancel();
	if (!(flags & IPC_NOWAIT)) {
		long r = __weft_raw_syscall6(SYS_msgsnd, id, (long)msg, (long)size, flags | IPC_NOWAIT, 0, 0);
		if (r != -EAGAIN)
			return result(r);
	}
	if (flags & IPC_NOWAIT)
		return result(__weft_raw_syscall6(SYS_msgsnd, id, (long)msg, (long)size, flags, 0, 0));
	/* the message is read as the call starts (its type and text) */
	const long args[6] = { id, (long)msg, (long)size, flags };
	const struct weft_bounce b[] = { { 1, WEFT_BOUNCE_IN, size + sizeof(long) } };
	return result(__weft_blocking_cancellable_b(SYS_msgsnd, args, b, 1));
}

EXPORT ssize_t msgrcv(int id, void *msg, size_t size, long type, int flags)
{
	__weft_ensure();
	WEFT_CALL();
	__weft_testcancel();
	bool may_block = !(flags & IPC_NOWAIT);
	long r = __weft_raw_syscall6(SYS_msgrcv, id, (long)msg, (long)size, type, flags | IPC_NOWAIT, 0);
	if (r == -ENOMSG && may_block) {
		/* the message is written as the call returns (the copy starts
		 * as the buffer is, so bytes past the message stay) */
		const long args[6] = { id, (long)msg, (long)size, type, flags };
		const struct weft_bounce b[] = { { 1, WEFT_BOUNCE_IN | WEFT_BOUNCE_OUT, size + sizeof(long) } };
		r = __weft_blocking_cancellable_b(SYS_msgrcv, args, b, 1);
	}
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
