/*
 * signal.c — the program's signal handlers under the signal contract.
 *
 * Owns: the program's action for every signal it handles, the dispatcher
 * that the kernel calls instead of the program's handler, the VP's record of
 * signals deferred while Weft's text ran (vp->deferred), the "no switch"
 * mark (vp->noswitch), and the queue of UTs in pause().
 *
 * A program handler may run on a UT's stack in the middle of anything.  The
 * contract (docs/architecture.md) decides where it may start:
 *   - the interrupted PC is in Weft's own text: runtime state may be half
 *     changed, so the handler does not run now.  The signal is recorded on
 *     the VP and the handler runs at the next epilogue of a Weft call (or in
 *     the idle loop, when the VP was asleep in the kernel): a point where
 *     the state is whole, as Mueller's library delivers at dispatch.  Weft's
 *     code is short and never blocks outside the idle loop, so the delay is
 *     short; the kernel's EINTR for a wait Weft made itself is Weft's own.
 *   - the PC is in other protected code (libc, the loader, ...): the handler
 *     runs at once (a blocking libc call must see its EINTR after the
 *     handler ran), but with the noswitch mark set for its duration, so no
 *     UT switch happens inside it: the tick defers, the epilogue and every
 *     switch point leave a dispatch pending instead, a park waits in the
 *     kernel.  libc's state of the interrupted UT stays its own.
 *   - anywhere else (the program's code): the handler runs at once, like a
 *     call the interrupted code made; it may switch like any code.
 * So a handler never runs over half-changed runtime state, and the calls
 * POSIX lists as async-signal-safe (sem_post, pthread_kill, raise, sleep,
 * ...) are safe from any handler.
 *
 * Synchronous signals (a fault: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS), glibc's internal signals (32, 33) and SIGKILL/SIGSTOP go to the
 * kernel unchanged.  The tick's signal stays Weft's: a program handler for
 * it is recorded and run by the tick handler for signals that are not the
 * tick's own (preempt.c).
 *
 * The dump signal (WEFT_DUMP_SIGNAL) is Weft's, like the tick's: its
 * handler (on_dump) prints every UT (dump.c) where the runtime's state is
 * whole — at once when the PC is outside Weft's text, else deferred like a
 * program signal and acted on by deliver_one at the next epilogue or in the
 * idle loop.  A program's sigaction for it is recorded and reported back,
 * never installed (a JVM's SIGQUIT works the same way).
 *
 * Publication.  actions[sig] is read by the dispatcher (async) and written
 * by sigaction (mainline): each signal has two copies, the writer fills the
 * one not in use and then switches `cur` with one store; a handler that
 * interrupted the writer reads the other, complete copy.  vp->deferred is
 * written by handlers (a slot is claimed with an atomic add before it is
 * filled, so nested handlers never share one) and consumed by the mainline
 * with the program's signals blocked.  vp->noswitch is written by the
 * dispatcher (around the handler it runs) and cleared by the mainline when
 * it finds the mark stale (its handler left by longjmp).
 */
#include "rt.h"
#include "dump.h"
#include "../arch/arch.h"

#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define NSIG_ALL 65
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000   /* the kernel's; glibc keeps it to itself */
#endif

struct prog_action {
	struct sigaction a[2];
	volatile uint8_t cur;         /* a[cur] is in force */
	volatile uint8_t set;         /* the program has set an action */
};
static struct prog_action actions[NSIG_ALL];

static struct waitq pausers;

static bool synchronous(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/* Signals whose handler the dispatcher runs. */
static bool dispatched(int sig)
{
	return sig >= 1 && sig < NSIG_ALL && sig != SIGKILL && sig != SIGSTOP && !synchronous(sig) &&
	       !(sig >= __SIGRTMIN && sig < SIGRTMIN) && sig != __weft_tick_signal();
}

static const struct sigaction *action_of(int sig)
{
	const struct prog_action *p = &actions[sig];
	return &p->a[p->cur];
}

static bool is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Call the program's handler as the kernel would have. */
static void call_handler(const struct sigaction *a, int sig, siginfo_t *si, void *uc)
{
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, si, uc);
	else
		a->sa_handler(sig);
}

/* ---- no switch while a handler runs over protected code ----------------- */

/* Bottom of the stack that `sp` is on: the UT's, or an alternate one. */
static uintptr_t stack_floor(const struct ut *t, uintptr_t sp)
{
	if (t && sp > (uintptr_t)t->stack.lo && sp <= (uintptr_t)t->stack.hi)
		return (uintptr_t)t->stack.lo;
	stack_t ss;
	if (__weft_raw_syscall6(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0, 0) == 0 &&
	    !(ss.ss_flags & SS_DISABLE) && sp > (uintptr_t)ss.ss_sp && sp <= (uintptr_t)ss.ss_sp + ss.ss_size)
		return (uintptr_t)ss.ss_sp;
	return sp > (64u << 20) ? sp - (64u << 20) : 0;   /* a stack of unknown extent */
}

