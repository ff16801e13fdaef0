/*
 * sigdeliver.c — per-UT signals: masks, pending sets, and delivery by fake
 * call, as Mueller's library does them.
 *
 * Owns: each UT's mask, pending set and queue of siginfo (ut->sig_*); the
 * process's pending signals that no UT could take yet (proc_pend/proc_q);
 * the tally of masks that decides what the carrier's kernel mask blocks
 * (vp->sig_kmask); the UTs in the sigwait family; the pool of pending
 * records.
 *
 * The kernel sees one thread per VP, so the UTs' masks are Weft's, not the
 * kernel's.  The carrier's kernel mask blocks exactly the signals that no UT
 * could take now (every counted UT blocks them and no UT waits for them in
 * sigwait): those stay pending in the kernel, as they would under NPTL,
 * until a UT unmasks one or waits for it, which changes the kernel mask and
 * lets the kernel hand it over.  Every other signal the program handles
 * reaches the dispatcher (signal.c), which calls __weft_sig_route where the
 * runtime's state is whole.
 *
 * Mueller's order (route): a thread-directed signal (tgkill to the carrier:
 * raise, glibc's own pthread_kill) is the running UT's; a process-directed
 * one goes to a UT waiting for it in sigwait & co (no handler runs), else to
 * the running UT if it does not block it, else to any UT that does not (it is
 * woken if its wait is one a signal may end), else it stays pending on the
 * process until a UT unmasks it.  pthread_kill and pthread_sigqueue of a UT
 * (__weft_sig_send) never pass through the kernel.
 *
 * Delivery: a UT's due signal (sig_ready) runs its handler on that UT, on
 * its own stack (or its own sigaltstack), at a safe point: at once when the
 * UT is the caller; for a parked UT when its wait ends with EINTR (park.c
 * calls __weft_sig_woken); for a ready one at the epilogue of the call it
 * returns from, or the preemption trampoline's (switch-in sets vp->signals
 * when the incoming UT has sig_ready).  The handler runs with the UT's mask
 * plus sa_mask plus the signal (unless SA_NODEFER), which is the UT's mask
 * for as long as it runs; the mask it finds in the ucontext is the one put
 * back after it.  A parked UT is woken only from waits a signal may end
 * (cancellation points: sem_wait, sleeps, pause, condition waits (a
 * spurious wake-up), joins (which wait again), sigwait, the I/O waits).
 * A UT waiting for a mutex, a barrier, an rwlock or once runs the handler
 * when it has what it waited for; one in a blocking call off the VP when
 * the call returns (the kernel thread making it blocks every signal).  A
 * blocking call kept on the VP is ended by the signal instead, and its
 * wrapper runs the handler (runtime/handoff.c, restart_after_handlers;
 * __weft_sig_running_takes).
 *
 * Asynchronous readers: the dispatcher calls route only when the
 * interrupted code is not Weft's (signal.c), and handlers on other kernel
 * threads reach these calls only through the VP (WEFT_CALL takes it), so
 * every field here has one writer at a time and needs no atomics.  The
 * pool's free list is touched the same way.  Two reads over Weft's own
 * code, only while the carrier is in a kept blocking call (vp->kept_call:
 * the running UT writes none of its signal state then): the dispatcher
 * reads that UT's state and sig_mask, and waitset
 * (__weft_sig_running_takes), and the tick its sig_ready (preempt.c).
 * Under M:N waitset and sig_ready are written by other VPs under the
 * runtime lock: both reads are hints (a wrong one ends a restartable call
 * needlessly, or leaves the handler to the call's end, as before).
 */
#include "rt.h"
#include "../arch/arch.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NSIG_ALL 65
#define BIT(s) (1ull << ((s) - 1))
#define SIG_RECS 1024
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1u << 31)
#endif

static struct sig_rec pool[SIG_RECS];
static struct sig_rec *rec_free;
static uint32_t recs_free_n;
static bool pool_ready;

/* Back-pressure.  When the pool runs low, the signals still coming are
 * left in the kernel's queue (blocked on the carrier) until the UTs have
 * taken what is queued here: a sender then meets the kernel's limit
 * (EAGAIN from sigqueue) as under NPTL, and nothing is dropped. */
#define RECS_LOW 64
static uint64_t kforce;

static uint64_t proc_pend;                /* taken by no UT yet */
static struct sig_rec *proc_q;

/* The tally: how many counted UTs block each signal, and which signals
 * any counted UT blocks (bit i: blocked_n[i] != 0), so that kwant looks
 * only at those (a loop over all 64 was a fifth of a create+join when the
 * program started with a signal blocked). */
static uint32_t blocked_n[64];
static uint64_t blocked_any;
uint32_t __weft_sig_counted;
uint32_t __weft_sig_masked_uts;

/* SIGEV_THREAD_ID timers a UT armed naming its VP's kernel thread: the
 * kernel id and the UT's handle (a slot reused by another UT is told by
 * its generation).  Linear: a program has few. */
#define TIMER_OWNERS 64
static struct { int kid; pthread_t owner; } timer_owners[TIMER_OWNERS];
static unsigned n_timer_owners;

static struct waitq sigwaiters;           /* UTs in sigwait & co and sigsuspend */
static struct ut *main_ut;                /* UT 1: Linux gives it first crack */
static uint64_t waitset;                  /* what the sigwait-family UTs wait for */

struct sigwait_req {
	int sig;
	siginfo_t info;
};

static long kmask(int how, const uint64_t *set, uint64_t *old)
{
	return __weft_raw_syscall6(SYS_rt_sigprocmask, how, (long)set, (long)old, 8, 0, 0);
}

/* Set the carrier's kernel mask to `set` plus whatever the dispatcher
 * has deferred.  The deferred set is read with every signal blocked: a
 * signal deferred between that read and the write would otherwise be let
 * in again, and a second instance would find its record's slot taken. */
static void kset(struct vp *vp, uint64_t set)
{
	uint64_t all = ~0ull;
	vp->deferred.in_kset = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	kmask(SIG_BLOCK, &all, NULL);
	set |= vp->deferred.pending;
	kmask(SIG_SETMASK, &set, NULL);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->deferred.in_kset = 0;
}

static uint64_t bits_of(const sigset_t *set)
{
	uint64_t b;
	memcpy(&b, set, sizeof b);
	return b;
}

