/*
 * cond.c — pthread_cond_*: condition variables on glibc's 48-byte layout.
 *
 * Waiters park on the condition's own queue, highest priority first, FIFO
 * within a priority.  A waiter releases its mutex and parks with no runtime
 * call in between that could switch (the release does not preempt), so a
 * signal sent by any UT after the release finds the waiter queued: no lost
 * wake-ups.
 *
 * Wait morphing.  When signal or broadcast finds the waiters' mutex locked,
 * the woken waiters are not made ready (they would only park again on the
 * mutex): they are moved, still parked, from the condition's queue onto the
 * mutex's, and their timers are cancelled — the wait has been satisfied, and
 * what is left is the untimed relock.  The mutex's unlock then hands it to
 * them one at a time, so broadcast causes no herd.  When the mutex is free,
 * the first waiter is made ready and relocks it itself; the rest of a
 * broadcast are moved onto the mutex, behind it.
 * A woken waiter knows which case it was in by looking at the mutex owner:
 * if the hand-off already made it the owner, it does not lock again.
 *
 * Protocol mutexes.  The waiter's release of its mutex ends what that mutex
 * lent it (prio.c) before it parks, so it waits here at the priority it has
 * without the mutex; it relocks through the mutex's own protocol; and a
 * waiter moved onto a PRIO_INHERIT mutex lends its priority to the owner
 * at once, as one that blocked in pthread_mutex_lock would.  Signal wakes
 * the head of the queue: the highest-priority waiter, the longest-waiting
 * among equals.
 *
 * Process-shared mutexes (glibc's layout, pmutex.c) have no queue to morph
 * onto: a waiter whose mutex is one is made ready and relocks it itself.
 * A process-shared condition is glibc's layout, recognised by bit 0 of its
 * __wrefs word (offset 36, never set in Weft's layout) at every call and
 * handed to pcond.c.
 *
 * Signals.  A signal's handler that interrupts a wait runs with the mutex
 * let go (park), and then the wait goes on, as POSIX asks ("as if it was
 * not interrupted") and glibc does; a timed wait keeps its deadline.  The
 * waiter is off the queue from the wake by the signal until it parks
 * again, so a signal or broadcast meanwhile would find no one to wake and
 * be lost: the condition counts such waiters (`absent`, raised by the
 * runtime's hook as it wakes one), a signal that finds the queue empty
 * and a waiter away owes it a wake-up (`absent_wakes`), a broadcast owes
 * every one, and a returning waiter that is owed one returns 0 instead of
 * waiting again.  (Before the twentieth stop such a wait returned 0, a
 * spurious wake-up: glibc's tst-eintr5 asserts it never returns.)
 *
 * Invariant: `mutex` is the mutex of the current waiters (POSIX allows only
 * one at a time; a second one is EINVAL) and NULL when there are none.
 * absent_wakes <= absent; both 0 in a condition nobody waits on (a waiter
 * that never comes back, ended in its handler, leaves its count: later
 * waiters may then see a spurious wake-up, never a lost one).
 */
#include "pshared.h"

#include <string.h>

void __weft_condattr_get(const pthread_condattr_t *a, clockid_t *clk, bool *pshared) HIDDEN;

static inline struct wcond *wcond_of(pthread_cond_t *c) { return (struct wcond *)c; }

/* Move the parked waiter t from the condition to the mutex queue.  (This
 * and the two below are inlined: each call level was a prologue of
 * pushes on the condition ping-pong's path.) */
static inline __attribute__((always_inline)) void morph(struct wcond *c, struct wmutex *w, struct ut *t)
{
	__weft_waitq_remove(&c->waiters, t);
	if (t->tindex)
		__weft_timer_del(t);
	__weft_waitq_insert(&w->waiters, t);
	t->wait_kind = WAIT_MUTEX;
	t->wait_obj = w;
	t->cancel_point = CP_SATISFIED;   /* signalled: a cancel must not lose it */
	if (w->kind & MK_PI)
		__weft_prio_inherit(w, t);
}

static inline void forget_mutex_if_idle(struct wcond *c)
{
	if (!c->waiters.head)
		c->mutex = NULL;
}

void __weft_wait_interrupted(enum wait_kind kind, void *obj)
{
	if (kind == WAIT_COND)
		((struct wcond *)obj)->absent++;
}

/* Park on c until signalled (0), timed out or cancelled; a signal's
 * handler in between has run, and the wait goes on unless a wake-up came
 * while the waiter was away (above, "Signals").  m: the waiters' mutex,
 * let go by the caller. */
