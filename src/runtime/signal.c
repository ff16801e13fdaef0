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
 * SIGSYS) are the kernel's to deliver, at once, on the faulting UT: a fault
 * cannot wait.  Their handler runs inside sync_entry, which keeps the one
 * thing the kernel gets wrong for a UT: the kernel blocks the signal (and
 * sa_mask's) in the carrier's mask while the handler runs, and that mask
 * is every UT's on the carrier, so a handler preempted there left the next
 * UT to run with SIGSEGV blocked, and that UT's own fault killed the
 * process (sig_sync_faults_to_causer under a 100 µs slice, every run).
 * sync_entry lets the synchronous bits go at once and holds them for the
 * UT instead (ut->sync_held), so a fault on a UT that holds or blocks
 * the signal still ends the process as the kernel would end it.  glibc's
 * internal signals (32, 33) and SIGKILL/SIGSTOP go to the kernel unchanged.
 * The tick's signal stays Weft's: a program handler for it is recorded and
 * run by the tick handler for signals that are not the tick's own
 * (preempt.c).
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

/* ---- the dispatcher ------------------------------------------------------ */

static bool on_vp_thread(const struct vp *vp)
{
	return __weft_on_vp_thread(vp);
}

#define BIT(s) (1ull << ((s) - 1))
/* Signals whose action is SIG_DFL or SIG_IGN but whose dispatcher is
 * installed all the same: a sigwait-family call waited for them.  Set by
 * the mainline (bit first, then the kernel's action), read by the
 * dispatcher. */
static volatile uint64_t intercepted;

/* Keep sig for the next epilogue.  It stays blocked (the interrupted
 * context's mask, restored by sigreturn) until it has been routed, so the
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
	/* The idle loop about to sleep (it looked at `signals` before it set
	 * idle): make the sleep it is about to begin return at once, by the
	 * futex word it compares or the poller's wake (sched.c, idle). */
	if (__atomic_load_n(&vp->idle, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&vp->wake, 1, __ATOMIC_SEQ_CST);
		const struct weft_poller *poller = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
		if (poller)
			poller->wake(vp);
	} else if (!d->in_kset) {
		/* an epilogue may not come: the PC may be past the call's last
		 * look at exit_hook, in_weft set or not, before its return.  A
		 * retry hands it to dispatch outside Weft (preempt.c says why);
		 * one that finds it delivered by an epilogue does nothing.  Not
		 * for a signal let in by Weft's own change of the kernel mask
		 * (in_kset): that work goes on to a delivery, and the timer's
		 * arming and stopping cost two timer_settime calls, ~5 µs each
		 * on this VM (sig_external: 24 µs a signal instead of 13) */
		__weft_preempt_signal_deferred(vp);
	}
}

/* The kernel mask the interrupted context gets back at sigreturn: what
 * Weft keeps blocked for the UTs (sigdeliver.c) and what is deferred. */
static void context_mask(struct vp *vp, ucontext_t *uc)
{
	uint64_t m;
	memcpy(&m, &uc->uc_sigmask, sizeof m);
	/* the synchronous and Weft's own signals keep whatever they had */
	uint64_t keep = BIT(SIGKILL) | BIT(SIGSTOP) | BIT(32) | BIT(33) | BIT(SIGSEGV) | BIT(SIGBUS) |
			BIT(SIGFPE) | BIT(SIGILL) | BIT(SIGTRAP) | BIT(SIGSYS);
	if (__weft_tick_signal())
		keep |= BIT(__weft_tick_signal());
	m = (m & keep) | ((vp->sig_kmask | vp->deferred.pending) & ~keep);
	memcpy(&uc->uc_sigmask, &m, sizeof m);
}