static void to_set(sigset_t *set, uint64_t b)
{
	sigemptyset(set);
	memcpy(set, &b, sizeof b);
}

/* Signals the kernel mask of the carrier may block for the UTs: not
 * SIGKILL/SIGSTOP, not glibc's own (32, 33), not the synchronous ones (the
 * kernel forces those), not the tick's. */
static uint64_t routable(void)
{
	uint64_t r = ~0ull;
	r &= ~(BIT(SIGKILL) | BIT(SIGSTOP) | BIT(32) | BIT(33));
	r &= ~(BIT(SIGSEGV) | BIT(SIGBUS) | BIT(SIGFPE) | BIT(SIGILL) | BIT(SIGTRAP) | BIT(SIGSYS));
	int tick = __weft_tick_signal();
	if (tick)
		r &= ~BIT(tick);
	return r;
}

/* ---- the pool of pending records --------------------------------------- */

static struct sig_rec *rec_get(void)
{
	if (!pool_ready) {
		for (int i = 0; i < SIG_RECS; i++) {
			pool[i].next = rec_free;
			rec_free = &pool[i];
		}
		recs_free_n = SIG_RECS;
		pool_ready = true;
	}
	struct sig_rec *r = rec_free;
	if (r) {
		rec_free = r->next;
		recs_free_n--;
	}
	return r;
}

static void kmask_apply(struct vp *vp);

static void rec_put(struct sig_rec *r)
{
	r->next = rec_free;
	rec_free = r;
	recs_free_n++;
	if (unlikely(kforce) && recs_free_n >= 4 * RECS_LOW) {
		kforce = 0;
		kmask_apply(__weft_vp());
	}
}

/* Queue si on (q, pend).  A standard signal already pending is merged
 * into the one there, as the kernel does; a real-time one is queued. */
static int enqueue(struct sig_rec **q, uint64_t *pend, int sig, const siginfo_t *si, bool shared)
{
	if (sig < SIGRTMIN && (*pend & BIT(sig)))
		return 0;
	if (unlikely(recs_free_n < RECS_LOW)) {
		/* before the record is taken, so that a caller that finds none
		 * left gives the signal back to the kernel with it blocked
		 * (route's requeue: never let straight back in); M:N: another
		 * VP may have set the bit already, and this carrier's mask
		 * not followed yet: apply here too */
		kforce |= BIT(sig);
		kmask_apply(__weft_vp());
	}
	struct sig_rec *r = rec_get();
	if (!r)
		return EAGAIN;
	r->info = *si;
	r->info.si_signo = sig;
	r->shared = shared;
	r->next = NULL;
	struct sig_rec **tail = q;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	*pend |= BIT(sig);
	return 0;
}

/* Take the oldest instance of sig off (q, pend) into *si. */
static void dequeue(struct sig_rec **q, uint64_t *pend, int sig, siginfo_t *si)
{
	bool more = false, taken = false;
	for (struct sig_rec **p = q; *p;) {
		struct sig_rec *r = *p;
		if (r->info.si_signo != sig) {
			p = &r->next;
			continue;
		}
		if (taken) {
			more = true;
			break;
		}
		*si = r->info;
		*p = r->next;
		rec_put(r);
		taken = true;
	}
	if (!taken) {
		memset(si, 0, sizeof *si);
		si->si_signo = sig;
	}
	if (!more)
		*pend &= ~BIT(sig);
}

static void drop_all(struct sig_rec **q, uint64_t *pend)
{
	while (*q) {
		struct sig_rec *r = *q;
		*q = r->next;
		rec_put(r);
	}
	*pend = 0;
}

static inline void ready_update(struct ut *t)
{
	t->sig_ready = (t->sig_pend & ~t->sig_mask) != 0;
}

/* ---- the tally and the carrier's kernel mask ---------------------------- */

static void tally(uint64_t mask, int by)
{
	if (!mask)
		return;
	__weft_sig_masked_uts += (uint32_t)by;
	for (uint64_t m = mask; m; m &= m - 1) {
		int i = __builtin_ctzll(m);
		blocked_n[i] += (uint32_t)by;
		if (blocked_n[i])
			blocked_any |= 1ull << i;
		else
			blocked_any &= ~(1ull << i);
	}
}

/* What every carrier's kernel mask should block now: what every counted
 * UT blocks and no sigwait waits for, and what back-pressure holds. */
static uint64_t kwant(void)
{
	uint64_t all = 0;
	if (__weft_sig_counted && __weft_sig_masked_uts == __weft_sig_counted) {
		for (uint64_t m = blocked_any; m; m &= m - 1)
			if (blocked_n[__builtin_ctzll(m)] == __weft_sig_counted)
				all |= m & -m;
	}
	return (all | kforce) & ~waitset & routable();
}

/* Put the kernel mask Weft keeps on the carrier right, if it changed.  In
 * the dispatcher the kernel puts back the interrupted context's mask at
 * sigreturn, so signal.c writes vp->sig_kmask there instead.
 *
 * M:N: the tally is the process's, but a carrier's mask can be set only
 * by that carrier, so the other VPs' masks lag behind a change until
 * they next come here (a tally change of theirs, or the idle loop,
 * __weft_sig_kmask_refresh).  A lagging carrier that lets a signal in
 * that every UT blocks gives it back to the kernel (route, below): the
 * masks are hints and the kernel's pending set stays the truth. */
static void kmask_apply(struct vp *vp)
{
	uint64_t want = kwant() | vp->sig_hold;
	if (want == vp->sig_kmask)
		return;
	vp->sig_kmask = want;
	if (!__weft_on_vp_thread(vp))
		return;
	/* keep what the dispatcher deferred blocked until it is delivered */
	kset(vp, want);
}

void __weft_sig_init_main(struct ut *t)
{
	uint64_t m = 0;
	kmask(SIG_BLOCK, NULL, &m);
	t->sig_mask = m & ~(BIT(SIGKILL) | BIT(SIGSTOP));
	t->sig_alt.ss_flags = SS_DISABLE;
	t->sig_counted = 1;
	__weft_sig_counted++;
	tally(t->sig_mask, 1);
	main_ut = t;
	struct vp *vp = __weft_vp();
	vp->sig_kmask = t->sig_mask & routable();
}