/* Set the mark for a handler about to run from this frame down. */
static struct vp_noswitch noswitch_enter(struct vp *vp)
{
	struct vp_noswitch saved = { vp->noswitch.lo, vp->noswitch.sp, vp->noswitch.ut };
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (!saved.sp) {
		vp->noswitch.ut = vp->cur;
		vp->noswitch.lo = stack_floor(vp->cur, here);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		vp->noswitch.sp = here;
		vp->noswitch_set = 1;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return saved;
}

static void noswitch_exit(struct vp *vp, const struct vp_noswitch *saved)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->noswitch.sp = saved->sp;
	vp->noswitch.lo = saved->lo;
	vp->noswitch.ut = saved->ut;
	vp->noswitch_set = saved->sp != 0;
}

bool __weft_noswitch_slow(struct vp *vp)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (__weft_noswitch_at(vp, sp))
		return true;
	vp->noswitch.sp = 0;          /* its handler left by longjmp */
	vp->noswitch_set = 0;
	return false;
}

void __weft_noswitch_leave(uintptr_t sp)
{
	struct vp *vp = __weft_vp();
	if (vp->noswitch.sp && vp->noswitch.ut == vp->cur && sp >= vp->noswitch.sp) {
		vp->noswitch.sp = 0;
		vp->noswitch_set = 0;
	}
}

/* ---- masks ----------------------------------------------------------------
 * The dispatcher and the tick handler run with every program signal blocked
 * (their sa_mask), so no handler of Weft's is ever interrupted by another:
 * a deferred signal's record and its blocking are made in one piece.  The
 * program's handler runs with the mask it asked for.  A signal deferred and
 * not yet delivered stays blocked in every mask Weft puts back: otherwise a
 * second instance could arrive before the first is delivered. */

static long kmask(int how, const sigset_t *set, sigset_t *old)
{
	return __weft_raw_syscall6(SYS_rt_sigprocmask, how, (long)set, (long)old, 8, 0, 0);
}

static void add_pending(sigset_t *m, uint64_t pending)
{
	for (int s = 1; s < NSIG_ALL; s++)
		if (pending & (1ull << (s - 1)))
			sigaddset(m, s);
}

/* Put `old` back, keeping deferred signals blocked. */
static void mask_restore(struct vp *vp, const sigset_t *old)
{
	sigset_t all, m = *old;
	sigfillset(&all);
	kmask(SIG_BLOCK, &all, NULL);
	add_pending(&m, vp->deferred.pending);
	kmask(SIG_SETMASK, &m, NULL);
}

/* The mask a program handler runs with: the interrupted code's, its
 * sa_mask, and the signal itself unless SA_NODEFER. */
static void handler_mask(sigset_t *m, const sigset_t *interrupted, const struct sigaction *a, int sig)
{
	*m = *interrupted;
	for (int s = 1; s < NSIG_ALL; s++)
		if (sigismember(&a->sa_mask, s))
			sigaddset(m, s);
	if (!(a->sa_flags & SA_NODEFER))
		sigaddset(m, sig);
}

/* ---- the dispatcher ------------------------------------------------------ */

static bool on_vp_thread(const struct vp *vp)
{
	return __weft_on_vp_thread(vp);
}

/* Keep sig for the next epilogue.  It stays blocked (the interrupted
 * context's mask, restored by sigreturn) until its handler has run, so the
 * kernel keeps any further instance queued: nothing is lost or merged. */
static void defer(struct vp *vp, int sig, const siginfo_t *si)
{
	struct vp_deferred *d = &vp->deferred;
	d->info[sig - 1] = *si;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d->pending |= 1ull << (sig - 1);
	vp->stat.signals_deferred++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->signals = 1;
}

/* Run the program's handler now, with its own mask; back with everything
 * blocked again, as the dispatcher runs. */
static void run_now(struct vp *vp, const struct sigaction *a, int sig, siginfo_t *si, ucontext_t *uc,
		    bool noswitch)
{
	sigset_t m, all;
	struct vp_noswitch saved;
	handler_mask(&m, &uc->uc_sigmask, a, sig);
	if (noswitch)
		saved = noswitch_enter(vp);
	kmask(SIG_SETMASK, &m, NULL);
	call_handler(a, sig, si, uc);
	sigfillset(&all);
	kmask(SIG_BLOCK, &all, NULL);
	if (noswitch)
		noswitch_exit(vp, &saved);
}

