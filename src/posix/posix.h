/*
 * posix.h — the posix layer's internal interface (nothing here is exported).
 *
 * The posix layer is the top of the library: the pthread_*, sched_*, sleep
 * and signal entry points, cancellation, cleanup handlers and the ABI glue.
 * It may call the sync layer (sync.h) and the runtime (rt.h); nothing below
 * calls it except through the runtime's hook table (hooks.c).
 */
#ifndef WEFT_POSIX_H
#define WEFT_POSIX_H

#include "../sync/sync.h"

/* A raw system call's result as the C library returns it: -1 with errno
 * set, or the value. */
static inline long __weft_posix_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- cancellation (cancel.c) ---- */
/* Act on the caller's cancellation request: unwind, never return. */
void __weft_cancel_act(void) HIDDEN __attribute__((noreturn));
/* Where an armed asynchronous request may be acted on (vp->async_cancel). */
void __weft_cancel_async_point(void) HIDDEN;
/* The UT is unwinding or exiting: no request is acted on any more. */
void __weft_cancel_exiting(struct ut *self) HIDDEN;

/* ---- exit (cleanup.c) ---- */
/* pthread_exit: run cleanup handlers and C++ destructors by a forced
 * unwind of the caller's stack, then end the UT. */
void __weft_unwind_exit(void *retval) HIDDEN __attribute__((noreturn));

/* ---- sleeping (sleep.c) ---- */
/* sched_getscheduler/getparam/setparam/setscheduler by number (pthread_sched.c):
 * -errno or the result; *handled false when the kernel is to answer. */
long __weft_sched_call(long nr, long a1, long a2, long a3, bool *handled) HIDDEN;
/* A shared futex waiter's poll (futex.c; the runtime's wait_poll hook). */
int64_t __weft_futex_poll(struct ut *t, int64_t now, int *result) HIDDEN;
/* glibc's locks of the FILEs t holds by flockfile follow it to another VP's
 * identity (stdio_lock.c; the runtime's ut_rehomed hook). */
void __weft_stdio_rehomed(struct ut *t, void *old_self, void *new_self) HIDDEN;
/* The loader's lock, held by a UT inside dlopen or dlclose, follows it from
 * old_tid to new_tid (dlopen.c; the same hook). */
void __weft_loader_rehomed(pid_t old_tid, pid_t new_tid) HIDDEN;
int __weft_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem) HIDDEN;

#endif