void __weft_sig_born_slow(struct ut *t)
{
	t->sig_mask &= ~(BIT(SIGKILL) | BIT(SIGSTOP));
	t->sig_counted = 1;
	__weft_sig_counted++;
	tally(t->sig_mask, 1);
	kmask_apply(__weft_vp());
}

static void route_shared(struct vp *vp, int sig, siginfo_t *si, ucontext_t *uc, struct ut *running);

/* t exits.  Its pending signals that were sent to it (pthread_kill, raise,
 * its SIGEV_THREAD_ID timer) go with it, as the kernel discards a thread's
 * own pending set; those routed to it from the process (shared) never
 * reached a handler, and go to another UT that lets them through, or back
 * to the process's pending set: under the kernel they would have stayed
 * in the process's shared set, and no signal sent to a process is lost
 * because one of its threads ended (M:N: a UT running on another VP takes
 * a signal only at its next safe point, which an exit never reaches:
 * mn_signal_outlives_taker lost up to 2,043 of 20,000 so). */
static __attribute__((noinline)) void sig_gone_slow(struct ut *t);

void __weft_sig_gone(struct ut *t)
{
	/* every exit of a UT that has no signal queued, pending or blocked,
	 * and is not main: only the count of UTs to route to changes */
	if (likely(!t->sig_q && !t->sig_pend && t != main_ut && !t->sig_mask && !__weft_sig_masked_uts)) {
		t->sig_ready = 0;
		if (t->sig_counted) {
			t->sig_counted = 0;
			__weft_sig_counted--;
		}
		return;
	}
	sig_gone_slow(t);
}

static __attribute__((noinline)) void sig_gone_slow(struct ut *t)
{
	struct sig_rec *shared = NULL, **tail = &shared;
	for (struct sig_rec **p = &t->sig_q; *p;) {
		struct sig_rec *r = *p;
		if (!r->shared) {
			p = &r->next;
			continue;
		}
		*p = r->next;
		r->next = NULL;
		*tail = r;
		tail = &r->next;
	}
	if (t->sig_pend)
		drop_all(&t->sig_q, &t->sig_pend);
	t->sig_ready = 0;
	if (t == main_ut)
		main_ut = NULL;
	if (t->sig_counted) {
		t->sig_counted = 0;
		__weft_sig_counted--;
		if (t->sig_mask || __weft_sig_masked_uts) {
			tally(t->sig_mask, -1);
			kmask_apply(__weft_vp());
		}
	}
	while (shared) {
		struct sig_rec *r = shared;
		shared = r->next;
		siginfo_t si = r->info;
		rec_put(r);
		route_shared(__weft_vp(), si.si_signo, &si, NULL, NULL);
	}
}

void __weft_sig_forget(struct ut *t)
{
	if (t->sig_pend)
		drop_all(&t->sig_q, &t->sig_pend);
	t->sig_ready = 0;
	t->sig_counted = 0;
}

void __weft_sig_fork_child(struct ut *self)
{
	/* the other UTs left the tally as they went (fork.c); the process's
	 * and the caller's pending signals are not the child's */
	drop_all(&proc_q, &proc_pend);
	drop_all(&self->sig_q, &self->sig_pend);
	self->sig_ready = 0;
	main_ut = self;
	kforce = 0;
	waitset = 0;
	n_timer_owners = 0;                   /* the kernel's timers are not the child's */
	memset(blocked_n, 0, sizeof blocked_n);
	blocked_any = 0;
	__weft_sig_counted = 0;
	__weft_sig_masked_uts = 0;
	if (self->sig_counted) {
		__weft_sig_counted = 1;
		tally(self->sig_mask, 1);
	}
	struct vp *vp = __weft_vp();
	vp->sig_kmask = ~0ull;                /* unknown: set it afresh */
	kmask_apply(vp);
}

/* ---- masks ---------------------------------------------------------------- */

static void deliver_proc_pending(struct ut *t);

/* t's mask becomes m (the running UT's, or a parked one's at its wake). */
static void mask_set(struct vp *vp, struct ut *t, uint64_t m)
{
	m &= ~(BIT(SIGKILL) | BIT(SIGSTOP));
	uint64_t old = t->sig_mask;
	if (m == old)
		return;
	if (t->sig_counted) {
		tally(old, -1);
		tally(m, 1);
	}
	t->sig_mask = m;
	ready_update(t);
	if (proc_pend & old & ~m)
		deliver_proc_pending(t);
	kmask_apply(vp);
	if (t == vp->cur && t->sig_ready)
		vp->signals = 1;
}

int __weft_sig_setmask(int how, const sigset_t *set, sigset_t *old)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	uint64_t m = self->sig_mask;
	if (set) {
		/* glibc's pthread_sigmask: its own signals are never blocked */
		uint64_t n = bits_of(set) & ~(BIT(32) | BIT(33));
		switch (how) {
		case SIG_BLOCK: m |= n; break;
		case SIG_UNBLOCK: m &= ~n; break;
		case SIG_SETMASK: m = n; break;
		default: return EINVAL;
		}
	}
	if (old)
		to_set(old, self->sig_mask);
	if (set)
		mask_set(vp, self, m);
	return 0;
}

void __weft_sig_mask_swap(const sigset_t *mask, uint64_t *old)
{
	struct vp *vp = __weft_vp();
	*old = vp->cur->sig_mask;
	mask_set(vp, vp->cur, bits_of(mask) & ~(BIT(32) | BIT(33)));
}

void __weft_sig_mask_restore(uint64_t old)
{
	struct vp *vp = __weft_vp();
	mask_set(vp, vp->cur, old);
}

void __weft_sig_pending(sigset_t *set)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	uint64_t k = 0;
	/* what the kernel holds for the process (blocked on the carrier) */
	__weft_raw_syscall6(SYS_rt_sigpending, (long)&k, 8, 0, 0, 0, 0);
	to_set(set, ((k & vp->sig_kmask) | self->sig_pend | proc_pend) & self->sig_mask);
}

/* ---- running a handler on the running UT ------------------------------- */

/* While a handler runs, the kernel mask stays what Weft keeps (K and the
 * deferred): the handler's own mask is its UT's, which routing reads, so a
 * signal that arrives meanwhile goes to a UT that lets it through, or
 * waits pending on this one until the handler is done; arriving in the
 * handler's code (the program's), the runtime's state is whole. */