static void dispatch(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct vp *vp = __weft_vp();
	const struct sigaction *a = action_of(sig);
	bool caught = is_handler(a);
	if (!caught && !(intercepted & BIT(sig)))
		return;                       /* changed meanwhile (sigaction races the signal) */
	if (!on_vp_thread(vp)) {
		/* a kernel thread Weft does not run UTs on (a UT's own kernel
		 * thread in an unwrapped call, or a foreign one): no Weft state.
		 * The thread the kernel chose takes it, as under NPTL. */
		if (!caught) {
			if (a->sa_handler == SIG_DFL)
				__weft_sig_default(sig);
			return;
		}
		sigset_t m;
		handler_mask(&m, &uc->uc_sigmask, a, sig);
		kmask(SIG_SETMASK, &m, NULL);
		call_handler(a, sig, si, uc);
		if (a->sa_flags & SA_RESETHAND)
			__weft_sig_reset(sig);
		return;
	}
	vp->async.caught++;
	uintptr_t pc = __weft_arch_pc(uc), sp = __weft_arch_sp(uc);
	if (__weft_pc_in_weft(pc) || vp->in_weft) {
		defer(vp, sig, si);
		/* Over a kept blocking call (handoff.c) of the UT that takes
		 * it: the call ends with EINTR, so that the handler runs now
		 * and not when the call returns (with SA_RESTART the kernel
		 * would make it again at once, and a waitpid(WUNTRACED) ran
		 * an interval timer's handler only once its child stopped);
		 * the call's wrapper runs it and makes the call again if the
		 * kernel would have */
		if (caught && vp->kept_call && __weft_sig_running_takes(vp, sig))
			__weft_arch_csys_interrupt(uc);
	} else {
		/* the runtime's state is whole: route it now (sigdeliver.c); a
		 * handler that runs over protected code may not switch, nor
		 * over code in no object the range table knows: a library
		 * glibc loaded itself since the table was built (libgcc_s, a
		 * gconv or NSS module) may be one the program named protected,
		 * and the handler cannot rebuild the table (the loader's lock);
		 * a JIT's code is the cost, its handlers run without switching
		 * (preempt.c's tick rebuilds the table and learns).  M:N:
		 * routing takes the runtime lock (never held by this kernel
		 * thread here: in_weft is clear), which the program's handler
		 * lets go while it runs (sigdeliver.c, run_handler) */
		bool ns = __weft_pc_protected(pc) || __weft_noswitch_at(vp, sp) ||
			  __weft_pc_unknown(pc);
		struct vp_noswitch saved;
		if (__weft_mn) {
			/* Over libc's code the interrupted UT may hold one of
			 * libc's locks (malloc's arena list, held by fork
			 * around _Fork), which the runtime lock's holder on
			 * another VP may be waiting for (Weft calls malloc
			 * under it): waiting here deadlocked a UT's fork
			 * against another VP's pthread_create.  So over
			 * protected code the lock is only tried, briefly, and
			 * the signal is deferred as over Weft's code when it
			 * stays busy: its handler runs at this VP's next
			 * epilogue, tick or idle look. */
			if (ns && !__weft_rtl_take_briefly(1024)) {
				defer(vp, sig, si);
				context_mask(vp, uc);
				return;
			}
			if (!ns)
				__weft_rtl_lock();
			vp->in_weft = 1;
		}
		if (ns)
			saved = noswitch_enter(vp);
		struct vp *was = vp;
		/* a copy-stack UT's frames end at the interrupted stack
		 * pointer while a handler runs here and may switch it out
		 * (runtime/copystack.c) */
		struct ut *on = vp->cur;
		uintptr_t mark = __weft_cs_offstack_enter(on, sp);
		__weft_sig_route(vp, sig, si, uc);
		__weft_cs_offstack_leave(on, mark);
		vp = __weft_vp();
		if (ns)
			noswitch_exit(vp, &saved);
		if (__weft_mn) {
			if (vp != was) {
				/* the handler switched and the UT goes on on another
				 * kernel thread: sigreturn there must not install
				 * the first one's alternate stack */
				__weft_raw_syscall6(SYS_sigaltstack, 0, (long)&uc->uc_stack, 0, 0, 0, 0);
			}
			vp->in_weft = 0;
			__weft_rtl_unlock();
		}
		/* The handler's own end let new instances in (sigdeliver.c,
		 * hold_end's kset: deferred here, nested, with in_kset set and
		 * no retry), and the program's code comes next, not an
		 * epilogue: they go back to the kernel, which delivers them to
		 * this dispatcher after sigreturn.  (Without it one loaded run
		 * in 20 of signal_deferred_at_call_end, one VP, waited for
		 * good; 0 in 40 with it.) */
		if (vp->deferred.pending && !__weft_sig_redispatch(vp, uc))
			__weft_preempt_signal_deferred(vp);
	}
	context_mask(vp, uc);
}

