/*
 * points.c — the cancellation points among calls Weft otherwise leaves to
 * the kernel: open, openat, creat (and their 64 and fortified forms),
 * msync, tcdrain, mq_send, mq_receive, mq_timedsend, mq_timedreceive.
 *
 * Owns nothing but these entry points.  Each is glibc's call made as one
 * raw system call through __weft_takeable_cancellable (runtime/handoff.c):
 *   - a request pending on entry acts before anything is done (POSIX:
 *     the call has no effect);
 *   - the call is made on the carrier with no handoff, since it usually
 *     completes at once (open of a file, msync of clean pages); one that
 *     blocks (open of a FIFO, tcdrain of a slow tty, a full or empty
 *     message queue) is taken off the VP by the monitor like any unknown
 *     blocking call, so only its caller waits;
 *   - a request sent while it waits, on the VP or off it, ends the call
 *     with EINTR and acts; a call that completed is never undone.
 * Results and errno are glibc's: the same system call with the same
 * arguments (tcdrain is ioctl TCSBRK 1, as glibc makes it; the message
 * queue calls are mq_timedsend and mq_timedreceive with or without a
 * timeout).  A kernel thread Weft did not make gets the plain call.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

static long ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The call, cancellable on a UT, plain on a kernel thread Weft did not make. */
static long point(const struct weft_call *c, long nr, long a0, long a1, long a2, long a3, long a4)
{
	const long a[6] = { a0, a1, a2, a3, a4, 0 };
	if (!c->on_vp)
		return ret(__weft_raw_syscall6(nr, a0, a1, a2, a3, a4, 0));
	return ret(__weft_takeable_cancellable(nr, a));
}

/* open's third argument exists only when the flags create a file. */
static mode_t open_mode(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, mode_t);
	return 0;
}

/* Inlined into each exported form: WEFT_CALL's epilogue looks at the
 * exported function's return address (a call from a sanitizer's runtime
 * acts on nothing deferred: rt.h, __weft_epilogue_from). */
static inline __attribute__((always_inline)) int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	__weft_ensure();
	WEFT_CALL();
	return (int)point(&__weft_call, SYS_openat, dirfd, (long)path, flags, mode, 0);
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}

EXPORT int creat(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

/* The 64 forms are the same calls on x86-64 (the kernel forces
 * O_LARGEFILE on a 64-bit process). */
#define SAME_AS(target) __attribute__((alias(#target), copy(target)))
EXPORT int open64(const char *path, int flags, ...) SAME_AS(open);
EXPORT int openat64(int dirfd, const char *path, int flags, ...) SAME_AS(openat);
EXPORT int creat64(const char *path, mode_t mode) SAME_AS(creat);

/* _FORTIFY_SOURCE's forms, for a call without a mode: one that creates a
 * file without a mode is a bug glibc stops the program for, as here. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
static inline __attribute__((always_inline)) int fortified(int dirfd, const char *path, int flags)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		__weft_die("invalid open call: O_CREAT or O_TMPFILE without mode");
	return do_openat(dirfd, path, flags, 0);
}

EXPORT int __open_2(const char *path, int flags)
{
	return fortified(AT_FDCWD, path, flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return fortified(dirfd, path, flags);
}

EXPORT int __open64_2(const char *path, int flags) SAME_AS(__open_2);
EXPORT int __openat64_2(int dirfd, const char *path, int flags) SAME_AS(__openat_2);

EXPORT int msync(void *addr, size_t len, int flags)
{
	__weft_ensure();
	WEFT_CALL();
	return (int)point(&__weft_call, SYS_msync, (long)addr, (long)len, flags, 0, 0);
}

EXPORT int tcdrain(int fd)
{
	__weft_ensure();
	WEFT_CALL();
	return (int)point(&__weft_call, SYS_ioctl, fd, TCSBRK, 1, 0, 0);
}

static inline __attribute__((always_inline)) int mq_send_at(mqd_t q, const char *msg, size_t len, unsigned prio,
							     const struct timespec *abs)
{
	__weft_ensure();
	WEFT_CALL();
	return (int)point(&__weft_call, SYS_mq_timedsend, q, (long)msg, (long)len, prio, (long)abs);
}

EXPORT int mq_timedsend(mqd_t q, const char *msg, size_t len, unsigned prio, const struct timespec *abs)
{
	return mq_send_at(q, msg, len, prio, abs);
}

EXPORT int mq_send(mqd_t q, const char *msg, size_t len, unsigned prio)
{
	return mq_send_at(q, msg, len, prio, NULL);
}

static inline __attribute__((always_inline)) ssize_t mq_receive_at(mqd_t q, char *msg, size_t len, unsigned *prio,
								    const struct timespec *abs)
{
	__weft_ensure();
	WEFT_CALL();
	return point(&__weft_call, SYS_mq_timedreceive, q, (long)msg, (long)len, (long)prio, (long)abs);
}

EXPORT ssize_t mq_timedreceive(mqd_t q, char *msg, size_t len, unsigned *prio, const struct timespec *abs)
{
	return mq_receive_at(q, msg, len, prio, abs);
}

EXPORT ssize_t mq_receive(mqd_t q, char *msg, size_t len, unsigned *prio)
{
	return mq_receive_at(q, msg, len, prio, NULL);
}