void __weft_sig_kmask_sync(struct vp *vp, uint64_t taken)
{
	/* A standard signal taken from the kernel that waits for its handler
	 * on the running UT stays blocked until that handler starts: under
	 * NPTL the kernel runs the handler at once, with the signal blocked,
	 * so its next instance waits in the kernel's pending set (a timer's
	 * counts its overruns there).  Letting it in before the handler
	 * started took the timer's next expiry as a second instance: the
	 * handler ran twice, or read an overrun count of 0
	 * (mn_timer_signal_one_instance).  The hold (vp->sig_hold) ends when
	 * the handler starts (run_handler: its own mask takes over) or
	 * __weft_sig_run_cur returns, whatever ran; until then every
	 * kmask_apply keeps it (a record's release in between would
	 * otherwise let the signal in). */
	struct ut *cur = vp->cur;
	uint64_t hold = 0;
	if (cur && cur->state == UT_RUNNING)
		hold = taken & cur->sig_pend & ~cur->sig_mask & (BIT(32) - 1);
	vp->sig_hold = hold;
	vp->sig_kmask |= hold;
	kset(vp, vp->sig_kmask);
}

void __weft_sig_kmask_refresh(struct vp *vp)
{
	kmask_apply(vp);
}

struct alt_call {
	const struct sigaction *a;
	int sig;
	siginfo_t *si;
	ucontext_t *uc;
};

static void call_on_alt(void *p)
{
	struct alt_call *c = p;
	__weft_sig_call_handler(c->a, c->sig, c->si, c->uc);
}

/* t has a sigaltstack of its own.  A context that never set one and was
 * not made by pthread_create — a kernel thread's home, a VP's idle
 * context, a guest — has sig_alt all zero: none either (the sanitizers
 * ask sigaltstack from such code, and ASan took {NULL, 0, 0} for a stack
 * to unpoison at address 0). */
static inline bool alt_set(const struct ut *t)
{
	return !(t->sig_alt.ss_flags & SS_DISABLE) && t->sig_alt.ss_size != 0;
}

static bool on_altstack(const struct ut *t, uintptr_t sp);

/* Call the handler: on the UT's sigaltstack if it asked (SA_ONSTACK) and
 * the UT has one it is not on already, else on the stack it is on. */
static void call_handler_on(struct ut *self, const struct sigaction *a, int sig, siginfo_t *si, ucontext_t *uc)
{
	if (!(a->sa_flags & SA_ONSTACK) || !alt_set(self) ||
	    on_altstack(self, (uintptr_t)__builtin_frame_address(0))) {
		__weft_sig_call_handler(a, sig, si, uc);
		return;
	}
	stack_t alt = self->sig_alt;
	uc->uc_stack = alt;
	if ((unsigned)alt.ss_flags & SS_AUTODISARM) {
		self->sig_alt.ss_flags = SS_DISABLE;    /* until the handler is done */
		self->sig_alt.ss_sp = NULL;
		self->sig_alt.ss_size = 0;
	}
	struct alt_call c = { a, sig, si, uc };
	/* a copy-stack UT's frames end here while the handler runs (and
	 * may switch) on the other stack (copystack.c) */
	uintptr_t mark = __weft_cs_offstack_enter(self, __weft_arch_sp_now());
	__weft_arch_call_on((char *)alt.ss_sp + alt.ss_size, call_on_alt, &c);
	__weft_cs_offstack_leave(self, mark);
	if ((unsigned)alt.ss_flags & SS_AUTODISARM)
		self->sig_alt = alt;
}

/* M:N: the program's handler runs without the runtime lock, like any of
 * the program's code, and may go on on another VP: the VP it returns on. */
static __attribute__((noinline)) struct vp *call_handler_unlocked(struct vp *vp, struct ut *self,
								    const struct sigaction *a, int sig,
								    siginfo_t *si, ucontext_t *uc)
{
	bool let_go = __weft_mn && vp->in_weft;
	if (let_go) {
		vp->in_weft = 0;
		__weft_rtl_unlock();
	}
	call_handler_on(self, a, sig, si, uc);
	if (!let_go)
		return vp;
	/* back into Weft as an entry comes: the monitor may have taken the
	 * VP while the handler sat in a blocking call (rt.h,
	 * __weft_rtl_lock_entry), and the UT comes back to one first */
	vp = __weft_vp();
	if (!vp->in_weft) {
		(void)__weft_enter();
		vp = __weft_vp();
	}
	return vp;
}

/* Run `a` for sig on the running UT, on its own stack or sigaltstack. */
static void run_handler(struct vp *vp, const struct sigaction *a, int sig, siginfo_t *si, ucontext_t *kuc)
{
	struct ut *self = vp->cur;
	uint64_t before = self->sig_mask;
	uint64_t during = before | bits_of(&a->sa_mask);
	if (!(a->sa_flags & SA_NODEFER))
		during |= BIT(sig);
	if (a->sa_flags & SA_RESETHAND)
		__weft_sig_reset(sig);
	struct sig_frame frame = { self->sig_frames, (uintptr_t)__builtin_frame_address(0), before };
	self->sig_frames = &frame;
	vp->sig_hold &= ~BIT(sig);                /* the handler's mask takes over */
	mask_set(vp, self, during);
	ucontext_t local, *uc = kuc;
	if (!uc) {
		getcontext(&local);
		uc = &local;
	}
	sigset_t kernels = uc->uc_sigmask;
	to_set(&uc->uc_sigmask, before);          /* the handler sees the UT's mask */
	self->sig_handled++;
	if (!(a->sa_flags & SA_RESTART))
		self->sig_restart = 0;
	struct vp *now = call_handler_unlocked(vp, self, a, sig, si, uc);
	/* what the handler left in the context is the mask after it */
	uint64_t after = bits_of(&uc->uc_sigmask);
	uc->uc_sigmask = kernels;
	self->sig_frames = frame.outer;
	mask_set(now, self, after);
}

