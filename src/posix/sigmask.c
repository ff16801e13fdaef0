/*
 * sigmask.c — the calls that read or change a thread's signal state, or
 * wait for a signal: pthread_sigmask, sigprocmask, sighold, sigrelse,
 * sigpending, sigaltstack, sigwait, sigwaitinfo, sigtimedwait, sigsuspend,
 * sigpause.
 *
 * Owns: POSIX's argument checks and return conventions for each.  The
 * masks, pending sets and waits are the runtime's (runtime/sigdeliver.c):
 * each UT has its own, as each NPTL thread has, and a wait parks only its
 * caller.  sigprocmask is per thread, as glibc's is.  The waits are
 * cancellation points.
 *
 * A kernel thread that is not a UT's (a foreign thread, Weft's monitor, a
 * sanitizer's runtime before Weft starts) has its own kernel mask, pending
 * set and altstack: these calls are the kernel's there, by system call,
 * and so they are before Weft has started.
 * sigaltstack never runs the epilogue: AddressSanitizer calls it while it
 * unwinds (from the epilogue's own cancel, for one).
 */
#include "posix.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include "../arch/arch.h"

/* glibc exports these; its headers declare them only in some modes. */
int __sigsuspend(const sigset_t *mask);
int __sigpause(int sig_or_mask, int is_sig);
int __xpg_sigpause(int sig);

/* Is the caller a kernel thread without a UT (these calls are then the
 * kernel's)?  A UT's kernel thread away from the VP is a UT's: WEFT_CALL
 * brings it back first. */
static bool kernel_side(void)
{
	/* before start-up the kernel's state is the only one (start-up
	 * takes main's mask from it); starting Weft from here would start it
	 * inside a sanitizer's own start-up */
	if (!__weft_started)
		return true;
	enum weft_where w = __weft_where(__weft_vp());
	return w == WHERE_FOREIGN || w == WHERE_NONE;
}

