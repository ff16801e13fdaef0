/*
 * park.c — wait queues: the one way a UT waits.
 *
 * Mutexes, conditions, joins and sleeps all park the caller on a wait queue
 * (or on none, for a plain sleep) with an optional deadline, and something
 * unparks it.  Invariant: a parked UT is BLOCKED, is on at most one wait
 * queue (t->wq says which), and is in the timer heap iff it has a deadline;
 * unpark undoes all three before the UT becomes READY, so a wake-up and a
 * timeout can never both happen.  pthread_cancel wakes a UT parked at a
 * cancellation point (or anywhere, if asynchronous) with ECANCELED.
 *
 * Locks (M:N; empty in M:1): the caller of park holds the lock of q's
 * object and passes it as `release`; park releases it only once the UT is
 * on q, so a waker, which takes the same lock, always finds it there.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <sys/syscall.h>

void __weft_waitq_insert(struct waitq *q, struct ut *t)
{
	struct ut *head = q->head;
	t->wq = q;
	if (!head) {
		t->q_next = t->q_prev = t;
		q->head = t;
		return;
	}
	/* Walk back from the tail past every UT of lower priority; equal
	 * priorities stay in arrival order.  O(1) when all share a priority. */
	struct ut *after = head->q_prev;
	while (after->prio < t->prio) {
		if (after == head) {
			t->q_next = head;
			t->q_prev = head->q_prev;
			head->q_prev->q_next = t;
			head->q_prev = t;
			q->head = t;
			return;
		}
		after = after->q_prev;
	}
	t->q_prev = after;
	t->q_next = after->q_next;
	after->q_next->q_prev = t;
	after->q_next = t;
}

void __weft_waitq_remove(struct waitq *q, struct ut *t)
{
	if (t->q_next == t) {
		q->head = NULL;
	} else {
		t->q_prev->q_next = t->q_next;
		t->q_next->q_prev = t->q_prev;
		if (q->head == t)
			q->head = t->q_next;
	}
	t->q_next = t->q_prev = NULL;
	t->wq = NULL;
}

/*
 * A signal handler run by the idle loop (signal.c) is on the stack of a UT
 * that is already parked, and no other UT may run: a wait from it can only
 * be a wait in the kernel, as a kernel thread's would be — until the
 * deadline, or for ever (POSIX allows only async-signal-safe calls there;
 * sleep() is one of them).
 */
static int park_while_parked(int64_t deadline, struct weft_lock *release)
{
	if (release)
		__weft_unlock(release);
	/* M:N: the other VPs go on meanwhile */
	if (__weft_mn)
		__weft_rtl_unlock();
	for (;;) {
		if (deadline < 0) {
			__weft_raw_syscall6(SYS_pause, 0, 0, 0, 0, 0, 0);
			continue;
		}
		int64_t now = __weft_now();
		if (deadline <= now)
			break;
		struct timespec ts = { .tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000 };
		__weft_raw_syscall6(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&ts, 0, 0, 0);
	}
	if (__weft_mn)
		__weft_rtl_lock();
	return ETIMEDOUT;
}

/* After the switch back: what woke the parked caller.  (The caller's
 * `kind` is its own argument: a condition's waiter moved onto a mutex is
 * WAIT_MUTEX in wait_kind by then, never WAIT_OTHER either way.) */
static inline __attribute__((always_inline)) int woken(struct ut *self, enum wait_kind kind)
{
	/* Woken by a signal for it: its handlers run here, before the caller
	 * decides between EINTR and waiting again (the I/O waits unhook
	 * first, and run them themselves: io/wait.c) */
	if (unlikely(self->wake == EINTR) && kind != WAIT_OTHER)
		__weft_sig_woken(self);
	/* Woken by an asynchronous cancel away from a cancellation point:
	 * act here (at one, the caller tidies up and acts itself). */
	if (unlikely(self->wake == ECANCELED) && self->cancel_point == CP_NONE)
		__weft_hooks.cancel_act();
	return self->wake;
}

static inline __attribute__((always_inline)) int park(struct waitq *q, int64_t deadline,
						       enum wait_kind kind, void *obj,
						       struct weft_lock *release)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	if (unlikely(vp->noswitch_set) && self->state != UT_RUNNING)
		return park_while_parked(deadline, release);
	/* An asynchronous cancel armed while it ran its own code on another
	 * VP (M:N: pthread_cancel found it running, not parked) acts before
	 * it blocks, as the request would have woken it parked (M:1 never
	 * gets here armed: the epilogue it returned through acted) */
	if (unlikely(self->cancel & CANCEL_ARMED)) {
		if (release)
			__weft_unlock(release);
		if (self->cancel_point == CP_NONE)
			__weft_hooks.cancel_act();
		return ECANCELED;
	}
	/* A handler is due already, and the wait is one a signal ends: it
	 * ends at once, as the kernel's does with a signal pending, and the
	 * handlers run here as after a wake by the signal (sigdeliver.c,
	 * notify).  M:N: another VP routes a signal to a UT that runs here
	 * (notify can only kick this VP, which runs it at the next safe
	 * point); if the UT parks first, in a Weft call whose end is that
	 * point, nothing wakes it for the signal.  The signal storm hung so:
	 * main parked in pthread_join with 776 SIGRTMIN due, every record of
	 * the pool then held back, the consumer it joined starved of them. */
	if (unlikely(self->sig_ready) && kind != WAIT_OTHER &&
	    (self->cancel_point == CP_WAITING || self->sig_intr)) {
		if (release)
			__weft_unlock(release);
		__weft_hooks.wait_interrupted(kind, obj);
		self->sig_woken = (uint8_t)(__builtin_ctzll(self->sig_pend & ~self->sig_mask) + 1);
		self->wake = EINTR;
		__weft_sig_woken(self);
		return EINTR;
	}
	if (deadline >= 0) {
		if (deadline <= __weft_now()) {
			if (release)
				__weft_unlock(release);
			return ETIMEDOUT;
		}
		__weft_timer_add(self, deadline);
		__weft_preempt_deadline(deadline);
	}
	if (q)
		__weft_waitq_insert(q, self);
	else
		self->wq = NULL;
	WEFT_STATE(self, UT_BLOCKED);
	self->wait_kind = (uint8_t)kind;
	self->wait_obj = obj;
	self->wake = 0;
	vp->stat.parks++;
	if (release)
		__weft_unlock(release);
	__weft_schedule();
	self->wait_kind = WAIT_NONE;
	self->wait_obj = NULL;
	return woken(self, kind);
}