/* Deliver one of the running UT's signals, by its action. */
static void deliver(struct vp *vp, int sig, siginfo_t *si, ucontext_t *kuc)
{
	if (!__weft_sig_dispatched(sig)) {
		/* a synchronous signal, glibc's own, the tick's or the dump's
		 * number sent by a program: the kernel runs what is installed,
		 * here, on this UT */
		uint64_t one = BIT(sig);
		kmask(SIG_UNBLOCK, &one, NULL);
		__weft_raw_syscall6(SYS_tgkill, getpid(), vp->tid, sig, 0, 0, 0);
		return;
	}
	struct sigaction a;
	__weft_sig_action(sig, &a);
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_handler == SIG_DFL) {
		__weft_sig_default(sig);
		return;
	}
	run_handler(vp, &a, sig, si, kuc);
}

/* The running UT's due signals, lowest number first as Linux delivers
 * them.  A handler may make more due (it unblocks, it raises): run those
 * too, as the kernel would at the handler's sigreturn. */
static bool run_due(struct vp *vp)
{
	struct ut *self = vp->cur;
	bool ran = false;
	while (self->sig_ready) {
		int sig = __builtin_ctzll(self->sig_pend & ~self->sig_mask) + 1;
		siginfo_t si;
		dequeue(&self->sig_q, &self->sig_pend, sig, &si);
		ready_update(self);
		deliver(vp, sig, &si, NULL);
		vp = __weft_vp();                 /* M:N: the handler may have moved it */
		ran = true;
	}
	return ran;
}

/* The hold __weft_sig_kmask_sync set ends with the call that set it. */
static void hold_end(struct vp *vp)
{
	if (!vp->sig_hold)
		return;
	vp->sig_hold = 0;
	kmask_apply(vp);
}

bool __weft_sig_run_cur(struct vp *vp)
{
	struct ut *self = vp->cur;
	if (!self || self->state != UT_RUNNING || !self->sig_ready || __weft_noswitch(vp)) {
		hold_end(vp);
		return false;
	}
	int saved_errno = *vp->errnop;
	if (__weft_mn) {
		/* the handler call itself lets the lock go (run_handler) */
		self->sig_restart = 1;
		bool ran = run_due(vp);
		/* M:N: a handler that parked may go on on another VP; the
		 * VP it left drops its hold from its carrier's mask at its
		 * next mask change (kmask_apply: sig_kmask still has it) */
		struct vp *now = __weft_vp();
		if (now != vp)
			vp->sig_hold = 0;
		hold_end(now);
		*__weft_vp()->errnop = saved_errno;
		return ran;
	}
	uint8_t in_weft = vp->in_weft;
	__weft_outcall_begin(vp);
	self->sig_restart = 1;
	bool ran = run_due(vp);
	__weft_outcall_end();
	vp->in_weft = in_weft;
	hold_end(vp);
	*vp->errnop = saved_errno;
	return ran;
}

void __weft_sig_woken(struct ut *self)
{
	struct vp *vp = __weft_vp();
	self->sig_restart = 1;
	if (self != vp->cur || !self->sig_ready)
		return;
	int saved_errno = *vp->errnop;
	if (__weft_mn) {
		run_due(vp);
		*__weft_vp()->errnop = saved_errno;
		return;
	}
	uint8_t in_weft = vp->in_weft;
	__weft_outcall_begin(vp);
	run_due(vp);
	__weft_outcall_end();
	vp->in_weft = in_weft;
	*vp->errnop = saved_errno;
}

bool __weft_sig_running_takes(const struct vp *vp, int sig)
{
	const struct ut *t = vp->cur;
	return t && t->state == UT_RUNNING && !(t->sig_mask & BIT(sig)) && !(waitset & BIT(sig));
}

/* ---- sending and routing -------------------------------------------------- */

static bool interruptible(const struct ut *t)
{
	if (t->state != UT_BLOCKED)
		return false;
	return t->cancel_point == CP_WAITING || t->sig_intr;
}

/* t has sig pending and may take it: see that its handler runs. */
static void notify(struct vp *vp, struct ut *t, int sig)
{
	if (!t->sig_ready)
		return;
	if (t == vp->cur && t->state == UT_RUNNING) {
		vp->signals = 1;
		return;
	}
	if (unlikely(__weft_mn) && t->state == UT_RUNNING) {
		/* M:N: it runs on another VP, maybe in its own code for long:
		 * that VP's next dispatch (a kick now) delivers it */
		for (unsigned i = 0; i < __weft_proc.nvps; i++) {
			struct vp *v = &__weft_vps[i];
			if (v->cur == t) {
				v->signals = 1;
				__weft_mn_kick(v);
			}
		}
		return;
	}
	if (interruptible(t)) {
		__weft_hooks.wait_interrupted((enum wait_kind)t->wait_kind, t->wait_obj);
		t->sig_woken = (uint8_t)sig;
		__weft_unpark_nopreempt(t, EINTR);
		if (t->prio > vp->cur->prio)
			vp->dispatch_pending = 1;
	}
}