void __weft_signal_forward(int sig, siginfo_t *si, void *uc)
{
	if (sig >= 1 && sig < NSIG_ALL && actions[sig].set && is_handler(action_of(sig)))
		dispatch(sig, si, uc);
}

/* ---- synchronous signals ------------------------------------------------- */

static void publish(int sig, const struct sigaction *act);

#define SYNC_BITS (BIT(SIGSEGV) | BIT(SIGBUS) | BIT(SIGFPE) | BIT(SIGILL) | BIT(SIGTRAP) | BIT(SIGSYS))

/* A synchronous signal's bit in ut->sync_held. */
static uint8_t sync_bit(int sig)
{
	switch (sig) {
	case SIGSEGV: return 1;
	case SIGBUS: return 2;
	case SIGFPE: return 4;
	case SIGILL: return 8;
	case SIGTRAP: return 16;
	default: return 32;           /* SIGSYS */
	}
}

static uint8_t sync_bits_of(uint64_t set)
{
	uint8_t b = 0;
	for (int s = 1; s < 32; s++)
		if ((set & BIT(s)) && synchronous(s))
			b |= sync_bit(s);
	return b;
}

/*
 * The kernel's action for a synchronous signal the program handles.
 * Async: runs where the fault happened, on the faulting UT's carrier (or
 * on a kernel thread that carries no VP: then the kernel's mask is that
 * thread's alone, and the handler is simply called).  Reads the program's
 * action (published) and the running UT's mask and sync_held; writes the
 * UT's sync_held (put back before it returns; a longjmp out clears it),
 * the record's `set` for an SA_RESETHAND action (one byte, which the
 * kernel's reset made stale) and, by system call, its carrier's mask.
 * The tick never switches inside it (Weft's text), and the UT holds the
 * bits before the kernel lets them go.
 */
static void sync_entry(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const struct sigaction *a = action_of(sig);
	bool fault = si->si_code > 0;     /* the kernel's, not a kill or tgkill */
	if (!is_handler(a)) {
		/* changed meanwhile: SIG_DFL, or SIG_IGN, which the kernel
		 * does not honour for a fault */
		if (fault || a->sa_handler == SIG_DFL)
			__weft_sig_default(sig);
		return;
	}
	if (a->sa_flags & SA_RESETHAND)
		actions[sig].set = 0;     /* the kernel reset its action to SIG_DFL as it
					   * delivered: what sigaction reads back now */
	struct vp *vp = __weft_vp();
	struct ut *self = on_vp_thread(vp) ? vp->cur : NULL;
	if (!self) {
		call_handler(a, sig, si, uc);
		return;
	}
	/* the kernel ends a thread that faults with the signal blocked
	 * (force_sig_info: unblocked, SIG_DFL, delivered) */
	if (fault && ((self->sig_mask & BIT(sig)) || (self->sync_held & sync_bit(sig)))) {
		__weft_sig_default(sig);
		return;
	}
	uint64_t before, extra;
	memcpy(&before, &uc->uc_sigmask, sizeof before);
	memcpy(&extra, &a->sa_mask, sizeof extra);
	if (!(a->sa_flags & SA_NODEFER))
		extra |= BIT(sig);
	uint64_t let_go = extra & SYNC_BITS & ~before;
	uint8_t held = self->sync_held;
	self->sync_held = held | sync_bits_of(let_go);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (let_go)
		kmask(SIG_UNBLOCK, (const sigset_t *)&let_go, NULL);
	call_handler(a, sig, si, uc);
	/* the same UT, perhaps on another VP now (M:N) */
	self->sync_held = held;
}

/* sigaction for a synchronous signal: the program's handler runs inside
 * sync_entry, with the program's flags and sa_mask for the kernel (which
 * applies SA_RESETHAND itself; sync_entry makes the record follow). */