static void dispatch(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct vp *vp = __weft_vp();
	const struct sigaction *a = action_of(sig);
	if (!is_handler(a))
		return;                       /* changed meanwhile (sigaction races the signal) */
	if (!on_vp_thread(vp)) {
		/* a kernel thread Weft does not run UTs on: no Weft state */
		sigset_t m;
		handler_mask(&m, &uc->uc_sigmask, a, sig);
		kmask(SIG_SETMASK, &m, NULL);
		call_handler(a, sig, si, uc);
		return;
	}
	vp->async.caught++;
	vp->signals = 1;                      /* pause() callers return (signals_deliver) */
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	if (__weft_pc_in_weft(pc))
		defer(vp, sig, si);
	else if (__weft_pc_protected(pc) || __weft_noswitch_at(vp, sp))
		run_now(vp, a, sig, si, uc, true);
	else
		run_now(vp, a, sig, si, uc, false);
	/* whatever is deferred stays blocked in the context we return to */
	add_pending(&uc->uc_sigmask, vp->deferred.pending);
}

void __weft_signal_forward(int sig, siginfo_t *si, void *uc)
{
	if (sig >= 1 && sig < NSIG_ALL && actions[sig].set && is_handler(action_of(sig)))
		dispatch(sig, si, uc);
}

/* ---- delivery of deferred signals (mainline) ---------------------------- */

/* Run one deferred signal's handler with its mask, as the kernel would. */
static void deliver_one(struct vp *vp, int sig, siginfo_t *si)
{
	if (sig == __weft_proc.cfg.dump_signal) {
		__weft_dump_on_signal(sig, __weft_proc.cfg.dump_exit);
		return;
	}
	const struct sigaction *a = action_of(sig);
	if (!is_handler(a)) {
		if (a->sa_handler == SIG_DFL)   /* the default action, by the kernel */
			__weft_raw_syscall6(SYS_tgkill, getpid(), vp->tid, sig, 0, 0, 0);
		return;
	}
	struct sigaction copy = *a;
	sigset_t old, m;
	kmask(SIG_BLOCK, NULL, &old);
	handler_mask(&m, &old, &copy, sig);
	ucontext_t uc;
	getcontext(&uc);
	kmask(SIG_SETMASK, &m, NULL);
	if (vp->cur->state == UT_RUNNING && !__weft_noswitch(vp)) {
		uint8_t in_weft = vp->in_weft;
		__weft_outcall_begin(vp);
		call_handler(&copy, sig, si, &uc);
		__weft_outcall_end();
		vp->in_weft = in_weft;
	} else {
		/* idle: on a parked UT's stack, where nothing may switch */
		struct vp_noswitch saved = noswitch_enter(vp);
		call_handler(&copy, sig, si, &uc);
		noswitch_exit(vp, &saved);
	}
	mask_restore(vp, &old);
}

void __weft_signals_deliver(struct vp *vp)
{
	struct vp_deferred *d = &vp->deferred;
	int saved_errno = errno;
	sigset_t all, old;
	sigfillset(&all);
	while (vp->signals) {
		/* take everything recorded so far, with no handler writing */
		kmask(SIG_BLOCK, &all, &old);
		vp->signals = 0;
		uint64_t pending = d->pending;
		d->pending = 0;
		siginfo_t info[64];
		for (int s = 1; s < NSIG_ALL; s++)
			if (pending & (1ull << (s - 1)))
				info[s - 1] = d->info[s - 1];
		kmask(SIG_SETMASK, &old, NULL);
		/* a program signal was caught: pause() returns, as the kernel's
		 * does once a handler has run */
		if (vp->async.caught != vp->caught_seen) {
			vp->caught_seen = vp->async.caught;
			__weft_signal_caught();
		}
		for (int s = 1; s < NSIG_ALL; s++) {
			if (!(pending & (1ull << (s - 1))))
				continue;
			deliver_one(vp, s, &info[s - 1]);
			/* let the kernel hand over the next instance, if any (it
			 * arrives here, in Weft's text, and is deferred again) */
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, s);
			kmask(SIG_UNBLOCK, &one, NULL);
		}
	}
	errno = saved_errno;
}

/* ---- sigaction for the program ------------------------------------------ */

/* The kernel's sigaction, bypassing the program's view (Weft's own use). */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static int kernel_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct kernel_sigaction k, ko;
	if (act) {
		k.handler = (void *)act->sa_sigaction;
		k.flags = (unsigned long)act->sa_flags | SA_RESTORER;
		k.restorer = __weft_arch_sigreturn;
		memcpy(&k.mask, &act->sa_mask, sizeof k.mask);
	}
	long r = __weft_raw_syscall6(SYS_rt_sigaction, sig, act ? (long)&k : 0, old ? (long)&ko : 0, 8, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	if (old) {
		memset(old, 0, sizeof *old);
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))ko.handler;
		old->sa_flags = (int)ko.flags;
		memcpy(&old->sa_mask, &ko.mask, sizeof ko.mask);
	}
	return 0;
}

