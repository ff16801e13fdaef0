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
 */
#include "posix.h"

#include <signal.h>
#include <string.h>

/* glibc exports these; its headers declare them only in some modes. */
int __sigsuspend(const sigset_t *mask);
int __sigpause(int sig_or_mask, int is_sig);
int __xpg_sigpause(int sig);

/* Internal halves: each exported call below runs WEFT_CALL exactly once
 * (the epilogue), so one never calls another. */
static int set_mask(int how, const sigset_t *set, sigset_t *old)
{
	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
		return EINVAL;
	return __weft_sig_setmask(how, set, old);
}

static int fail(int e)
{
	errno = e;
	return -1;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	__weft_ensure();
	WEFT_CALL();
	return set_mask(how, set, old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	__weft_ensure();
	WEFT_CALL();
	int e = set_mask(how, set, old);
	return e ? fail(e) : 0;
}

static int mask_one(int how, int sig)
{
	if (sig < 1 || sig >= NSIG)
		return fail(EINVAL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	int e = set_mask(how, &one, NULL);
	return e ? fail(e) : 0;
}

EXPORT int sighold(int sig)
{
	__weft_ensure();
	WEFT_CALL();
	return mask_one(SIG_BLOCK, sig);
}

EXPORT int sigrelse(int sig)
{
	__weft_ensure();
	WEFT_CALL();
	return mask_one(SIG_UNBLOCK, sig);
}

EXPORT int sigpending(sigset_t *set)
{
	__weft_ensure();
	WEFT_CALL();
	if (!set)
		return fail(EFAULT);
	__weft_sig_pending(set);
	return 0;
}

EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	__weft_ensure();
	WEFT_CALL();
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

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	__weft_ensure();
	WEFT_CALL();
	return wait_for(set, info, timeout, true);
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	__weft_ensure();
	WEFT_CALL();
	return wait_for(set, info, NULL, true);
}

/* POSIX: sigwait returns an error number and is never interrupted. */
EXPORT int sigwait(const sigset_t *set, int *sig)
{
	__weft_ensure();
	WEFT_CALL();
	int r = wait_for(set, NULL, NULL, false);
	if (r < 0)
		return errno;
	if (sig)
		*sig = r;
	return 0;
}

static int suspend(const sigset_t *mask)
{
	if (!mask)
		return fail(EFAULT);
	__weft_testcancel();
	if (__weft_sig_suspend(mask) == ECANCELED)
		__weft_cancel_act();
	return fail(EINTR);
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	__weft_ensure();
	WEFT_CALL();
	return suspend(mask);
}

EXPORT int __sigsuspend(const sigset_t *mask)
{
	__weft_ensure();
	WEFT_CALL();
	return suspend(mask);
}

/* BSD's (is_sig 0: a mask of the first 32 signals) and X/Open's (is_sig
 * 1: the caller's mask without that signal) sigpause. */
static int sig_pause(int sig_or_mask, int is_sig)
{
	sigset_t m;
	if (is_sig) {
		if (sig_or_mask < 1 || sig_or_mask >= NSIG)
			return fail(EINVAL);
		__weft_sig_setmask(SIG_BLOCK, NULL, &m);
		sigdelset(&m, sig_or_mask);
	} else {
		sigemptyset(&m);
		for (int s = 1; s < 32; s++)
			if ((unsigned)sig_or_mask & (1u << (s - 1)))
				sigaddset(&m, s);
	}
	return suspend(&m);
}

EXPORT int __sigpause(int sig_or_mask, int is_sig)
{
	__weft_ensure();
	WEFT_CALL();
	return sig_pause(sig_or_mask, is_sig);
}

EXPORT int __xpg_sigpause(int sig)
{
	__weft_ensure();
	WEFT_CALL();
	return sig_pause(sig, 1);
}

/* <signal.h> renames sigpause to __xpg_sigpause for X/Open programs; the
 * plain name is BSD's, for binaries that call it. */
int __weft_bsd_sigpause(int mask) __asm__("sigpause");
EXPORT int __weft_bsd_sigpause(int mask)
{
	__weft_ensure();
	WEFT_CALL();
	return sig_pause(mask, 0);
}