int __weft_park_release(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj,
			struct weft_lock *release)
{
	return park(q, deadline, kind, obj, release);
}

static __attribute__((noinline)) int park_full(struct waitq *q, int64_t deadline, enum wait_kind kind,
						void *obj)
{
	return park(q, deadline, kind, obj, NULL);
}

static __attribute__((noinline)) int woken_rare(struct ut *self, enum wait_kind kind)
{
	return woken(self, kind);
}

/*
 * The common park, apart from park()'s cases: no deadline, a queue whose
 * order puts the caller last (empty, or no waiter of lower priority:
 * every mutex, condition and join of one priority level), nothing due
 * for the caller (no armed cancel, no handler due), not a wait of the I/O
 * layer's own (WAIT_OTHER), and not a handler's wait from the idle loop.
 * Anything else is park()'s, unchanged.  Written so that no value lives
 * across the switch but `kind`: self is read again from the VP (M:N: it
 * may resume on another), so the function saves one register, not
 * park()'s six (their pushes and pops were a quarter of its cost on a
 * mutex hand-off or a join).  `cancellable`: a cancellation point
 * (__weft_park_cancellable), its request checked first and the point
 * marked for the wait.
 */
static inline __attribute__((always_inline)) int park_common(struct waitq *q, int64_t deadline,
							      enum wait_kind kind, void *obj,
							      bool cancellable)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	struct ut *head;
	int r;
	if (cancellable) {
		if (__weft_cancel_due(self))
			return ECANCELED;
		self->cancel_point = CP_WAITING;
	}
	if (unlikely(deadline >= 0 || !q || kind == WAIT_OTHER || vp->noswitch_set || self->sig_ready ||
		     (self->cancel & CANCEL_ARMED)))
		goto full;
	head = q->head;
	if (!head) {
		self->q_next = self->q_prev = self;
		q->head = self;
	} else {
		struct ut *tail = head->q_prev;
		if (unlikely(tail->prio < self->prio))
			goto full;            /* it goes ahead of someone */
		self->q_prev = tail;
		self->q_next = head;
		tail->q_next = self;
		head->q_prev = self;
	}
	self->wq = q;
	WEFT_STATE(self, UT_BLOCKED);
	self->wait_kind = (uint8_t)kind;
	self->wait_obj = obj;
	self->wake = 0;
	vp->stat.parks++;
	__weft_schedule();
	self = __weft_self();
	self->wait_kind = WAIT_NONE;
	self->wait_obj = NULL;
	r = self->wake;
	if (unlikely(r == EINTR || r == ECANCELED))
		r = woken_rare(self, kind);
	if (cancellable)
		self->cancel_point = CP_NONE;
	return r;
full:
	r = park_full(q, deadline, kind, obj);
	if (cancellable)
		__weft_self()->cancel_point = CP_NONE;
	return r;
}

int __weft_park(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj)
{
	return park_common(q, deadline, kind, obj, false);
}

int __weft_park_cancellable(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj)
{
	return park_common(q, deadline, kind, obj, true);
}

void __weft_unpark_nopreempt(struct ut *t, int result)
{
	if (t->state != UT_BLOCKED)
		return;
	if (t->wq)
		__weft_waitq_remove(t->wq, t);
	if (t->tindex)
		__weft_timer_del(t);
	t->wake = result;
	__weft_vp()->stat.unparks++;
	__weft_ready(t);
}

void __weft_unpark(struct ut *t, int result)
{
	__weft_unpark_nopreempt(t, result);
	if (t->prio > __weft_self()->prio)
		__weft_preempt_check();
}

int __weft_wake_all_nopreempt(struct waitq *q, int result)
{
	int n = 0;
	struct ut *t;
	while ((t = q->head) != NULL) {
		__weft_unpark_nopreempt(t, result);
		n++;
	}
	return n;
}

int __weft_wake_all(struct waitq *q, int result)
{
	int n = __weft_wake_all_nopreempt(q, result);
	if (n)
		__weft_preempt_check();
	return n;
}
