/*
 * handoff.c — a UT's call that blocks in the kernel does not block its VP
 * (Small and Seltzer's activations, from user space).
 *
 * Owns: the blocking bracket (__weft_blocking_begin/end) that wrappers put
 * around a call known to block, the VP's inbox of UTs back from such
 * calls, and the rejoin path.
 *
 * begin, on the carrier, with the calling UT X running:
 *   X is marked BLOCKED (WAIT_SYSCALL) and counted in vp->offvp; this
 *   kernel thread K saves the program's signal mask into the VP and blocks
 *   every signal for itself, disarms its tick, and hands the VP to a spare
 *   kernel thread (kthread.c).  From then on K touches no runtime state:
 *   it makes X's system call with raw syscall instructions only.
 * end, on K, back from the kernel:
 *   K switches from X's stack to its home context (saving X's registers
 *   there, as any switch does), the home pushes X on the VP's inbox (one
 *   CAS) and wakes the carrier (a futex wake if it sleeps idle, the tick's
 *   signal if it runs a UT), then K parks as a spare.  The carrier drains
 *   the inbox at its next scheduling point and X runs again, later, on
 *   whichever kernel thread carries the VP; the wrapper sets errno there.
 * So at most one kernel thread runs Weft's code or a UT's code at a time
 * (WEFT_VPS=1); the others are in a raw system call or parked.  No race
 * can arise between the carrier and K: K writes X's saved stack pointer
 * before the CAS that publishes X, and reads nothing of the VP.
 *
 * The VP is handed on only when another UT exists to use it; a call made
 * with no spare to be had (WEFT_MAX_KTHREADS reached, static builds,
 * WEFT_ACTIVATIONS=off) blocks the VP as in M:1 — that VP only: under
 * M:N it lets the runtime lock go for the call's length (kept_call).
 *
 * Cancellation points among these calls (msgrcv, F_SETLKW, fsync, ...)
 * are made cancellable (__weft_blocking_cancellable_b): the call is
 * cancellable.S's, K lets the tick's signal in for its length, and the UT
 * names K in ut->csys_tid, so that pthread_cancel can kick K: the kick's
 * handler skips the call if it has not been made, else the kernel ends it
 * with EINTR, and the UT acts on the request when it is back on the VP.
 * Weft's own signals are then the only ones K takes, so an EINTR of a
 * handed call with no request due is Weft's, and the call is made again.
 *
 * A call kept on the VP is made in the same stretch, cancellation point
 * or not (kept_call), so that a program signal its UT takes ends it there
 * (signal.c's dispatcher, preempt.c's tick for a signal sent from another
 * VP): the handler runs before the call is made again, as the kernel runs
 * it before it restarts a call, and not when the call returns
 * (restart_after_handlers).
 *
 * Async readers: the inbox is pushed by any kernel thread (atomic) and
 * taken whole by the carrier's mainline (atomic exchange); ut->csys_tid
 * is read by pthread_cancel on any kernel thread (seq_cst on both sides:
 * the request is published before the tid is read, the tid before the
 * bits are looked at).
 */
#include "rt.h"
#include "../arch/arch.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* rt.h says who sets and who reads it. */
bool __weft_carriers_pinned;

void __weft_pin_carriers(void)
{
	__atomic_store_n(&__weft_carriers_pinned, true, __ATOMIC_RELAXED);
}

/* A kernel thread to hand the VP to around a blocking call, or NULL: the
 * call then blocks in place (alone, inside a handler that must not
 * switch, no home for this kernel thread, no spare to be had, a tracer's
 * carriers pinned: rt.h). */
static struct kt *handoff_target(struct vp *vp)
{
	if (__weft_proc.live < 2 || __weft_noswitch(vp) || !__weft_activations_on() ||
	    __atomic_load_n(&__weft_carriers_pinned, __ATOMIC_RELAXED))
		return NULL;
	if (__weft_kt_home_ready(vp->carrier) != 0)
		return NULL;
	return __weft_kt_spare_get();
}

void __weft_blocking_begin(struct weft_blocking *b)
{
	struct vp *vp = __weft_vp();
	struct ut *x = vp->cur;
	b->handed = false;
	b->self = x;
	b->k = vp->carrier;
	b->caught = vp->async.caught;
	struct kt *k = vp->carrier;
	struct kt *to = handoff_target(vp);
	if (!to)
		return;
	b->handed = true;
	vp->stat.handoffs++;
	x->saved_errno = *vp->errnop;
	WEFT_STATE(x, UT_BLOCKED);
	x->wait_kind = WAIT_SYSCALL;
	x->wait_obj = NULL;
	vp->offvp++;
	/* the program's mask goes with the VP; K takes no signal off the VP */
	__weft_cur_set(vp, NULL);
	__weft_kt_let_go(k, true);
	__weft_kt_give(to);
}