static inline __attribute__((always_inline)) int cond_park(struct wcond *c, struct wmutex *m, int64_t deadline)
{
	for (;;) {
		int r = __weft_park_cancellable(&c->waiters, deadline, WAIT_COND, c);
		if (r != EINTR)
			return r;
		if (c->absent_wakes) {
			c->absent_wakes--;
			c->absent--;
			return 0;
		}
		c->absent--;
		if (c->waiters.head && c->mutex != m)
			return 0;             /* others wait with another mutex now */
		c->mutex = m;
	}
}

/* The waiters' mutex is process-shared: release it, park, relock it. */
static int cond_wait_pmutex(struct wcond *c, struct wmutex *w, int64_t deadline)
{
	pthread_mutex_t *m = (pthread_mutex_t *)w;
	if (!__weft_pmutex_owned(m, __weft_self()))
		return EPERM;
	if (c->waiters.head && c->mutex != w)
		return EINVAL;
	__weft_testcancel();
	c->mutex = w;
	uint32_t depth;
	int r = __weft_cond_mutex_release(m, &depth);   /* never switches */
	if (r) {
		forget_mutex_if_idle(c);
		return r;
	}
	r = cond_park(c, w, deadline);
	forget_mutex_if_idle(c);
	int lr = __weft_cond_mutex_relock(m, depth);
	if (r == ECANCELED)
		__weft_hooks.cancel_act();          /* the mutex is held again */
	if (lr)
		return lr;
	return r == ETIMEDOUT ? ETIMEDOUT : 0;
}

static inline __attribute__((always_inline)) int cond_wait(struct wcond *c, struct wmutex *w, int64_t deadline)
{
	if (unlikely(w->kind & MK_PSHARED))
		return cond_wait_pmutex(c, w, deadline);
	struct ut *self = __weft_self();
	/* Not held by the caller: EPERM, except a plain (or adaptive) mutex
	 * nobody holds, with which NPTL waits all the same and relocks after
	 * (POSIX leaves it undefined; glibc's own tst-eintr5 does it).  One
	 * another UT holds stays EPERM: NPTL would unlock it under its owner. */
	int type = w->kind & MK_TYPE_MASK;
	bool unheld = !w->owner && !(w->kind & MK_HELD_LIST) &&
		      (type == PTHREAD_MUTEX_NORMAL || type == PTHREAD_MUTEX_ADAPTIVE_NP);
	if (w->owner != self && !unheld)
		return EPERM;
	if (c->waiters.head && c->mutex != w)
		return EINVAL;
	__weft_testcancel();                  /* a cancellation point */
	c->mutex = w;
	uint32_t depth = unheld ? 1 : w->count;   /* a recursive mutex is released fully */
	if (!unheld)
		__weft_mutex_release(w, false);
	int r = cond_park(c, w, deadline);
	forget_mutex_if_idle(c);
	/* Handed the mutex (after morphing): r is the mutex's answer.
	 * Otherwise relock it: signalled (0), timed out or cancelled. */
	int lr = w->owner == self ? r : __weft_mutex_acquire(w, self, -1);
	if (r == ECANCELED) {
		/* POSIX: the mutex is held again when the handlers run. */
		if (lr == 0 || lr == EOWNERDEAD)
			w->count = depth;
		__weft_hooks.cancel_act();
	}
	if (lr != 0 && lr != EOWNERDEAD)
		return lr;                       /* ENOTRECOVERABLE: not the owner */
	w->count = depth;
	if (lr == EOWNERDEAD)
		return EOWNERDEAD;
	return r == ETIMEDOUT ? ETIMEDOUT : 0;
}

WEFT_SHARED_BODY int cond_wait_untimed(pthread_cond_t *cv, pthread_mutex_t *m)
{
	if (!cv || !m)
		return EINVAL;
	/* the wait lets go of m and takes it again, whatever it returns */
	WEFT_HB_RELEASE(m);
	int r = pcond_is(cv) ? __weft_pcond_wait(cv, m, CLOCK_REALTIME, NULL)
			     : cond_wait(wcond_of(cv), wmutex_of(m), -1);
	WEFT_HB_ACQUIRE(m);
	return r;
}

EXPORT int pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
	/* M:1: the entry's tests once (rt.h, __weft_m1_enter) */
	WEFT_M1_FAST_RETURN(cond_wait_untimed(cv, m));
	__weft_ensure();
	WEFT_CALL();
	return cond_wait_untimed(cv, m);
}