static bool default_ignored(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

int __weft_sig_send(struct ut *t, int sig, const siginfo_t *si)
{
	struct vp *vp = __weft_vp();
	if (sig < 1 || sig >= NSIG_ALL)
		return EINVAL;
	if (t->guest_kt || t->state == UT_ZOMBIE || t->state == UT_EXITING)
		return 0;                 /* the caller sends those to the kernel */
	if (__weft_sig_dispatched(sig) && !(t->sig_mask & BIT(sig)) && !(t->sig_wait & BIT(sig))) {
		/* an action that does not need the UT: do it now, as the
		 * kernel does at generation */
		struct sigaction a;
		__weft_sig_action(sig, &a);
		if (a.sa_handler == SIG_IGN)
			return 0;
		if (a.sa_handler == SIG_DFL) {
			if (!default_ignored(sig))
				__weft_sig_default(sig);
			return 0;
		}
	}
	if (t->sig_wait & BIT(sig)) {
		/* it waits for this one in sigwait & co */
		struct sigwait_req *req = t->wait_obj;
		if (t->state == UT_BLOCKED && req) {
			req->sig = sig;
			req->info = *si;
			__weft_unpark_nopreempt(t, 0);
			if (t->prio > vp->cur->prio)
				vp->dispatch_pending = 1;
			return 0;
		}
	}
	int e = enqueue(&t->sig_q, &t->sig_pend, sig, si, false);
	if (e)
		return e;
	ready_update(t);
	notify(vp, t, sig);
	return 0;
}

void __weft_sig_timer_owner(int kid, struct ut *t)
{
	for (unsigned i = 0; i < n_timer_owners; i++)
		if (timer_owners[i].kid == kid) {
			if (t) {
				timer_owners[i].owner = __weft_handle(t);
			} else {
				timer_owners[i] = timer_owners[--n_timer_owners];
			}
			return;
		}
	if (t && n_timer_owners < TIMER_OWNERS) {
		timer_owners[n_timer_owners].kid = kid;
		timer_owners[n_timer_owners].owner = __weft_handle(t);
		n_timer_owners++;
	}
}

static struct ut *timer_owner(const siginfo_t *si)
{
	if (si->si_code != SI_TIMER || !n_timer_owners)
		return NULL;
	for (unsigned i = 0; i < n_timer_owners; i++)
		if (timer_owners[i].kid == si->si_timerid)
			return __weft_ut_lookup(timer_owners[i].owner);
	return NULL;
}

/* A UT in sigsuspend or pause that lets sig through, if any. */
static struct ut *suspended_taker(int sig)
{
	struct ut *t = sigwaiters.head;
	if (!t)
		return NULL;
	do {
		if (!t->sig_wait && !(t->sig_mask & BIT(sig)))
			return t;
		t = t->q_next;
	} while (t != sigwaiters.head);
	return NULL;
}

static bool may_take(const struct ut *t, int sig)
{
	return t && t->sig_counted && !t->guest_kt && !(t->sig_mask & BIT(sig)) &&
	       (t->state == UT_READY || t->state == UT_BLOCKED || t->state == UT_RUNNING);
}

/* A sigwait-family UT waiting for sig, if any: it takes si. */
static bool give_to_waiter(struct vp *vp, int sig, const siginfo_t *si)
{
	if (!(waitset & BIT(sig)) || !sigwaiters.head)
		return false;
	struct ut *t = sigwaiters.head;
	do {
		if (t->sig_wait & BIT(sig)) {
			struct sigwait_req *req = t->wait_obj;
			req->sig = sig;
			req->info = *si;
			__weft_unpark_nopreempt(t, 0);
			if (t->prio > vp->cur->prio)
				vp->dispatch_pending = 1;
			return true;
		}
		t = t->q_next;
	} while (t != sigwaiters.head);
	return false;
}

struct find_ctx {
	uint64_t bit;
	struct ut *best;
};

/* A UT that may take the signal: a parked one whose wait it ends first
 * (it is waiting for something to happen), else any other. */
static void find_taker(struct ut *t, void *p)
{
	struct find_ctx *c = p;
	if (t->guest_kt || !t->sig_counted || (t->sig_mask & c->bit))
		return;
	if (t->state != UT_READY && t->state != UT_BLOCKED && t->state != UT_RUNNING)
		return;
	if (!c->best || (interruptible(t) && !interruptible(c->best)))
		c->best = t;
}

/* A kernel timer's signal (SI_TIMER) that a lagging M:N carrier took
 * while every UT blocked it stays here (route: a copy given back to the
 * kernel would not be the timer's own, and the timer's next expiry would
 * make a second instance).  The timer's later expiries then wait in the
 * kernel, counting overruns on the timer's own instance.  A standard
 * signal has one instance under NPTL, so when the kernel holds the
 * signal too, the kernel's is the one delivered (its si_overrun and
 * timer_getoverrun count every expiry since) and this copy is dropped.
 * True if Weft's oldest instance of sig was such a copy and is gone. */
static bool drop_stale_timer_copy(int sig)
{
	if (sig >= SIGRTMIN)
		return false;
	const struct sig_rec *r = proc_q;
	while (r && r->info.si_signo != sig)
		r = r->next;
	if (!r || r->info.si_code != SI_TIMER)
		return false;
	uint64_t k = 0;
	if (__weft_raw_syscall6(SYS_rt_sigpending, (long)&k, 8, 0, 0, 0, 0) != 0 || !(k & BIT(sig)))
		return false;
	siginfo_t gone;
	dequeue(&proc_q, &proc_pend, sig, &gone);
	return true;
}

/* Pending on the process: the first UT to unmask it takes it. */
static void deliver_proc_pending(struct ut *t)
{
	struct vp *vp = __weft_vp();
	uint64_t due = proc_pend & ~t->sig_mask;
	while (due) {
		int sig = __builtin_ctzll(due) + 1;
		siginfo_t si;
		if (drop_stale_timer_copy(sig)) {
			due = proc_pend & ~t->sig_mask;
			continue;
		}
		dequeue(&proc_q, &proc_pend, sig, &si);
		if (enqueue(&t->sig_q, &t->sig_pend, sig, &si, true) != 0)
			break;
		ready_update(t);
		notify(vp, t, sig);
		due = proc_pend & ~t->sig_mask;
	}
}

/* M:N: every UT blocks sig, but this carrier's mask lagged (another VP
 * changed the tally) and the kernel handed it over; or no record is left
 * for it (back-pressure another VP's carrier had started): give it back to
 * the kernel's pending set, where NPTL would have left it and where
 * another process sees it, and block it here from now (the caller puts
 * vp->sig_kmask on the carrier).  The kernel lets a process queue any
 * siginfo to itself only from its first thread (the tid that is the
 * pid); from another carrier a kill() signal is sent again by kill(),
 * whose si_pid and si_uid are then the process's own, and any other kind
 * stays pending in Weft (proc_pend) as before.  A kernel timer's signal
 * (SI_TIMER) stays in Weft too: a copy queued again would not be the
 * timer's own instance, which counts the overruns, and the timer's next
 * expiry would queue that one beside it (drop_stale_timer_copy keeps one
 * instance of a standard signal; two timer signals of a real-time number
 * may then both be delivered, where NPTL's kernel would have held one),
 * unless !keep_timer: Weft has no record left for it.
 * True if the kernel has it. */
static bool requeue_to_kernel(struct vp *vp, int sig, siginfo_t *si, bool keep_timer)
{
	uint64_t one = BIT(sig);
	vp->sig_kmask = kwant();
	kmask(SIG_BLOCK, &one, NULL);             /* not back here at once */
	if (si->si_code == SI_TIMER && keep_timer)
		return false;
	pid_t pid = getpid();
	if (__weft_raw_syscall6(SYS_rt_sigqueueinfo, pid, sig, (long)si, 0, 0, 0) == 0)
		return true;
	return si->si_code == SI_USER && __weft_raw_syscall6(SYS_kill, pid, sig, 0, 0, 0, 0) == 0;
}

/* Give sig to `to`, which may take it: at once if it is the running UT
 * and the dispatcher called (uc), to its sigwait if it waits for it, else
 * pending on it until its next safe point.  `shared`: a process-directed
 * instance, which goes back to the process if `to` exits before taking it
 * (__weft_sig_gone), as the kernel's shared pending set would keep it. */
static void give_to(struct vp *vp, struct ut *to, int sig, siginfo_t *si, ucontext_t *uc, bool shared)
{
	struct ut *cur = vp->cur;
	if (to == cur && cur->state == UT_RUNNING && !(cur->sig_mask & BIT(sig)) && uc) {
		/* the running UT takes it at once, as the kernel's delivery
		 * (signal.c brackets this with the noswitch mark over
		 * protected code) */
		int saved_errno = *vp->errnop;
		cur->sig_restart = 1;
		deliver(vp, sig, si, uc);
		*__weft_vp()->errnop = saved_errno;
		return;
	}
	if (to->sig_wait & BIT(sig)) {
		if (__weft_sig_send(to, sig, si) == 0)
			return;
	}
	if (enqueue(&to->sig_q, &to->sig_pend, sig, si, shared) != 0) {
		/* no record left (M:N: a carrier whose mask had not yet
		 * followed the back-pressure): the kernel keeps it, blocked
		 * here, until the UTs have taken what is queued */
		requeue_to_kernel(vp, sig, si, false);
		return;
	}
	ready_update(to);
	notify(vp, to, sig);
}

/* A process-directed signal, in Mueller's order: a UT waiting for it in
 * sigwait & co; then one waiting for any signal (sigsuspend, pause);
 * then, as Linux gives a process's signal to its main thread first, UT 1;
 * then `running` (the running UT, or NULL); then any that lets it
 * through; else it stays pending on the process. */
static void route_shared(struct vp *vp, int sig, siginfo_t *si, ucontext_t *uc, struct ut *running)
{
	struct ut *to = NULL;
	if (give_to_waiter(vp, sig, si))
		return;
	if ((to = suspended_taker(sig)) != NULL) {
	} else if (may_take(main_ut, sig)) {
		to = main_ut;
	} else if (running && !(running->sig_mask & BIT(sig))) {
		to = running;
	} else if (blocked_n[sig - 1] < __weft_sig_counted) {
		/* some UT lets it through (the tally says so): find it */
		struct find_ctx c = { BIT(sig), NULL };
		__weft_ut_foreach(find_taker, &c);
		to = c.best;
	}
	if (to) {
		give_to(vp, to, sig, si, uc, true);
		return;
	}
	/* nobody takes it now: pending on the process */
	struct sigaction a;
	__weft_sig_action(sig, &a);
	if (a.sa_handler == SIG_IGN)
		return;
	if (unlikely(__weft_mn) && si->si_code != SI_TKILL && (kwant() & BIT(sig)) &&
	    requeue_to_kernel(vp, sig, si, true))
		return;
	if (enqueue(&proc_q, &proc_pend, sig, si, true) != 0)
		requeue_to_kernel(vp, sig, si, false);   /* no record left: the kernel keeps it */
}

void __weft_sig_route(struct vp *vp, int sig, siginfo_t *si, ucontext_t *uc)
{
	struct ut *cur = vp->cur;
	bool running = cur && cur->state == UT_RUNNING;
	struct ut *armer = timer_owner(si);
	if (armer && armer->state != UT_ZOMBIE && armer->state != UT_EXITING)
		give_to(vp, armer, sig, si, uc, false);   /* its own SIGEV_THREAD_ID timer */
	else if (si->si_code == SI_TKILL && running)
		give_to(vp, cur, sig, si, uc, false);     /* tgkill to the carrier: the running UT's */
	else
		route_shared(vp, sig, si, uc, running ? cur : NULL);
}

/* ---- the sigwait family, sigsuspend, pause ------------------------------ */

bool __weft_sig_waiting(void)
{
	return sigwaiters.head != NULL;
}

static void waitset_update(struct vp *vp)
{
	uint64_t w = 0;
	struct ut *t = sigwaiters.head;
	if (t) {
		do {
			w |= t->sig_wait;
			t = t->q_next;
		} while (t != sigwaiters.head);
	}
	waitset = w;
	kmask_apply(vp);
}

/* Take one of `set` pending for the caller or the process, or held by the
 * kernel: the signal number, or 0. */
static int take_pending(struct vp *vp, uint64_t set, siginfo_t *info)
{
	struct ut *self = vp->cur;
	uint64_t mine = self->sig_pend & set;
	if (mine) {
		int sig = __builtin_ctzll(mine) + 1;
		dequeue(&self->sig_q, &self->sig_pend, sig, info);
		ready_update(self);
		return sig;
	}
	uint64_t proc = proc_pend & set;
	while (proc) {
		int sig = __builtin_ctzll(proc) + 1;
		if (drop_stale_timer_copy(sig)) {
			proc = proc_pend & set;
			continue;
		}
		dequeue(&proc_q, &proc_pend, sig, info);
		return sig;
	}
	struct timespec zero = { 0, 0 };
	long r = __weft_raw_syscall6(SYS_rt_sigtimedwait, (long)&set, (long)info, (long)&zero, 8, 0, 0);
	return r > 0 ? (int)r : 0;
}

int __weft_sig_wait(const sigset_t *set, siginfo_t *info, int64_t deadline, bool eintr)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	uint64_t want = bits_of(set) & ~(BIT(SIGKILL) | BIT(SIGSTOP) | BIT(32) | BIT(33));
	siginfo_t local;
	if (!info)
		info = &local;
	for (;;) {
		/* (an empty set is a plain wait: the timeout, or a handler) */
		int sig = want ? take_pending(vp, want, info) : 0;
		if (sig)
			return sig;
		/* the dispatcher must see them arrive, whatever their action */
		for (uint64_t m = want & routable(); m; m &= m - 1)
			__weft_sig_intercept(__builtin_ctzll(m) + 1);
		/* the router writes the request while the UT waits: a
		 * copy-stack UT's lives off its stack (copystack.c) */
		struct sigwait_req on_stack, *req = __weft_wait_mem(self, sizeof *req);
		if (!req)
			req = &on_stack;
		req->sig = 0;
		self->sig_wait = want;
		waitset |= want;
		kmask_apply(vp);
		/* what the kernel held may have come in just now (deferred):
		 * routed before this UT waits on the queue, it is left pending
		 * for the process or this UT, and taken at the loop's top (it
		 * was not: the wait slept to its deadline with the signal
		 * there, api_fuzz's SIGCHLD, 10 s) */
		if (vp->signals)
			__weft_signals_deliver(vp);
		int r = 0;
		if (!req->sig && (self->sig_wait || !want) && !(want & (self->sig_pend | proc_pend)))
			r = __weft_park_cancellable(&sigwaiters, deadline, WAIT_PAUSE, req);
		vp = __weft_vp();                 /* M:N: it may go on on another VP */
		self->sig_wait = 0;
		waitset_update(vp);
		int got = req->sig;
		if (got)
			*info = req->info;
		if (req != &on_stack)
			__weft_wait_mem_put(self, req);
		if (got)
			return got;
		if (r == ECANCELED)
			return -ECANCELED;
		if (r == ETIMEDOUT)
			return -EAGAIN;
		if (r == EINTR && eintr)
			return -EINTR;
	}
}