static long ksys(long nr, long a, long b, long c, long d)
{
	return __weft_raw_syscall6(nr, a, b, c, d, 0, 0);
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static int kret(long r)
{
	return r < 0 ? fail((int)-r) : (int)r;
}

/* Internal halves: each exported call below runs WEFT_CALL exactly once
 * (the epilogue), so one never calls another. */
static int set_mask(int how, const sigset_t *set, sigset_t *old)
{
	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
		return EINVAL;
	return __weft_sig_setmask(how, set, old);
}

/* The kernel's, as glibc's pthread_sigmask: its own two signals are never
 * blocked. */
static int kset_mask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	if (set) {
		copy = *set;
		sigdelset(&copy, 32);
		sigdelset(&copy, 33);
		set = &copy;
	}
	long r = ksys(SYS_rt_sigprocmask, how, (long)set, (long)old, 8);
	return r < 0 ? (int)-r : 0;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (kernel_side())
		return kset_mask(how, set, old);
	WEFT_CALL();
	return set_mask(how, set, old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (kernel_side()) {
		int e = kset_mask(how, set, old);
		return e ? fail(e) : 0;
	}
	WEFT_CALL();
	int e = set_mask(how, set, old);
	return e ? fail(e) : 0;
}

static int mask_one(int how, int sig, bool kernel)
{
	if (sig < 1 || sig >= NSIG)
		return fail(EINVAL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	int e = kernel ? kset_mask(how, &one, NULL) : set_mask(how, &one, NULL);
	return e ? fail(e) : 0;
}

EXPORT int sighold(int sig)
{
	if (kernel_side())
		return mask_one(SIG_BLOCK, sig, true);
	WEFT_CALL();
	return mask_one(SIG_BLOCK, sig, false);
}

EXPORT int sigrelse(int sig)
{
	if (kernel_side())
		return mask_one(SIG_UNBLOCK, sig, true);
	WEFT_CALL();
	return mask_one(SIG_UNBLOCK, sig, false);
}

EXPORT int sigpending(sigset_t *set)
{
	if (!set)
		return fail(EFAULT);
	if (kernel_side())
		return kret(ksys(SYS_rt_sigpending, (long)set, 8, 0, 0));
	WEFT_CALL();
	__weft_sig_pending(set);
	return 0;
}

/* No WEFT_CALL: it never switches, and sanitizers call it at any moment. */
EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	if (kernel_side())
		return kret(ksys(SYS_sigaltstack, (long)ss, (long)old, 0, 0));
	int e = __weft_sig_altstack(ss, old);
	return e ? fail(e) : 0;
}

/* The wait itself: the signal number, or -1 with errno. */
static int wait_for(const sigset_t *set, siginfo_t *info, const struct timespec *timeout, bool eintr)
{
	if (!set)
		return fail(EFAULT);
	int64_t deadline = -1;
	if (timeout) {
		if (timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000 || timeout->tv_sec < 0)
			return fail(EINVAL);
		int e = __weft_rel_deadline(timeout, &deadline);
		if (e)
			return fail(e);
	}
	__weft_testcancel();
	int r = __weft_sig_wait(set, info, deadline, eintr);
	if (r == -ECANCELED)
		__weft_cancel_act();
	return r < 0 ? fail(-r) : r;
}

static int kwait_for(const sigset_t *set, siginfo_t *info, const struct timespec *timeout, bool eintr)
{
	for (;;) {
		long r = ksys(SYS_rt_sigtimedwait, (long)set, (long)info, (long)timeout, 8);
		if (r != -EINTR || eintr)
			return kret(r);
	}
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	if (kernel_side())
		return kwait_for(set, info, timeout, true);
	WEFT_CALL();
	return wait_for(set, info, timeout, true);
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	if (kernel_side())
		return kwait_for(set, info, NULL, true);
	WEFT_CALL();
	return wait_for(set, info, NULL, true);
}

/* POSIX: sigwait returns an error number and is never interrupted. */
EXPORT int sigwait(const sigset_t *set, int *sig)
{
	int r;
	if (kernel_side()) {
		r = kwait_for(set, NULL, NULL, false);
	} else {
		WEFT_CALL();
		r = wait_for(set, NULL, NULL, false);
	}
	if (r < 0)
		return errno;
	if (sig)
		*sig = r;
	return 0;
}

static int suspend(const sigset_t *mask, bool kernel)
{
	if (!mask)
		return fail(EFAULT);
	if (kernel)
		return kret(ksys(SYS_rt_sigsuspend, (long)mask, 8, 0, 0));
	__weft_testcancel();
	if (__weft_sig_suspend(mask) == ECANCELED)
		__weft_cancel_act();
	return fail(EINTR);
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	if (kernel_side())
		return suspend(mask, true);
	WEFT_CALL();
	return suspend(mask, false);
}

EXPORT int __sigsuspend(const sigset_t *mask)
{
	if (kernel_side())
		return suspend(mask, true);
	WEFT_CALL();
	return suspend(mask, false);
}

/* BSD's (is_sig 0: a mask of the first 32 signals) and X/Open's (is_sig
 * 1: the caller's mask without that signal) sigpause. */
static int sig_pause(int sig_or_mask, int is_sig, bool kernel)
{
	sigset_t m;
	if (is_sig) {
		if (sig_or_mask < 1 || sig_or_mask >= NSIG)
			return fail(EINVAL);
		if (kernel)
			kset_mask(SIG_BLOCK, NULL, &m);
		else
			__weft_sig_setmask(SIG_BLOCK, NULL, &m);
		sigdelset(&m, sig_or_mask);
	} else {
		sigemptyset(&m);
		for (int s = 1; s < 32; s++)
			if ((unsigned)sig_or_mask & (1u << (s - 1)))
				sigaddset(&m, s);
	}
	return suspend(&m, kernel);
}

EXPORT int __sigpause(int sig_or_mask, int is_sig)
{
	if (kernel_side())
		return sig_pause(sig_or_mask, is_sig, true);
	WEFT_CALL();
	return sig_pause(sig_or_mask, is_sig, false);
}

EXPORT int __xpg_sigpause(int sig)
{
	if (kernel_side())
		return sig_pause(sig, 1, true);
	WEFT_CALL();
	return sig_pause(sig, 1, false);
}

/* <signal.h> renames sigpause to __xpg_sigpause for X/Open programs; the
 * plain name is BSD's, for binaries that call it. */
int __weft_bsd_sigpause(int mask) __asm__("sigpause");
EXPORT int __weft_bsd_sigpause(int mask)
{
	if (kernel_side())
		return sig_pause(mask, 0, true);
	WEFT_CALL();
	return sig_pause(mask, 0, false);
}
