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
 * WEFT_ACTIVATIONS=off) blocks the VP as in M:1.
 *
 * Async readers: the inbox is pushed by any kernel thread (atomic) and
 * taken whole by the carrier's mainline (atomic exchange).
 */
#include "rt.h"
#include "../arch/arch.h"

#include <signal.h>
#include <sys/syscall.h>

void __weft_blocking_begin(struct weft_blocking *b)
{
	struct vp *vp = __weft_vp();
	struct ut *x = vp->cur;
	b->handed = false;
	b->self = x;
	b->k = vp->carrier;
	b->caught = vp->async.caught;
	/* Alone, or inside a handler that must not switch: block in place. */
	if (__weft_proc.live < 2 || __weft_noswitch(vp) || !__weft_activations_on())
		return;
	struct kt *k = vp->carrier;
	if (__weft_kt_home_ready(k) != 0)
		return;
	struct kt *to = __weft_kt_spare_get();
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

long __weft_blocking_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	for (;;) {
		struct weft_blocking bk;
		__weft_blocking_begin(&bk);
		long r = __weft_raw_syscall6(nr, a, b, c, d, e, f);
		__weft_blocking_end(&bk);
		if (r != -EINTR || !__weft_blocking_eintr_is_weft(&bk))
			return r;
	}
}

bool __weft_blocking_eintr_is_weft(const struct weft_blocking *b)
{
	/* handed on: every signal was blocked, so the kernel cannot have
	 * interrupted the call; kept: only a program signal the dispatcher
	 * saw counts */
	return !b->handed && __weft_vp()->async.caught == b->caught;
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
		__weft_ready(t);
	}
}