int __weft_sig_suspend(const sigset_t *mask)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	uint64_t old = self->sig_mask;
	uint32_t handled = self->sig_handled;
	if (mask)
		mask_set(vp, self, bits_of(mask) & ~(BIT(32) | BIT(33)));
	int r = 0;
	for (;;) {
		/* M:N: a handler and the park may each move self to another
		 * VP: act on the one it runs on */
		vp = __weft_vp();
		if (vp->signals)
			__weft_signals_deliver(vp);
		vp = __weft_vp();
		if (self->sig_ready)
			__weft_sig_run_cur(vp);
		if (self->sig_handled != handled)
			break;
		r = __weft_park_cancellable(&sigwaiters, -1, WAIT_PAUSE, NULL);
		if (r == ECANCELED)
			break;
	}
	vp = __weft_vp();
	if (mask)
		mask_set(vp, self, old);
	return r == ECANCELED ? ECANCELED : EINTR;
}

/* ---- sigaltstack ------------------------------------------------------------ */

static bool on_altstack(const struct ut *t, uintptr_t sp)
{
	return alt_set(t) && sp > (uintptr_t)t->sig_alt.ss_sp &&
	       sp <= (uintptr_t)t->sig_alt.ss_sp + t->sig_alt.ss_size;
}

/* The UT that asks.  sigaltstack makes no entry into Weft (the sanitizers
 * call it at any moment: ASan's no-return hook, before every UT's exit),
 * so the caller may be away: the monitor took its VP while it sat in a
 * call Weft does not wrap, and the VP's cur is NULL or another UT (a NULL
 * cur here was a UBSan report, and its pthread_self went home holding the
 * runtime lock).  An away UT is its kernel thread's k->away, and its
 * sig_alt is its own: nothing else writes it while it is away.  NULL: no
 * UT (a VP between two carriers); the kernel thread's own is asked. */