static int sync_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct prog_action *p = &actions[sig];
	if (old) {
		if (p->set)
			*old = *action_of(sig);
		else if (kernel_sigaction(sig, NULL, old) != 0)
			return -1;
	}
	if (!act)
		return 0;
	if (!is_handler(act)) {
		p->set = 0;               /* the kernel's action is the truth again */
		return kernel_sigaction(sig, act, NULL);
	}
	publish(sig, act);
	struct sigaction k = *act;
	k.sa_sigaction = sync_entry;
	k.sa_flags |= SA_SIGINFO;
	return kernel_sigaction(sig, &k, NULL);
}

/* ---- what sigdeliver.c asks of the actions ------------------------------- */

void __weft_sig_action(int sig, struct sigaction *a)
{
	if (sig >= 1 && sig < NSIG_ALL && actions[sig].set) {
		*a = *action_of(sig);
		return;
	}
	memset(a, 0, sizeof *a);
	a->sa_handler = SIG_DFL;
}

bool __weft_sig_dispatched(int sig)
{
	if (sig < 1 || sig >= NSIG_ALL)
		return false;
	if (sig == __weft_proc.cfg.dump_signal)
		return false;
	if (sig == __weft_tick_signal())
		return actions[sig].set != 0;     /* the tick forwards the program's */
	return dispatched(sig);
}

void __weft_sig_call_handler(const struct sigaction *a, int sig, siginfo_t *si, ucontext_t *uc)
{
	call_handler(a, sig, si, uc);
}

/* The dispatcher as the kernel's action for sig, with the program's
 * restart flag (a call interrupted on the carrier restarts as the program
 * asked); every other flag Weft applies itself. */
static int install_dispatcher(int sig, const struct sigaction *act)
{
	struct sigaction k;
	memset(&k, 0, sizeof k);
	k.sa_sigaction = dispatch;
	k.sa_flags = SA_SIGINFO | (act ? (act->sa_flags & SA_RESTART) : SA_RESTART);
	__weft_signal_block_all(&k.sa_mask);
	return kernel_sigaction(sig, &k, NULL);
}

void __weft_sig_intercept(int sig)
{
	if (sig < 1 || sig >= NSIG_ALL || !dispatched(sig) || (intercepted & BIT(sig)))
		return;
	struct prog_action *p = &actions[sig];
	if (!p->set) {
		/* what the program would read back: the kernel's action now */
		struct sigaction now;
		if (kernel_sigaction(sig, NULL, &now) != 0)
			return;
		now.sa_flags &= ~SA_RESTORER;
		publish(sig, &now);
	}
	intercepted |= BIT(sig);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!is_handler(action_of(sig)))
		install_dispatcher(sig, NULL);
}

void __weft_sig_reset(int sig)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	publish(sig, &dfl);
	if (!(intercepted & BIT(sig)))
		kernel_sigaction(sig, &dfl, NULL);
}

