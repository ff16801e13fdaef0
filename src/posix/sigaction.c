/*
 * sigaction.c — the calls that set a signal's action: sigaction, signal,
 * bsd_signal, sysv_signal, sigset, siginterrupt, and the longjmp family.
 *
 * Owns: glibc's semantics of each call (which flags and mask signal() and
 * friends imply).  The runtime keeps the actions and runs the handlers under
 * the signal contract (runtime/signal.c): what the program sets is what it
 * reads back.  glibc's own signal() and siginterrupt() call its internal
 * sigaction, which Weft cannot reach, hence their definitions here.
 *
 * longjmp, _longjmp, siglongjmp and __longjmp_chk are wrapped only to see a
 * signal handler leave by jumping: if it ran over protected code, its
 * "no switch" mark ends there (runtime/signal.c); the jump itself is
 * glibc's.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

/* glibc exports these but its headers no longer declare them. */
int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
__sighandler_t bsd_signal(int sig, __sighandler_t h);
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	__weft_ensure();
	return __weft_sigaction(sig, act, old);
}

EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	__weft_ensure();
	return __weft_sigaction(sig, act, old);
}

static __sighandler_t set_handler(int sig, __sighandler_t h, int flags, bool mask_self)
{
	struct sigaction act, old;
	if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof act);
	act.sa_handler = h;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (mask_self)
		sigaddset(&act.sa_mask, sig);
	__weft_ensure();
	if (__weft_sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() is BSD's: the handler stays, the signal is blocked while
 * it runs, interrupted calls restart (unless siginterrupt said otherwise,
 * which the kernel flags carry). */
EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART, true);
}

EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART, true);
}

/* System V's: one shot, not blocked while it runs, calls not restarted. */
EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
	return set_handler(sig, h, (int)(SA_RESETHAND | SA_NODEFER), false);
}

EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	return set_handler(sig, h, (int)(SA_RESETHAND | SA_NODEFER), false);
}

EXPORT int siginterrupt(int sig, int flag)
{
	struct sigaction act;
	__weft_ensure();
	if (__weft_sigaction(sig, NULL, &act) != 0)
		return -1;
	if (flag)
		act.sa_flags &= ~SA_RESTART;
	else
		act.sa_flags |= SA_RESTART;
	return __weft_sigaction(sig, &act, NULL);
}

/* SVID sigset: SIG_HOLD blocks the signal; anything else installs it and
 * unblocks it.  Returns SIG_HOLD if it was blocked, else the old action. */
EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
	sigset_t one, old;
	if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&one);
	sigaddset(&one, sig);
	struct sigaction cur;
	__weft_ensure();
	if (__weft_sigaction(sig, NULL, &cur) != 0)
		return SIG_ERR;
	if (h == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &old) != 0)
			return SIG_ERR;
		return sigismember(&old, sig) ? SIG_HOLD : cur.sa_handler;
	}
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (__weft_sigaction(sig, &act, NULL) != 0)
		return SIG_ERR;
	if (sigprocmask(SIG_UNBLOCK, &one, &old) != 0)
		return SIG_ERR;
	return sigismember(&old, sig) ? SIG_HOLD : cur.sa_handler;
}

/* ---- the longjmp family ---- */

typedef void (*jump_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));

static jump_fn real_jump(const char *name)
{
	return (jump_fn)dlsym(RTLD_NEXT, name);
}

/* Is there anything a jump could leave: a "no switch" mark (signal.c), a
 * handler frame Weft runs on the caller or a fault handler's hold
 * (sigdeliver.c)?  Almost never: the two calls below, made for every jump,
 * were 4 ns of a setjmp + longjmp pair (13.4 against glibc's 9.6). */
static inline bool jump_may_leave_handler(void)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	return vp->noswitch.sp || !self || self->sig_frames || self->sync_held;
}

#define WRAP_JUMP(name)                                                               \
	EXPORT void name(struct __jmp_buf_tag env[1], int val)                        \
	{                                                                             \
		static jump_fn real;                                                  \
		if (!real)                                                            \
			real = real_jump(#name);                                      \
		if (__weft_started && jump_may_leave_handler()) {                     \
			uintptr_t to_ = __weft_arch_jmpbuf_sp(env->__jmpbuf);         \
			__weft_noswitch_leave(to_);                                   \
			__weft_sig_longjmp(to_);                                      \
		}                                                                     \
		if (!real)                                                            \
			__weft_die("cannot find glibc's " #name);                   \
		real(env, val);                                                       \
	}

WRAP_JUMP(longjmp)
WRAP_JUMP(_longjmp)
WRAP_JUMP(siglongjmp)
WRAP_JUMP(__longjmp_chk)
