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

/* Run a handler with the noswitch mark covering everything below here. */
static void run_noswitch(struct vp *vp, const struct sigaction *a, int sig, siginfo_t *si, void *uc)
{
	struct vp_noswitch saved = { vp->noswitch.lo, vp->noswitch.sp, vp->noswitch.ut };
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (!saved.sp) {
		vp->noswitch.ut = vp->cur;
		vp->noswitch.lo = stack_floor(vp->cur, here);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		vp->noswitch.sp = here;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	call_handler(a, sig, si, uc);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->noswitch.sp = saved.sp;
	vp->noswitch.lo = saved.lo;
	vp->noswitch.ut = saved.ut;
}

bool __weft_noswitch_slow(struct vp *vp)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (__weft_noswitch_at(vp, sp))
		return true;
	vp->noswitch.sp = 0;          /* its handler left by longjmp */
	return false;
}

void __weft_noswitch_leave(uintptr_t sp)
{
	struct vp *vp = __weft_vp();
	if (vp->noswitch.sp && vp->noswitch.ut == vp->cur && sp >= vp->noswitch.sp)
		vp->noswitch.sp = 0;
}

/* ---- the dispatcher ------------------------------------------------------ */

static bool on_vp_thread(const struct vp *vp)
{
	return __weft_started && __weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0) == vp->tid;
}

static void defer(struct vp *vp, int sig, const siginfo_t *si)
{
	struct vp_deferred *d = &vp->deferred;
	if (sig < SIGRTMIN) {
		d->last[sig - 1] = *si;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_or_fetch(&d->pending, 1ull << (sig - 1), __ATOMIC_RELAXED);
	} else {
		uint32_t slot = __atomic_fetch_add(&d->tail, 1, __ATOMIC_RELAXED);
		if (slot - d->head < WEFT_DEFER_RING) {
			d->ring[slot % WEFT_DEFER_RING] = *si;
		} else {
			/* ring full: keep the signal, lose its queued data */
			__atomic_fetch_sub(&d->tail, 1, __ATOMIC_RELAXED);
			d->last[0] = *si;
			__atomic_or_fetch(&d->pending, 1ull << (sig - 1), __ATOMIC_RELAXED);
		}
	}
	vp->stat.signals_deferred++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->signals = 1;
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
	struct vp *vp = __weft_vp();
	const struct sigaction *a = action_of(sig);
	if (!is_handler(a))
		return;                       /* changed meanwhile (sigaction races the signal) */
	if (!on_vp_thread(vp)) {
		call_handler(a, sig, si, uc); /* a kernel thread Weft does not run UTs on */
		return;
	}
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	if (__weft_pc_in_weft(pc)) {
		defer(vp, sig, si);
		return;
	}
	if (__weft_pc_protected(pc) || __weft_noswitch_at(vp, sp))
		run_noswitch(vp, a, sig, si, uc);
	else
		call_handler(a, sig, si, uc);
}

void __weft_signal_forward(int sig, siginfo_t *si, void *uc)
{
	if (sig >= 1 && sig < NSIG_ALL && actions[sig].set && is_handler(action_of(sig)))
		dispatch(sig, si, uc);
}

/* ---- delivery of deferred signals (mainline) ---------------------------- */

static long kmask(int how, const sigset_t *set, sigset_t *old)
{
	return __weft_raw_syscall6(SYS_rt_sigprocmask, how, (long)set, (long)old, 8, 0, 0);
}

/* Run one deferred signal's handler with its mask, as the kernel would. */
static void deliver_one(struct vp *vp, int sig, siginfo_t *si)
{
	const struct sigaction *a = action_of(sig);
	if (!is_handler(a)) {
		if (a->sa_handler == SIG_DFL)   /* the default action, by the kernel */
			__weft_raw_syscall6(SYS_tgkill, getpid(), vp->tid, sig, 0, 0, 0);
		return;
	}
	struct sigaction copy = *a;
	sigset_t block = copy.sa_mask, old;
	if (!(copy.sa_flags & SA_NODEFER))
		sigaddset(&block, sig);
	ucontext_t uc;
	getcontext(&uc);
	kmask(SIG_BLOCK, &block, &old);
	if (vp->cur->state == UT_RUNNING && !__weft_noswitch(vp))
		call_handler(&copy, sig, si, &uc);
	else
		run_noswitch(vp, &copy, sig, si, &uc);   /* idle: on a parked UT's stack */
	kmask(SIG_SETMASK, &old, NULL);
}

void __weft_signals_deliver(struct vp *vp)
{
	struct vp_deferred *d = &vp->deferred;
	sigset_t all, old;
	sigfillset(&all);
	while (vp->signals) {
		/* take everything recorded so far, with no handler writing */
		kmask(SIG_BLOCK, &all, &old);
		vp->signals = 0;
		uint64_t pending = d->pending;
		d->pending = 0;
		siginfo_t std[32], rt[WEFT_DEFER_RING];
		for (int s = 1; s < 32; s++)
			if (pending & (1ull << (s - 1)))
				std[s - 1] = d->last[s - 1];
		uint32_t nrt = 0;
		while (d->head != d->tail && nrt < WEFT_DEFER_RING)
			rt[nrt++] = d->ring[d->head++ % WEFT_DEFER_RING];
		kmask(SIG_SETMASK, &old, NULL);
		for (int s = 1; s < 32; s++)
			if (pending & (1ull << (s - 1)))
				deliver_one(vp, s, &std[s - 1]);
		for (int s = 32; s < NSIG_ALL; s++)
			if (pending & (1ull << (s - 1)))
				deliver_one(vp, s, &d->last[0]);
		for (uint32_t i = 0; i < nrt; i++)
			deliver_one(vp, rt[i].si_signo, &rt[i]);
	}
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
	if (!dispatched(sig) && sig != __weft_tick_signal())
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
			if (sig == __weft_tick_signal())
				memset(old, 0, sizeof *old);    /* Weft's: the program sees SIG_DFL */
		} else {
			*old = *action_of(sig);
			/* SA_RESETHAND fired: the kernel put SIG_DFL back */
			if (is_handler(old) && sig != __weft_tick_signal() &&
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
	if (!is_handler(act))
		return kernel_sigaction(sig, act, NULL);
	struct sigaction k = *act;
	k.sa_sigaction = dispatch;
	k.sa_flags |= SA_SIGINFO;
	return kernel_sigaction(sig, &k, NULL);
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

int __weft_kernel_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return kernel_sigaction(sig, act, old);
}