void __weft_sig_default(int sig)
{
	if (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH)
		return;                        /* ignored by default */
	/* let the kernel do it: SIG_DFL, unblocked, sent to this thread
	 * (it ends the process, or stops it until SIGCONT) */
	struct sigaction dfl, was;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	kernel_sigaction(sig, &dfl, &was);
	sigset_t one, old;
	sigemptyset(&one);
	sigaddset(&one, sig);
	kmask(SIG_UNBLOCK, &one, &old);
	__weft_raw_syscall6(SYS_tgkill, getpid(), __weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
	/* continued (a stop signal): as it was */
	kmask(SIG_SETMASK, &old, NULL);
	kernel_sigaction(sig, &was, NULL);
}

/* ---- delivery of deferred signals (mainline) ---- */

void __weft_signals_deliver(struct vp *vp)
{
	int saved_errno = errno;
	while (vp->signals) {
		/* M:N: vp is re-read after every step that may switch (a
		 * handler, a wake-up that preempts): the caller may go on on
		 * another VP, whose deferred record, mask and running UT are
		 * the ones to act on then.  Acting on the VP it left would run
		 * that VP's running UT's handler here and let go of the lock
		 * that VP's carrier holds (its in_weft cleared behind it). */
		struct vp_deferred *d = &vp->deferred;
		/* Take everything recorded so far.  No handler rewrites a
		 * record being copied: a signal stays blocked in the kernel
		 * while its bit is set (the dispatcher gives every context it
		 * returns to a mask with the pending bits blocked, context_mask,
		 * and kset keeps them), so the records are copied first and
		 * the bits cleared after, in one instruction no handler can
		 * split; a signal deferred meanwhile keeps its bit, and
		 * `signals`, cleared before the look, says so.  (Two mask
		 * system calls around the copy did the same: two of the nine a
		 * signal from another process cost, sig_external.) */
		vp->signals = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		uint64_t pending = d->pending;
		siginfo_t info[64];
		for (int s = 1; s < NSIG_ALL; s++)
			if (pending & (1ull << (s - 1)))
				info[s - 1] = d->info[s - 1];
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_fetch_and(&d->pending, ~pending, __ATOMIC_RELAXED);
		for (int s = 1; s < NSIG_ALL; s++) {
			if (!(pending & (1ull << (s - 1))))
				continue;
			if (s == __weft_proc.cfg.dump_signal)
				__weft_dump_on_signal(s, __weft_proc.cfg.dump_exit);
			else
				__weft_sig_route(vp, s, &info[s - 1], NULL);
			vp = __weft_vp();
		}
		/* let the kernel hand over the next instances, if any (they
		 * arrive here, in Weft's text, and are deferred again), unless
		 * no UT could take them now or one waits for the running UT's
		 * handler (sigdeliver.c); what was deferred meanwhile stays
		 * blocked (an unblock of one signal here let a third instance
		 * in over a second's record) */
		if (pending)
			__weft_sig_kmask_sync(vp, pending);
		/* the running UT's own, at this safe point */
		__weft_sig_run_cur(vp);
		vp = __weft_vp();
	}
	/* a handler over protected code holds the running UT's back: later */
	struct ut *cur = vp->cur;
	if (cur && cur->state == UT_RUNNING && cur->sig_ready)
		vp->signals = 1;
	errno = saved_errno;
}

/* ---- sigaction for the program ------------------------------------------ */

/* Publish the program's action: fill the spare copy, then switch. */
static void publish(int sig, const struct sigaction *act)
{
	struct prog_action *p = &actions[sig];
	uint8_t spare = (uint8_t)!p->cur;
	p->a[spare] = *act;
	p->a[spare].sa_flags &= ~SA_RESTORER;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	p->cur = spare;
	p->set = 1;
}

int __weft_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig < 1 || sig >= NSIG_ALL) {
		errno = EINVAL;
		return -1;
	}
	/* A UT's vfork child (vfork.c) has a table of its own, a copy: what
	 * it sets is the kernel's there, and the process's record (shared
	 * memory) stays the parent's.  (Through the record, a child's
	 * SIG_DFL reached the parent, and its SIG_IGN never reached the image
	 * it execs: the dispatcher stayed installed.) */
	if (act && unlikely(__weft_vfork_child(__weft_vp()))) {
		if (old && __weft_sigaction(sig, NULL, old) != 0)
			return -1;
		return kernel_sigaction(sig, act, NULL);
	}
	bool weft_owned = sig == __weft_tick_signal() || sig == __weft_proc.cfg.dump_signal;
	if (synchronous(sig) && !weft_owned)
		return sync_sigaction(sig, act, old);
	if (!dispatched(sig) && !weft_owned)
		return kernel_sigaction(sig, act, old);
	struct prog_action *p = &actions[sig];
	if (old) {
		/* what the program set, as it set it (Weft applies SA_RESETHAND
		 * itself, so the record is the truth); the kernel's if it never
		 * set one, and SIG_DFL for Weft's own signals */
		if (p->set) {
			*old = *action_of(sig);
		} else if (weft_owned) {
			memset(old, 0, sizeof *old);
		} else if (kernel_sigaction(sig, NULL, old) != 0) {
			return -1;
		}
	}
	if (!act)
		return 0;
	if (sig == SIGKILL || sig == SIGSTOP) {
		errno = EINVAL;
		return -1;
	}
	publish(sig, act);
	if (weft_owned)
		return 0;                    /* the tick forwards to it; the dump keeps it */
	if (!is_handler(act)) {
		if (intercepted & BIT(sig))
			return 0;            /* a sigwait may wait for it: the dispatcher stays */
		return kernel_sigaction(sig, act, NULL);
	}
	if (install_dispatcher(sig, act) != 0)
		return -1;
	__weft_preempt_signals_installed();
	return 0;
}