static struct ut *altstack_caller(void)
{
	struct vp *vp = __weft_vp();
	struct ut *c = __atomic_load_n(&vp->cur, __ATOMIC_ACQUIRE);
	if (c && !c->away && __weft_sp_in(c, __weft_arch_sp_now()))
		return c;
	if (__weft_where(vp) == WHERE_AWAY) {
		struct kt *k = __weft_kt_by_tid((pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0));
		struct ut *x = k ? __atomic_load_n(&k->away, __ATOMIC_ACQUIRE) : NULL;
		if (x)
			return x;
	}
	return c;                         /* on a signal stack, or home */
}

int __weft_sig_altstack(const stack_t *ss, stack_t *old)
{
	struct ut *self = altstack_caller();
	if (!self) {
		long r = __weft_raw_syscall6(SYS_sigaltstack, (long)ss, (long)old, 0, 0, 0, 0);
		return r < 0 ? (int)-r : 0;
	}
	bool on = on_altstack(self, (uintptr_t)__builtin_frame_address(0));
	if (ss) {
		if (on)
			return EPERM;
		if ((unsigned)ss->ss_flags & ~(unsigned)(SS_DISABLE | SS_AUTODISARM))
			return EINVAL;
		if (!(ss->ss_flags & SS_DISABLE) && ss->ss_size < (size_t)MINSIGSTKSZ)
			return ENOMEM;
	}
	if (old) {
		*old = self->sig_alt;
		if (!alt_set(self))
			*old = (stack_t){ .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
		if (on)
			old->ss_flags = SS_ONSTACK;
	}
	if (ss) {
		if (ss->ss_flags & SS_DISABLE) {
			self->sig_alt.ss_sp = NULL;
			self->sig_alt.ss_size = 0;
			self->sig_alt.ss_flags = SS_DISABLE;
		} else {
			self->sig_alt = *ss;
		}
	}
	return 0;
}

/* ---- exec ------------------------------------------------------------------ */

/* The image exec starts takes the calling kernel thread's mask: make it the
 * running UT's (not glibc's own two, as glibc never blocks them).  Until
 * the exec, a signal that only another UT lets through waits in the
 * kernel; if the exec fails, __weft_sig_exec_failed puts the carrier's
 * mask back and it comes in. */
void __weft_sig_exec_mask(void)
{
	struct vp *vp = __weft_vp();
	uint64_t m = vp->cur->sig_mask & ~(BIT(32) | BIT(33));
	kmask(SIG_SETMASK, &m, NULL);
}

void __weft_sig_exec_failed(void)
{
	struct vp *vp = __weft_vp();
	kset(vp, vp->sig_kmask);
}

/* ---- longjmp out of a handler ---------------------------------------------- */

void __weft_sig_longjmp(uintptr_t sp)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	/* a jump out of a fault handler ends what it held (signal.c's
	 * sync_entry); one that stays inside the handler is taken for one
	 * that leaves, which only lets a second fault run the handler again */
	if (self)
		self->sync_held = 0;
	if (!self || !self->sig_frames || self->sig_frames->sp >= sp)
		return;
	uint64_t m = self->sig_mask;
	while (self->sig_frames && self->sig_frames->sp < sp) {
		m = self->sig_frames->mask;
		self->sig_frames = self->sig_frames->outer;
	}
	mask_set(vp, self, m);
}