void __weft_blocking_end(struct weft_blocking *b)
{
	if (likely(!b->handed))
		return;
	__weft_kt_go_home(b->k, b->self);
}

/* rt.h's __weft_cancel_due, as cancellable.S tests it */
_Static_assert(CANCEL_PENDING == 0x01 && (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_EXITING) == 0x0b,
	       "cancellable.S's WEFT_ARCH_CANCEL_MASK and WEFT_ARCH_CANCEL_DUE");

/* What one attempt at a blocking call is. */
enum { CALL_HANDED_ONLY = 1, CALL_CANCELLABLE = 2 };

/*
 * x's cancellable call, made by the kernel thread k (handed: off the VP,
 * every signal but SIGSETXID blocked, __weft_sigset_home): k is named in
 * x->csys_tid for its length, and lets the tick's signal in, the one
 * pthread_cancel kicks it with.
 */
long __weft_blocking_cancellable_call(struct ut *x, struct kt *k, bool handed, long nr, const long a[6])
{
	int tick = __weft_tick_signal();
	if (!tick)
		return __weft_raw_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	sigset_t all, in;
	if (handed) {
		__weft_sigset_home(&all);
		in = all;
		sigdelset(&in, tick);
		__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&in, 0, 8, 0, 0);
	}
	__atomic_store_n(&x->csys_tid, k->tid, __ATOMIC_SEQ_CST);
	long r = __weft_arch_cancellable_syscall(&x->cancel, nr, a);
	__atomic_store_n(&x->csys_tid, 0, __ATOMIC_RELAXED);
	if (handed)
		__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0, 0);
	return r;
}

static long blocking_call(long nr, const long args[6], const struct weft_bounce *bb, unsigned nb, unsigned how,
			  bool *weft_eintr);

/*
 * A cancellation point that is usually quick but may block (open of a
 * FIFO, msync, tcdrain, a message queue): made on the carrier, with no
 * handoff, where the monitor may take the VP from it (monitor.c: its PC
 * is cancellable.S's end, and in_weft is clear).  The carrier names
 * itself in csys_tid first: if the VP is taken and the UT cancelled while
 * away, the kick reaches this kernel thread, the call ends with EINTR and
 * the entry after it sends the UT home, where it acts.
 */
long __weft_takeable_cancellable(long nr, const long a[6])
{
	__weft_testcancel();
	struct vp *vp = __weft_vp();
	struct ut *x = vp->cur;
	__atomic_store_n(&x->csys_tid, vp->tid, __ATOMIC_SEQ_CST);
	__weft_outcall_begin(vp);
	long r = __weft_arch_cancellable_syscall(&x->cancel, nr, a);
	__weft_outcall_end();
	__atomic_store_n(&x->csys_tid, 0, __ATOMIC_RELAXED);
	if (r == -EINTR)
		__weft_testcancel();
	return r;
}

/* Calls the kernel never makes again after a handler, SA_RESTART or not
 * (signal(7)): the System V IPC waits.  Every other call made in the
 * bracket (flock, fcntl's lock waits, wait4, waitid, fsync, a file's
 * read) is made again when every handler that ran had SA_RESTART. */
static bool restarts_after_handler(long nr)
{
	switch (nr) {
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_msgsnd:
	case SYS_msgrcv:
		return false;
	default:
		return true;
	}
}

/*
 * A program signal ended the caller's kept call with EINTR (kept_call:
 * the dispatcher ended it so that the handler runs now, not when the
 * call returns).  The kernel runs the handler before it returns EINTR or
 * makes the call again: so here, the due handlers run, and true means the
 * call is to be made again (every one that ran had SA_RESTART, or none
 * ran: the signal was another UT's, and the call was never the
 * program's to lose).
 */
static bool restart_after_handlers(long nr)
{
	struct vp *vp = __weft_vp();
	vp->cur->sig_restart = 1;
	if (vp->signals)
		__weft_signals_deliver(vp);
	return __weft_sig_restartable() && restarts_after_handler(nr);
}

long __weft_blocking_syscall_b(long nr, const long args[6], const struct weft_bounce *bb, unsigned nb)
{
	for (;;) {
		bool weft;
		long r = blocking_call(nr, args, bb, nb, 0, &weft);
		if (!weft && !(r == -EINTR && restart_after_handlers(nr)))
			return r;
	}
}

long __weft_blocking_cancellable_b(long nr, const long args[6], const struct weft_bounce *bb, unsigned nb)
{
	__weft_testcancel();
	for (;;) {
		bool weft;
		long r = blocking_call(nr, args, bb, nb, CALL_CANCELLABLE, &weft);
		if (r == -EINTR)
			__weft_testcancel();     /* ended by pthread_cancel's kick */
		if (!weft && !(r == -EINTR && restart_after_handlers(nr)))
			return r;
	}
}