int __weft_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig < 1 || sig >= NSIG_ALL) {
		errno = EINVAL;
		return -1;
	}
	bool weft_owned = sig == __weft_tick_signal() || sig == __weft_proc.cfg.dump_signal;
	if (!dispatched(sig) && !weft_owned)
		return kernel_sigaction(sig, act, old);
	struct prog_action *p = &actions[sig];
	struct sigaction now;
	/* What the program set, as it set it; SIG_DFL where the kernel reset
	 * it (SA_RESETHAND) or it never set one. */
	if (kernel_sigaction(sig, NULL, &now) != 0)
		return -1;
	if (old) {
		if (!p->set) {
			*old = now;
			if (weft_owned)
				memset(old, 0, sizeof *old);    /* Weft's: the program sees SIG_DFL */
		} else {
			*old = *action_of(sig);
			/* SA_RESETHAND fired: the kernel put SIG_DFL back */
			if (is_handler(old) && !weft_owned &&
			    now.sa_sigaction != (void (*)(int, siginfo_t *, void *))dispatch)
				old->sa_handler = now.sa_handler;
			old->sa_flags |= now.sa_flags & SA_RESTORER;
		}
	}
	if (!act)
		return 0;
	if (sig == SIGKILL || sig == SIGSTOP) {
		errno = EINVAL;
		return -1;
	}
	/* publish the program's action: fill the spare copy, then switch */
	uint8_t spare = (uint8_t)!p->cur;
	p->a[spare] = *act;
	p->a[spare].sa_flags &= ~SA_RESTORER;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	p->cur = spare;
	p->set = 1;
	if (sig == __weft_tick_signal())
		return 0;                    /* the tick's handler forwards to it */
	if (sig == __weft_proc.cfg.dump_signal)
		return 0;                    /* recorded, not installed: the dump keeps it */
	if (!is_handler(act))
		return kernel_sigaction(sig, act, NULL);
	struct sigaction k = *act;
	k.sa_sigaction = dispatch;
	k.sa_flags |= SA_SIGINFO;
	k.sa_flags &= ~SA_NODEFER;          /* the dispatcher applies it itself */
	__weft_signal_block_all(&k.sa_mask);
	return kernel_sigaction(sig, &k, NULL);
}

/* ---- the dump signal ---------------------------------------------------- */

/* Async: reads only the range table (published), vp->cur for the noswitch
 * test and writes what defer() writes.  Outside Weft's text the runtime's
 * state is whole, so the dump (a pure read of the UT table, write(2) and a
 * preloaded unwinder) runs at once, even over libc. */
static void on_dump(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno;
	struct vp *vp = __weft_vp();
	if (!on_vp_thread(vp)) {
		/* another kernel thread took it: the VP's kernel thread dumps,
		 * where no Weft code can be half way through on its behalf */
		__weft_raw_syscall6(SYS_tgkill, getpid(), vp->tid, sig, 0, 0, 0);
	} else if (__weft_pc_in_weft(__weft_arch_pc(uc))) {
		defer(vp, sig, si);
		add_pending(&uc->uc_sigmask, vp->deferred.pending);
	} else {
		__weft_dump_on_signal(sig, __weft_proc.cfg.dump_exit);
	}
	errno = saved_errno;
}

void __weft_dump_signal_init(void)
{
	int sig = __weft_proc.cfg.dump_signal;
	if (!sig)
		return;
	__weft_dump_prepare();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_dump;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	__weft_signal_block_all(&sa.sa_mask);
	if (kernel_sigaction(sig, &sa, NULL) != 0)
		__weft_warn("weft: WEFT_DUMP_SIGNAL: cannot install the handler for signal %d", sig);
}

/* ---- pause() ------------------------------------------------------------- */

int __weft_pause(void)
{
	return __weft_park_cancellable(&pausers, -1, WAIT_PAUSE, NULL);
}

bool __weft_pausers(void)
{
	return pausers.head != NULL;
}

void __weft_signal_caught(void)
{
	__weft_wake_all_nopreempt(&pausers, EINTR);
}

/* Every signal a handler of Weft's may block while it runs: all but the
 * synchronous ones (a fault inside a handler must still be delivered). */
void __weft_signal_block_all(sigset_t *m)
{
	sigfillset(m);
	for (int s = 1; s < NSIG_ALL; s++)
		if (synchronous(s))
			sigdelset(m, s);
}

long __weft_sigqueue_tid(pid_t tid, int sig, union sigval value)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = (pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	si.si_uid = (uid_t)__weft_raw_syscall6(SYS_getuid, 0, 0, 0, 0, 0, 0);
	si.si_value = value;
	return __weft_raw_syscall6(SYS_rt_tgsigqueueinfo, si.si_pid, tid, sig, (long)&si, 0, 0);
}

int __weft_kernel_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return kernel_sigaction(sig, act, old);
}