static int cond_clockwait(pthread_cond_t *cv, pthread_mutex_t *m, clockid_t clk,
			  const struct timespec *abs)
{
	if (!cv || !m)
		return EINVAL;
	if (pcond_is(cv)) {
		int e = __weft_ptime_check(clk, abs);
		return e ? e : __weft_pcond_wait(cv, m, clk, abs);
	}
	int64_t deadline;
	int r = __weft_sync_deadline(clk, abs, &deadline);
	if (r)
		return r;
	__weft_ensure();
	return cond_wait(wcond_of(cv), wmutex_of(m), deadline);
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *cv, pthread_mutex_t *m, clockid_t clk,
				  const struct timespec *abs)
{
	WEFT_CALL();
	WEFT_HB_RELEASE(m);
	int r = cond_clockwait(cv, m, clk, abs);
	WEFT_HB_ACQUIRE(m);
	return r;
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *abs)
{
	WEFT_CALL();
	if (!cv)
		return EINVAL;
	clockid_t clk = pcond_is(cv) ? ((cv->__data.__wrefs & GC_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME)
				     : wcond_of(cv)->clock;
	WEFT_HB_RELEASE(m);
	int r = cond_clockwait(cv, m, clk, abs);
	WEFT_HB_ACQUIRE(m);
	return r;
}

/* Wake the first waiter: onto the mutex if it is locked, else ready. */
static inline __attribute__((always_inline)) void wake_first(struct wcond *c, bool preempt)
{
	struct ut *t = c->waiters.head;
	struct wmutex *w = c->mutex;
	if (!(w->kind & MK_PSHARED) && __weft_mutex_mark_waited(w)) {
		morph(c, w, t);
		if (preempt && (w->kind & MK_PI))
			__weft_preempt_check();   /* the owner may now outrank us */
	} else if (preempt)
		__weft_unpark(t, 0);
	else
		__weft_unpark_nopreempt(t, 0);
}

WEFT_SHARED_BODY int cond_signal(pthread_cond_t *cv)
{
	struct wcond *c = wcond_of(cv);
	if (!c)
		return EINVAL;
	if (likely(!c->waiters.head && !c->absent))
		return 0;                 /* process-shared: __wseq 0, never waited on */
	if (pcond_is(cv))
		return __weft_pcond_signal(cv);
	if (!c->waiters.head) {
		if (c->absent_wakes < c->absent)
			c->absent_wakes++;        /* for a waiter in its handler */
		return 0;
	}
	wake_first(c, true);
	forget_mutex_if_idle(c);
	return 0;
}

EXPORT WEFT_HOT_ENTRY int pthread_cond_signal(pthread_cond_t *cv)
{
	/* M:1: the entry's tests once (rt.h, __weft_m1_enter) */
	WEFT_M1_FAST_RETURN(cond_signal(cv));
	WEFT_CALL();
	return cond_signal(cv);
}

WEFT_SHARED_BODY int cond_broadcast(pthread_cond_t *cv)
{
	struct wcond *c = wcond_of(cv);
	if (!c)
		return EINVAL;
	if (likely(!c->waiters.head && !c->absent))
		return 0;
	if (pcond_is(cv))
		return __weft_pcond_broadcast(cv);
	c->absent_wakes = c->absent;      /* every waiter in its handler too */
	if (!c->waiters.head)
		return 0;
	struct wmutex *w = c->mutex;
	if (w->kind & (MK_NOTRECOVERABLE | MK_PSHARED)) {
		/* Nobody will ever unlock it: everyone must see the error.
		 * Process-shared: no queue to morph onto; all relock it. */
		__weft_wake_all(&c->waiters, 0);
		c->mutex = NULL;
		return 0;
	}
	wake_first(c, false);
	struct ut *t;
	while ((t = c->waiters.head) != NULL)
		morph(c, w, t);
	c->mutex = NULL;
	__weft_preempt_check();
	return 0;
}

EXPORT WEFT_HOT_ENTRY int pthread_cond_broadcast(pthread_cond_t *cv)
{
	/* M:1: the entry's tests once (rt.h, __weft_m1_enter) */
	WEFT_M1_FAST_RETURN(cond_broadcast(cv));
	WEFT_CALL();
	return cond_broadcast(cv);
}

EXPORT int pthread_cond_init(pthread_cond_t *cv, const pthread_condattr_t *a)
{
	if (!cv)
		return EINVAL;
	clockid_t clk = CLOCK_REALTIME;
	bool pshared = false;
	if (a)
		__weft_condattr_get(a, &clk, &pshared);
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (pshared)
		return __weft_pcond_init(cv, true, clk);
	memset(cv, 0, sizeof *cv);
	wcond_of(cv)->clock = clk;
	return 0;
}

EXPORT int pthread_cond_destroy(pthread_cond_t *cv)
{
	WEFT_CALL();
	struct wcond *c = wcond_of(cv);
	if (!c)
		return EINVAL;
	if (pcond_is(cv))
		return __weft_pcond_destroy(cv);
	return c->waiters.head ? EBUSY : 0;
}