long __weft_blocking_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	const long args[6] = { a, b, c, d, e, f };
	return __weft_blocking_syscall_b(nr, args, NULL, 0);
}

/*
 * A copy-stack UT's blocking call (copystack.c): its kernel thread K must
 * not make the call on the UT's stack, which is the run stack other
 * copy-stack UTs of the VP need meanwhile (and the call may wait for one
 * of them).  So K switches from the UT to its home stack — the UT is then
 * parked like any, its frames on the run stack until another needs it —
 * and home hands the VP on, makes the call, writes the result into the UT
 * (cs.result) and queues it as a UT back from any blocking call.  The call
 * may read and write no memory on the UT's stack: the caller copies what
 * it names there off it first (__weft_blocking_call's bounces).
 */
static long detached_call(struct vp *vp, struct ut *x, struct kt *to, long nr, const long a[6], bool cancellable)
{
	vp->stat.handoffs++;
	x->saved_errno = *vp->errnop;
	WEFT_STATE(x, UT_BLOCKED);
	x->wait_kind = WAIT_SYSCALL;
	x->wait_obj = NULL;
	x->cs->detached = 1;
	vp->offvp++;
	__weft_cs_left(x);
	__weft_kt_call_from_home(vp->carrier, x, to, nr, a, cancellable);
	x->cs->detached = 0;
	return x->cs->result;
}

long __weft_blocking_call(long nr, const long args[6], const struct weft_bounce *bb, unsigned nb,
			  bool handed_only, bool *weft_eintr)
{
	return blocking_call(nr, args, bb, nb, handed_only ? CALL_HANDED_ONLY : 0, weft_eintr);
}

/* The call ended with EINTR: true when no program signal can have caused
 * it (Weft's tick or kick did), so the wrapper makes the call again.
 * Handed on, only Weft's own signals reach the call (every other one is
 * blocked on its kernel thread); kept, only a program signal the
 * dispatcher saw counts. */
static bool eintr_is_weft(const struct weft_blocking *b)
{
	return b->handed || __weft_vp()->async.caught == b->caught;
}

/*
 * The call kept on the VP (no spare to be had, activations off, inside a
 * handler that must not switch): under M:N it lets the runtime lock go
 * for its length, as a call out of Weft does, so that only this VP waits
 * with its caller.  Made under the lock, it stopped every other VP at its
 * next Weft call for as long as it blocked: a UT counting and yielding on
 * another VP counted 0 to 1 in the 200 ms a flock waited
 * (activations_known_calls under WEFT_MAX_KTHREADS=1, two VPs).  The
 * conditions are the lock-free tries' (rt.h, __weft_mn_may_let_go).  The
 * UT stays RUNNING on this VP throughout;
 * a tick or a signal meanwhile finds the PC in Weft's text and waits for
 * the call's epilogue, as over any call out of Weft.  M:1: the call.
 */
/* The cancellation bits of a call that is no cancellation point: never
 * due, so cancellable.S's stretch only makes the call. */
static const volatile uint8_t never_due;

static long kept_call(struct ut *x, struct kt *k, long nr, const long a[6], unsigned how)
{
	struct vp *vp = __weft_vp();
	bool let_go = __weft_mn_may_let_go(vp, x);
	if (let_go)
		__weft_outcall_begin(vp);
	/* In cancellable.S's stretch, cancellation point or not: a program
	 * signal for x ends the call there (signal.c, preempt.c: kept_call),
	 * and the wrapper runs its handler (restart_after_handlers) */
	vp->kept_call = (how & CALL_CANCELLABLE) ? KEPT_CALL_CANCELLABLE : KEPT_CALL_PLAIN;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	long r;
	if (how & CALL_CANCELLABLE)
		r = __weft_blocking_cancellable_call(x, k, false, nr, a);
	else
		r = __weft_arch_cancellable_syscall(&never_due, nr, a);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->kept_call = KEPT_CALL_NONE;
	if (let_go)
		__weft_outcall_end();
	return r;
}

/* One attempt at the call, in the bracket: its result, and whether an
 * EINTR it ended with is Weft's own (a tick, a kick: made again). */