/* ---- the dump signal ---------------------------------------------------- */

/* Async: reads only the range table (published), vp->cur for the noswitch
 * test, vp->in_weft, and writes what defer() writes.  Outside Weft's text
 * the runtime's state is whole, so the dump (a pure read of the UT table,
 * write(2) and a preloaded unwinder) runs at once, even over libc.  Under
 * M:N "whole" needs the runtime lock as well: without it another VP may be
 * switching to the very UT whose parked stack the unwinder reads.  This
 * kernel thread holds the lock exactly when in_weft is set (rt.h), and then
 * the dump is deferred to the epilogue like one over Weft's text; else the
 * handler takes the lock around the dump (nothing on this kernel thread can
 * hold it: the interrupted code is the program's). */
static void on_dump(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno;
	struct vp *vp = __weft_vp();
	if (!on_vp_thread(vp)) {
		/* another kernel thread took it: the VP's kernel thread dumps,
		 * where no Weft code can be half way through on its behalf */
		__weft_raw_syscall6(SYS_tgkill, getpid(), vp->tid, sig, 0, 0, 0);
	} else if (__weft_pc_in_weft(__weft_arch_pc(uc)) || (__weft_mn && vp->in_weft)) {
		defer(vp, sig, si);
		context_mask(vp, uc);
	} else if (unlikely(__weft_mn)) {
		__weft_rtl_lock();
		__weft_dump_on_signal(sig, __weft_proc.cfg.dump_exit);
		__weft_rtl_unlock();
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

/* Every signal a handler of Weft's may block while it runs: all but the
 * synchronous ones (a fault inside a handler must still be delivered). */
void __weft_signal_block_all(sigset_t *m)
{
	sigfillset(m);
	for (int s = 1; s < NSIG_ALL; s++)
		if (synchronous(s))
			sigdelset(m, s);
}

/*
 * The retry for deferred signals (preempt.c, on_tick), in its handler on
 * the carrier, found the PC outside Weft's text with no Weft call under
 * way: a signal arriving now would go to dispatch and be routed at once
 * (over libc or the vDSO too, with switching off).  So each deferred one
 * is handed back to the kernel: queued again to this kernel thread with
 * its own siginfo, and unblocked in the context that sigreturn restores,
 * where the kernel delivers it to dispatch.  Without this the retry could
 * only fake a call at a PC in the program's own code, which a loop that
 * lives in clock_gettime meets rarely: waits of ~1-8 ms against NPTL's
 * 70 µs.  The kernel takes any si_code (the kernel's, kill's) from a
 * thread that queues to its own tid, as here; a signal it refuses (EAGAIN:
 * the user's RLIMIT_SIGPENDING is full) stays deferred and the retry fakes
 * a call for it.  True when nothing is left deferred.
 * Async: the handler's mask blocks every signal, so no dispatch writes
 * the record meanwhile; the mainline is not in __weft_signals_deliver
 * (its PC would be in Weft's text).
 */
bool __weft_sig_redispatch(struct vp *vp, ucontext_t *uc)
{
	struct vp_deferred *d = &vp->deferred;
	uint64_t pending = d->pending;
	if (!pending)
		return true;
	long pid = __weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long tid = __weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	for (int s = 1; s < NSIG_ALL; s++) {
		uint64_t bit = 1ull << (s - 1);
		if (!(pending & bit))
			continue;
		siginfo_t info = d->info[s - 1];
		if (__weft_raw_syscall6(SYS_rt_tgsigqueueinfo, pid, tid, s, (long)&info, 0, 0) == 0)
			d->pending &= ~bit;
	}
	context_mask(vp, uc);
	return d->pending == 0;
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