static long bracketed(struct ut *x, long nr, const long a[6], unsigned how, bool *weft_eintr)
{
	struct weft_blocking bk;
	__weft_blocking_begin(&bk);
	long r;
	if ((how & CALL_HANDED_ONLY) && !bk.handed)
		r = WEFT_NOT_HANDED;
	else if (!bk.handed)
		r = kept_call(x, bk.k, nr, a, how);
	else if (how & CALL_CANCELLABLE)
		r = __weft_blocking_cancellable_call(x, bk.k, true, nr, a);
	else
		r = __weft_raw_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	__weft_blocking_end(&bk);
	*weft_eintr = r == -EINTR && eintr_is_weft(&bk);
	return r;
}

static long blocking_call(long nr, const long args[6], const struct weft_bounce *bb, unsigned nb, unsigned how,
			  bool *weft_eintr)
{
	bool handed_only = how & CALL_HANDED_ONLY;
	struct vp *vp = __weft_vp();
	struct ut *x = vp->cur;
	long a[6];
	memcpy(a, args, sizeof a);
	*weft_eintr = false;
	void *copy[WEFT_BOUNCES_MAX] = { 0 };
	bool copy_stack = __weft_is_copy(x);
	if (unlikely(copy_stack)) {
		/* what the call reads or writes on the UT's own stack goes
		 * through memory off it */
		for (unsigned i = 0; i < nb && i < WEFT_BOUNCES_MAX; i++) {
			const void *p = (const void *)a[bb[i].arg];
			if (!__weft_cs_on_stack(x, p) || bb[i].len == 0)
				continue;
			copy[i] = malloc(bb[i].len);
			if (!copy[i])
				continue;                 /* then made on the run stack */
			if (bb[i].dir & WEFT_BOUNCE_IN)
				memcpy(copy[i], p, bb[i].len);
			a[bb[i].arg] = (long)copy[i];
		}
		bool off = true;
		for (unsigned j = 0; j < 6; j++)
			if (__weft_cs_on_stack(x, (const void *)a[j]))
				off = false;              /* memory of its stack the caller did not name */
		struct kt *to = off ? handoff_target(vp) : NULL;
		long r;
		if (to) {
			r = detached_call(vp, x, to, nr, a, how & CALL_CANCELLABLE);
			*weft_eintr = r == -EINTR;      /* only Weft's signals reach home's call */
		} else if (handed_only && off) {
			r = WEFT_NOT_HANDED;
		} else {
			r = bracketed(x, nr, a, how, weft_eintr);
		}
		for (unsigned i = 0; i < nb && i < WEFT_BOUNCES_MAX; i++) {
			if (!copy[i])
				continue;
			if ((bb[i].dir & WEFT_BOUNCE_OUT) && r >= 0 && r != WEFT_NOT_HANDED)
				memcpy((void *)args[bb[i].arg], copy[i], bb[i].len);
			free(copy[i]);
		}
		return r;
	}
	return bracketed(x, nr, a, how, weft_eintr);
}


void __weft_inbox_drain_slow(struct vp *vp)
{
	struct ut *list = __atomic_exchange_n(&vp->inbox, NULL, __ATOMIC_ACQUIRE);
	/* pushed newest first: reverse, so they queue in the order they came */
	struct ut *fifo = NULL;
	while (list) {
		struct ut *next = list->q_next;
		list->q_next = fifo;
		fifo = list;
		list = next;
	}
	/* SCHED_OTHER UTs back from the kernel go to the head of their level
	 * (the way Linux's scheduler favours a waking thread over the ones
	 * that have been computing): the kick that told the carrier lets them
	 * run at once (preempt.c, __weft_preempted), so a UT that does I/O
	 * between short bursts is not held back a whole slice per call behind
	 * compute-bound ones.  Collected newest first and linked at the head
	 * one by one, they run in the order they came.  FIFO and RR UTs keep
	 * POSIX's rule: the tail of their level. */
	struct ut *first = NULL;
	while (fifo) {
		struct ut *t = fifo;
		fifo = t->q_next;
		if (unlikely(t->guest_kt) && t == &t->guest_kt->req) {
			__weft_guest_request(vp, t->guest_kt);   /* a guest's first time */
			continue;
		}
		vp->offvp--;
		vp->stat.rejoins++;
		t->wait_kind = WAIT_NONE;
		if (t->away) {
			/* back from a takeover (monitor.c): one fewer away */
			t->away = 0;
			__atomic_sub_fetch(&vp->take, 1, __ATOMIC_RELEASE);
		}
		if (t->policy == SCHED_OTHER && !t->guest_kt) {
			t->q_next = first;
			first = t;
			continue;
		}
		__weft_ready(t);
		if (unlikely(__weft_is_copy(t)))
			__weft_cs_left(t);       /* its run stack is free again */
	}
	while (first) {
		struct ut *t = first;
		first = t->q_next;
		__weft_ready_first(t);
		vp->rejoined_first = 1;
		if (unlikely(__weft_is_copy(t)))
			__weft_cs_left(t);
	}
}
