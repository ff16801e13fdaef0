/*
 * mutex.c — pthread_mutex_*: normal, recursive, errorcheck, adaptive and
 * robust mutexes on glibc's 40-byte layout (see sync.h).
 *
 * Invariant: `owner` is NULL iff the mutex is unlocked, and every UT on
 * `waiters` is parked waiting for it (highest priority first, FIFO within a
 * priority).  A free mutex has no waiters, except for the short time after a
 * condition broadcast moved waiters onto it while one of them, already woken,
 * is on its way to lock it (cond.c).
 *
 * Fast paths.  In M:1 no other UT runs until the caller enters the runtime,
 * so an uncontended lock of a default mutex is a load of the kind and owner
 * and a store of the owner; unlock is a load of the kind and the queue head
 * and a store.  No atomic instruction, no system call, and the check for a
 * call made before the runtime started (self NULL) is on the same branch.
 *
 * Unlock hands the mutex over: when UTs wait, unlock makes the first of them
 * the owner and readies it; the waiter's lock call then returns without
 * looking at the mutex again.  Why hand-off rather than wake-and-compete:
 *   - without preemption the unlocker keeps the processor after unlock, so
 *     under compete it would re-take the mutex at its next lock every time
 *     and the woken waiter would wake only to park again: a wasted switch per
 *     wake-up and starvation of the waiter for as long as the holder loops;
 *   - hand-off makes "highest priority first, FIFO within a priority" a
 *     property of who gets the mutex, not only of who is woken first;
 *   - a waiter that is handed the mutex never races its own timeout: unpark
 *     takes it off the timer heap, so timedlock returns 0 or ETIMEDOUT, never
 *     "woken but too late".
 * The cost is the lock convoy: a UT that unlocks and at once relocks while
 * others wait gives the mutex away and blocks.  Long-held, contended mutexes
 * want fairness more than that last bit of throughput.
 *
 * Priority protocols (prio.c).  A PRIO_INHERIT or PRIO_PROTECT mutex is on
 * its owner's held list (robust.c) for as long as it is held; every change
 * of owner or of waiters recomputes the priorities it affects: a lock takes
 * the ceiling, a waiter that parks raises the chain of owners, a waiter
 * that leaves without the mutex and an unlock lower them (the unlocker to
 * the head of its level), and the hand-off gives the new owner what the
 * remaining waiters lend.  Such mutexes have a kind other than 0, so the
 * fast paths below never see them and cost what they cost before.
 *
 * Process-shared mutexes are glibc's layout and protocol (pmutex.c),
 * recognised by glibc's PTHREAD_MUTEX_PSHARED_BIT in the kind word at every
 * call.  Their kind is never 0, so the test sits on the slow paths only.
 *
 * M:N.  Weft's code runs under the runtime lock (mn.c), and so does every
 * path here but two: a default mutex (kind 0) is locked and unlocked
 * without it when nobody waits, by a compare-and-swap on its lock word
 * (`lockw`: 0 free, 1 held, 2 held and maybe waited for — Drepper's futex
 * mutex, with Weft's wait queue for the futex), so that an uncontended
 * lock and unlock cost two atomic instructions and touch no line another
 * VP shares.  The rules that make the two paths one protocol:
 *   - the lock word decides who holds it; `owner` follows it (stored by
 *     the new holder right after its CAS, cleared by the holder right
 *     before its release), so under M:N a kind-0 mutex is held iff
 *     owner != NULL || lockw != 0;
 *   - M:1 keeps the word too, by plain stores (1 held, 0 free; nobody else
 *     reads it then), so that a mutex locked before the VPs started is in
 *     the state M:N expects: lockw is never 0 while a kind-0 mutex is held.
 *     (An earlier version left it 0 there and let a waiter mark an "old
 *     lock" 0 -> 2 when it saw an owner; but a waiter that read 0, then
 *     the owner of a fast lock taken and released meanwhile, marked a free
 *     mutex 2 and parked on it for good — mn_counters_exact's hang);
 *   - the fast lock is CAS(0 -> 1), tried only when owner is NULL;
 *   - the fast unlock (by the owner) clears owner and CASes 1 -> 0;
 *     any other value (2: a waiter marked it) puts owner back and takes
 *     the slow path;
 *   - everything else holds the runtime lock: a UT that must wait marks
 *     the word 2 (1 -> 2; a 0 means it is free: take it) before it parks,
 *     so the holder's fast unlock fails and its slow unlock, which needs
 *     the runtime lock the waiter holds until it is queued, finds it
 *     queued; a hand-off or a take under the lock sets 2 if waiters are
 *     left, else 1; a release with no waiter stores 0; a condition that
 *     moves waiters onto a held mutex marks it 2 first, and wakes instead
 *     if it became free.
 * Acquire and release ordering: the CAS that takes (acquire), the CAS or
 * store that frees (release); the runtime lock orders the rest.  M:1 is
 * unchanged: the branch on __weft_mn is the only cost.
 */
#include "pshared.h"

#include <string.h>

static inline int mutex_type(const struct wmutex *w) { return w->kind & MK_TYPE_MASK; }

/* ---- M:N's lock word (the header's rules) ---- */

/* Does this mutex keep the word (both modes)?  Does M:N's protocol use it? */
static inline bool lockw_kept(const struct wmutex *w) { return w->kind == 0; }
static inline bool lockw_used(const struct wmutex *w) { return __weft_mn && w->kind == 0; }

static inline bool lockw_cas(struct wmutex *w, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&w->lockw, &from, to, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Under the runtime lock: is the mutex held (by anyone)? */
static inline bool mutex_held(const struct wmutex *w)
{
	return w->owner || (lockw_used(w) && __atomic_load_n(&w->lockw, __ATOMIC_ACQUIRE));
}

/* Under the runtime lock, for a free mutex (no owner): claim the word.
 * False when a fast-path holder has it (its owner store not yet seen). */
static inline bool lockw_claim(struct wmutex *w)
{
	if (!lockw_kept(w))
		return true;
	if (!__weft_mn) {
		w->lockw = 1;
		return true;
	}
	return lockw_cas(w, 0, w->waiters.head ? 2 : 1);
}

/* Under the runtime lock, before a UT parks on a held mutex (or is moved
 * onto one): mark it waited for, so its holder's unlock comes to the lock.
 * False if it turned out free (no owner, word 0): the caller takes it. */
bool __weft_mutex_mark_waited(struct wmutex *w)
{
	if (!lockw_used(w))
		return w->owner != NULL;
	for (;;) {
		uint32_t v = __atomic_load_n(&w->lockw, __ATOMIC_ACQUIRE);
		if (v == 2)
			return true;
		if (v == 0)
			return false;
		if (lockw_cas(w, v, 2))
			return true;
	}
}

/* Under the runtime lock, as the mutex is freed: the word says free,
 * releasing what the holder did. */
static inline void lockw_set(struct wmutex *w, bool held)
{
	if (lockw_kept(w))
		__atomic_store_n(&w->lockw, held ? (w->waiters.head ? 2 : 1) : 0, __ATOMIC_RELEASE);
}

/* PRIO_PROTECT: a UT whose priority is above the ceiling may not lock it
 * (EINVAL).  Its base priority counts, as in glibc: a boost lent by another
 * mutex is not its own. */
static inline bool above_ceiling(const struct wmutex *w, const struct ut *self)
{
	return (w->kind & MK_PP) && self->base_prio > wmutex_ceiling(w);
}

/* Make `self` the owner of the free mutex. */
static inline int take(struct wmutex *w, struct ut *self)
{
	w->owner = self;
	w->count = 0;
	if (!(w->kind & MK_HELD_LIST))
		return 0;
	__weft_held_link(w, self);
	if (w->kind & MK_PROTOCOL)
		__weft_prio_take(w, self);   /* the ceiling; waiters moved here by a broadcast */
	return (w->kind & MK_INCONSISTENT) ? EOWNERDEAD : 0;
}

/* Acquire without blocking: 0, EOWNERDEAD, ENOTRECOVERABLE, EAGAIN,
 * EDEADLK, EINVAL (above the ceiling), or EBUSY when the caller would have
 * to wait. */
static inline __attribute__((always_inline)) int try_acquire(struct wmutex *w, struct ut *self)
{
	if (unlikely(w->kind & MK_NOTRECOVERABLE))
		return ENOTRECOVERABLE;
	if (unlikely(above_ceiling(w, self)))
		return EINVAL;
	if (!w->owner && lockw_claim(w))
		return take(w, self);
	if (w->owner != self)
		return EBUSY;
	switch (mutex_type(w)) {
	case PTHREAD_MUTEX_RECURSIVE:
		if (w->count == UINT32_MAX)
			return EAGAIN;
		w->count++;
		return 0;
	case PTHREAD_MUTEX_ERRORCHECK:
		return EDEADLK;
	default:
		return EBUSY;   /* NORMAL: relocking deadlocks, as POSIX requires */
	}
}

/* Park until the unlocker hands us the mutex (0 or EOWNERDEAD) or until
 * `deadline`.  Under PRIO_INHERIT the owner chain inherits our priority
 * before we park, so the scheduler's next choice already sees it. */
static int wait_for(struct wmutex *w, struct ut *self, int64_t deadline)
{
	for (;;) {
		bool pi = w->kind & MK_PI;
		if (pi)
			__weft_prio_inherit(w, self);
		/* M:N: its holder must unlock through the runtime lock */
		if (unlikely(lockw_used(w)) && !__weft_mutex_mark_waited(w)) {
			int r = try_acquire(w, self);     /* free after all */
			if (r != EBUSY)
				return r;
			continue;
		}
		/* a signal for this UT ends the park with EINTR once its
		 * handler has run (park.c); POSIX: then it waits on */
		self->sig_intr = 1;
		int r = __weft_park(&w->waiters, deadline, WAIT_MUTEX, w);
		self->sig_intr = 0;
		if (r == ETIMEDOUT && pi)
			__weft_prio_waiter_left(w);
		if (r != EINTR)
			return r;
		if (pi)
			__weft_prio_waiter_left(w);
		r = try_acquire(w, self);
		if (r != EBUSY)
			return r;
	}
}

int __weft_mutex_acquire(struct wmutex *w, struct ut *self, int64_t deadline)
{
	int r = try_acquire(w, self);
	if (r != EBUSY)
		return r;
	return wait_for(w, self, deadline);
}

/* The protocols' release: hand over as below, then the new owner takes
 * what the mutex lends (its ceiling, the waiters left behind it) and the
 * old one gives it back. */
static void release_protocol(struct wmutex *w, struct ut *old, bool preempt)
{
	int lent = wmutex_lends(w);
	struct ut *next = __weft_waitq_first(&w->waiters);
	w->owner = next;
	if (!next && (lent < old->prio || old->prio == old->base_prio))
		return;       /* it lent nothing the owner runs at: no change */
	if (next) {
		__weft_held_link(w, next);
		__weft_unpark_nopreempt(next, 0);
		__weft_prio_take(w, next);
	}
	__weft_prio_give_back(old, lent);
	if (preempt)
		__weft_preempt_check();
}

/* Inlined into unlock (the protocols' uncontended unlock is all here). */
static inline __attribute__((always_inline)) void release(struct wmutex *w, bool preempt)
{
	struct ut *old = w->owner;
	w->count = 0;
	if (w->kind & MK_HELD_LIST) {
		__weft_held_unlink(w, old);
		if (w->kind & MK_INCONSISTENT) {
			/* Unlocked without pthread_mutex_consistent: the state
			 * it protects is lost for good. */
			w->kind = (w->kind & ~MK_INCONSISTENT) | MK_NOTRECOVERABLE;
			w->owner = NULL;
			__weft_wake_all_nopreempt(&w->waiters, ENOTRECOVERABLE);
			if (w->kind & MK_PROTOCOL)
				__weft_prio_recompute(old);
			if (preempt)
				__weft_preempt_check();
			return;
		}
		if (w->kind & MK_PROTOCOL) {
			release_protocol(w, old, preempt);
			return;
		}
	}
	struct ut *next = __weft_waitq_first(&w->waiters);
	w->owner = next;
	if (!next) {
		lockw_set(w, false);
		return;
	}
	/* handed over: 2 if more wait behind it.  Before the unpark, which
	 * may switch to next at once, and next may unlock before we go on */
	if (lockw_kept(w))
		__atomic_store_n(&w->lockw, next->q_next != next ? 2 : 1, __ATOMIC_RELEASE);
	if (w->kind & MK_ROBUST)
		__weft_held_link(w, next);
	if (preempt)
		__weft_unpark(next, 0);
	else
		__weft_unpark_nopreempt(next, 0);
}

void __weft_mutex_release(struct wmutex *w, bool preempt)
{
	release(w, preempt);
}

/* Lock with an optional deadline given as (clk, abs); abs NULL: none. */
static int lock_slow(struct wmutex *w, clockid_t clk, const struct timespec *abs, bool timed)
{
	if (!w)
		return EINVAL;
	if (timed && clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (w->kind & MK_PSHARED) {
		/* the time is checked only if the caller must wait; NULL is a
		 * malformed time, never "no limit" */
		static const struct timespec bad = { 0, -1 };
		int r = __weft_pmutex_lock((pthread_mutex_t *)w, false, false, clk,
					   timed ? (abs ? abs : &bad) : NULL);
		__weft_preempt_check();
		return r;
	}
	struct ut *self = __weft_self_ensure();
	int r = try_acquire(w, self);
	if (r != EBUSY)
		return r;
	int64_t deadline = -1;
	if (timed) {
		/* POSIX: the time is checked only when the caller must wait. */
		r = __weft_sync_deadline(clk, abs, &deadline);
		if (r)
			return r;
	}
	return wait_for(w, self, deadline);
}

static inline __attribute__((always_inline)) bool mn_lock_fast(struct wmutex *w)
{
	struct ut *self;
	if (!w || w->kind != 0 || w->owner || !(self = __weft_mn_fast_self()) || !lockw_cas(w, 0, 1))
		return false;
	w->owner = self;
	WEFT_HB_ACQUIRE(w);
	return true;
}

static inline __attribute__((always_inline)) bool mn_unlock_fast(struct wmutex *w)
{
	struct ut *self;
	if (!w || w->kind != 0 || !(self = __weft_mn_fast_self()) || w->owner != self)
		return false;
	WEFT_HB_RELEASE(w);
	w->owner = NULL;
	uint32_t held = 1;
	if (__atomic_compare_exchange_n(&w->lockw, &held, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return true;
	w->owner = self;                  /* waited for: the slow way */
	return false;
}

/* M:N: the lock-free path, else the whole call under the runtime lock. */
static __attribute__((noinline)) int mn_mutex_lock(pthread_mutex_t *m)
{
	if (mn_lock_fast(wmutex_of(m)))
		return 0;
	WEFT_CALL();
	WEFT_RETURN_LOCK(__weft_hb_got(m, lock_slow(wmutex_of(m), CLOCK_REALTIME, NULL, false)));
}

/* pthread_mutex_lock's whole entry, apart from its M:1 fast path (and
 * from M:N's, a tail call) so that the fast path saves no register (with
 * it inline, the fast path pushed two registers and made a 24-byte frame:
 * 8.5 -> 7.4 ns a lock+unlock on a Xeon guest). */
WEFT_SLOW_PART int mutex_lock_entry(pthread_mutex_t *m)
{
	WEFT_CALL();
	WEFT_RETURN_LOCK(__weft_hb_got(m, lock_slow(wmutex_of(m), CLOCK_REALTIME, NULL, false)));
}

/*
 * M:1, a default mutex (kind 0) that another UT holds: pthread_mutex_lock's
 * fast path found the caller the UT running on VP 0 and the kind 0, so
 * lock_slow's and wait_for's questions (process-shared, a deadline, the
 * protocols, robustness, the type, the ceiling, M:N's lock word, which
 * __weft_mn, fixed before a second UT exists, rules out for good) are
 * answered: it parks at once.  Unlock hands the mutex over (release makes
 * the waiter the owner), so a wake with 0 is the mutex taken; EINTR is a
 * handler run for this UT, after which POSIX has it wait on, as wait_for
 * does.  With m1_hand_over below, the hand-off row went from 538 to 463
 * instructions a hand-off (callgrind), 48.0 -> 42.8 ns.
 */
static inline __attribute__((always_inline)) int m1_wait_body(pthread_mutex_t *m, struct wmutex *w,
								 struct ut *self)
{
	for (;;) {
		self->sig_intr = 1;
		int r = __weft_park(&w->waiters, -1, WAIT_MUTEX, w);
		self->sig_intr = 0;
		if (r != EINTR)
			return __weft_hb_got(m, r);
		r = try_acquire(w, self);
		if (r != EBUSY)
			return __weft_hb_got(m, r);
	}
}

/* The caller found it M:1's running UT on VP 0 (__weft_m1_fast_self), so
 * WEFT_CALL's questions are answered but one: a call from inside Weft
 * (in_weft set: a nested call, which WEFT_CALL counts) takes the whole
 * entry.  Else M:1's entry, as the condition wait's (__weft_m1_enter_known:
 * no repeated fast_self): 48 of the hand-off row's 452 instructions were
 * the two WEFT_CALLs here and in m1_hand_over. */
static __attribute__((noinline)) int m1_wait(pthread_mutex_t *m, struct wmutex *w, struct ut *self)
{
	struct vp *vp = __weft_m1_enter_known();
	if (likely(vp)) {
		int r = m1_wait_body(m, w, self);
		WEFT_M1_LEAVE(vp, r == 0 ? EXIT_MUTEX_LOCK : EXIT_OTHER);
		return r;
	}
	WEFT_CALL();
	WEFT_RETURN_LOCK(m1_wait_body(m, w, self));
}

/*
 * M:1, a mutex of another type (RECURSIVE, ERRORCHECK, ADAPTIVE) with no
 * protocol, robustness or sharing: what try_acquire and m1_wait do for it,
 * inlined into pthread_mutex_lock's branch for a kind other than 0, so
 * the default's path keeps its instructions (but one register copy).
 * Free: taken; held by another UT:
 * m1_wait (unlock hands such a mutex over as a default one); held by the
 * caller, a recursive one counts; anything else takes the whole entry
 * (ERRORCHECK's EDEADLK, a NORMAL relock's deadlock, the count's limit).
 * The uncontended lock+unlock pair went through WEFT_CALL's entry and
 * end: 15.5 ns on the AMD EPYC guest, pinned; now 6.6 (RECURSIVE) and 6.3
 * (ERRORCHECK), against glibc's 6.8 and 7.9 (9.0 and 8.6 as a function
 * of its own: the call and a second fast_self).
 */
static inline __attribute__((always_inline)) int m1_typed_lock(pthread_mutex_t *m, struct wmutex *w)
{
	struct ut *self;
	if (likely((w->kind & ~MK_TYPE_MASK) == 0 && (self = __weft_m1_fast_self()))) {
		if (likely(!w->owner)) {
			w->owner = self;
			w->count = 0;
			WEFT_HB_ACQUIRE(m);
			WEFT_FAST_EPILOGUE(EXIT_MUTEX_LOCK);
			return 0;
		}
		if (w->owner != self)
			return WEFT_SLOW_CALL(m1_wait(m, w, self));
		if (mutex_type(w) == PTHREAD_MUTEX_RECURSIVE && w->count != UINT32_MAX) {
			w->count++;
			WEFT_HB_ACQUIRE(m);
			WEFT_FAST_EPILOGUE(EXIT_MUTEX_LOCK);
			return 0;
		}
	} else if ((w->kind & ~MK_TYPE_MASK) == MK_PI && !w->owner && !w->waiters.head &&
		   (self = __weft_m1_fast_self())) {
		/* a PRIO_INHERIT mutex and nothing more (no robustness, ceiling
		 * or sharing), free, with no waiter a broadcast moved onto it:
		 * take()'s work — on the owner's held list, and nothing lent
		 * (no waiter).  Through the whole entry it was 18.5 ns a
		 * lock+unlock pair, against glibc's 9.3 (its PI futex word's
		 * compare-and-swap, no system call when nobody waits). */
		w->owner = self;
		w->count = 0;
		__weft_held_link(w, self);
		WEFT_HB_ACQUIRE(m);
		WEFT_FAST_EPILOGUE(EXIT_MUTEX_LOCK);
		return 0;
	}
	if (unlikely(__weft_mn))
		return mn_mutex_lock(m);
	return WEFT_SLOW_CALL(mutex_lock_entry(m));
}

EXPORT WEFT_HOT_ENTRY int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct wmutex *w = wmutex_of(m);
	struct ut *self;
	/* M:1, a default mutex: free, taken without the entry's stores;
	 * held by another UT, waited for without lock_slow's questions */
	if (likely(w && w->kind == 0 && (self = __weft_m1_fast_self()))) {
		if (likely(!w->owner)) {
			w->owner = self;
			w->lockw = 1;     /* for M:N, should it start later */
			WEFT_HB_ACQUIRE(m);
			WEFT_FAST_EPILOGUE(EXIT_MUTEX_LOCK);
			return 0;
		}
		if (w->owner != self)
			return WEFT_SLOW_CALL(m1_wait(m, w, self));
	} else if (w && !__weft_mn && w->kind) {
		return WEFT_SLOW_CALL(m1_typed_lock(m, w));
	}
	if (unlikely(__weft_mn))
		return mn_mutex_lock(m);          /* a tail call, as before the split */
	return WEFT_SLOW_CALL(mutex_lock_entry(m));
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct wmutex *w = wmutex_of(m);
	struct ut *self;
	/* M:1, a mutex with no protocol, robustness or sharing that is free
	 * (taken) or held by another UT (EBUSY): as pthread_mutex_lock's fast
	 * paths; the caller's own relock takes the whole entry (a trylock +
	 * unlock pair went through WEFT_CALL: 15.7 ns on the AMD EPYC guest,
	 * pinned, against glibc's 12.4) */
	if (likely(w && (w->kind & ~MK_TYPE_MASK) == 0 && (self = __weft_m1_fast_self()))) {
		if (likely(!w->owner)) {
			w->owner = self;
			w->count = 0;
			if (!w->kind)
				w->lockw = 1;     /* for M:N, should it start later */
			WEFT_HB_ACQUIRE(m);
			WEFT_FAST_EPILOGUE(EXIT_MUTEX_LOCK);
			return 0;
		}
		if (w->owner != self) {
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return EBUSY;
		}
	}
	if (unlikely(__weft_mn) && mn_lock_fast(w))
		return 0;
	WEFT_CALL();
	if (!w)
		WEFT_RETURN_LOCK(EINVAL);
	if (w->kind & MK_PSHARED)
		WEFT_RETURN_LOCK(__weft_hb_got(m, __weft_pmutex_lock(m, true, false, CLOCK_REALTIME, NULL)));
	int r = try_acquire(w, __weft_self_ensure());
	WEFT_RETURN_LOCK(r == EDEADLK ? EBUSY : __weft_hb_got(m, r));
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abs)
{
	WEFT_CALL();
	WEFT_RETURN_LOCK(__weft_hb_got(m, lock_slow(wmutex_of(m), clk, abs, true)));
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	WEFT_CALL();
	WEFT_RETURN_LOCK(__weft_hb_got(m, lock_slow(wmutex_of(m), CLOCK_REALTIME, abs, true)));
}

static int unlock_slow(struct wmutex *w)
{
	if (!w)
		return EINVAL;
	if (w->kind & MK_PSHARED) {
		int r = __weft_pmutex_unlock((pthread_mutex_t *)w, true);
		__weft_preempt_check();   /* a UT of ours parked for it may outrank us */
		return r;
	}
	struct ut *self = __weft_self();
	int type = mutex_type(w);
	/* PRIO_INHERIT mutexes check too, as glibc's (the kernel's) do. */
	bool checked = type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK ||
		       (w->kind & (MK_ROBUST | MK_PI));
	if (w->owner != self) {
		if (checked)
			return EPERM;
		/* NORMAL unlocked by another UT or while unlocked: undefined
		 * in POSIX; like glibc, release it if it is held. */
		if (!w->owner)
			return 0;
	}
	if (type == PTHREAD_MUTEX_RECURSIVE && w->count) {
		w->count--;
		return 0;
	}
	release(w, true);
	return 0;
}

static __attribute__((noinline)) int mn_mutex_unlock(pthread_mutex_t *m)
{
	if (mn_unlock_fast(wmutex_of(m)))
		return 0;
	WEFT_CALL();
	WEFT_HB_RELEASE(m);
	return unlock_slow(wmutex_of(m));
}

/* pthread_mutex_unlock's part beyond its M:1 fast path (as
 * mutex_lock_entry). */
WEFT_SLOW_PART int mutex_unlock_entry(pthread_mutex_t *m)
{
	WEFT_CALL();
	WEFT_HB_RELEASE(m);
	return unlock_slow(wmutex_of(m));
}

/* M:1, a default mutex that is held and waited for (m1_wait's twin):
 * unlock_slow's questions are answered, and a NORMAL mutex is released
 * whoever holds it (unlock_slow's rule): hand it to the first waiter. */
static __attribute__((noinline)) int m1_hand_over(pthread_mutex_t *m, struct wmutex *w)
{
	struct vp *vp = __weft_m1_enter_known();   /* M:1's entry, as m1_wait's */
	if (likely(vp)) {
		WEFT_HB_RELEASE(m);
		release(w, true);
		WEFT_M1_LEAVE(vp, EXIT_OTHER);
		return 0;
	}
	WEFT_CALL();
	WEFT_HB_RELEASE(m);
	release(w, true);
	return 0;
}

/* M:1, pthread_mutex_unlock of a mutex of another type, as m1_typed_lock
 * (unlock_slow's rules for it): the owner's recursive count goes down, or
 * the mutex is released or handed over; anything else (EPERM, a NORMAL
 * one unlocked by another UT) takes the whole entry. */
static inline __attribute__((always_inline)) int m1_typed_unlock(pthread_mutex_t *m, struct wmutex *w)
{
	struct ut *self;
	if (likely((w->kind & ~MK_TYPE_MASK) == 0 && (self = __weft_m1_fast_self()) && w->owner == self)) {
		if (mutex_type(w) == PTHREAD_MUTEX_RECURSIVE && w->count) {
			WEFT_HB_RELEASE(m);
			w->count--;
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return 0;
		}
		if (likely(!w->waiters.head)) {
			WEFT_HB_RELEASE(m);
			w->owner = NULL;
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return 0;
		}
		return WEFT_SLOW_CALL(m1_hand_over(m, w));
	}
	if ((w->kind & ~MK_TYPE_MASK) == MK_PI && !w->waiters.head && (self = __weft_m1_fast_self()) &&
	    w->owner == self && !w->count && (self->prio > 0 || self->prio == self->base_prio)) {
		/* PRIO_INHERIT, as m1_typed_lock's: release() with nobody to
		 * hand it to and nothing lent that the owner runs at
		 * (release_protocol's "no change") */
		WEFT_HB_RELEASE(m);
		__weft_held_unlink(w, self);
		w->owner = NULL;
		WEFT_FAST_EPILOGUE(EXIT_OTHER);
		return 0;
	}
	if (unlikely(__weft_mn))
		return mn_mutex_unlock(m);
	return WEFT_SLOW_CALL(mutex_unlock_entry(m));
}

EXPORT WEFT_HOT_ENTRY int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct wmutex *w = wmutex_of(m);
	/* M:1, a default mutex: nobody waits, released without the entry's
	 * stores; held and waited for, handed over without unlock_slow's
	 * questions */
	if (likely(w && w->kind == 0 && __weft_m1_fast_self())) {
		if (likely(!w->waiters.head)) {
			WEFT_HB_RELEASE(m);
			w->owner = NULL;
			w->lockw = 0;
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return 0;
		}
		if (w->owner)
			return WEFT_SLOW_CALL(m1_hand_over(m, w));
	} else if (w && !__weft_mn && w->kind) {
		return WEFT_SLOW_CALL(m1_typed_unlock(m, w));
	}
	if (unlikely(__weft_mn))
		return mn_mutex_unlock(m);
	return WEFT_SLOW_CALL(mutex_unlock_entry(m));
}

EXPORT int pthread_mutex_consistent(pthread_mutex_t *m)
{
	WEFT_CALL();
	__weft_ensure();
	struct wmutex *w = wmutex_of(m);
	if (w && (w->kind & MK_PSHARED))
		return __weft_pmutex_consistent(m);
	/* POSIX's one error: not robust, or no inconsistent state that the
	 * caller holds. */
	if (!w || !(w->kind & MK_ROBUST) || !(w->kind & MK_INCONSISTENT) ||
	    w->owner != __weft_self())
		return EINVAL;
	w->kind &= ~MK_INCONSISTENT;
	return 0;
}

/* mutexattr.c decodes the attribute into a mutex kind. */
int __weft_mutexattr_kind(const pthread_mutexattr_t *a, int *kind) HIDDEN;

EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (!m)
		return EINVAL;
	int kind = 0;
	if (a) {
		int r = __weft_mutexattr_kind(a, &kind);
		if (r)
			return r;
	}
	if (kind & MK_PSHARED)
		return __weft_pmutex_init(m, kind);
	memset(m, 0, sizeof *m);
	wmutex_of(m)->kind = kind;
	return 0;
}

EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
	struct wmutex *w = wmutex_of(m);
	if (!w)
		return EINVAL;
	if (w->kind & MK_PSHARED)
		return __weft_pmutex_destroy(m);
	if (mutex_held(w) || w->waiters.head)
		return EBUSY;
	return 0;
}

EXPORT int pthread_mutex_getprioceiling(const pthread_mutex_t *m, int *ceiling)
{
	const struct wmutex *w = (const struct wmutex *)m;
	if (!w || !ceiling || !(w->kind & MK_PP))
		return EINVAL;
	if (w->kind & MK_PSHARED) {
		/* made by NPTL: glibc keeps the ceiling in __lock */
		*ceiling = (int)((unsigned)m->__data.__lock >> GM_CEIL_SHIFT);
		return 0;
	}
	*ceiling = wmutex_ceiling(w);
	return 0;
}

/*
 * POSIX: lock the mutex (waiting for it if another UT holds it, and without
 * the protocol: a caller above the old ceiling may change it), set the
 * ceiling, unlock.  Its own holder changes it in place, as glibc lets the
 * holder of a recursive mutex do; an errorcheck mutex's holder gets EDEADLK,
 * as in glibc, since locking it again is that type's error.
 */
EXPORT int pthread_mutex_setprioceiling(pthread_mutex_t *m, int ceiling, int *old)
{
	WEFT_CALL();
	struct wmutex *w = wmutex_of(m);
	if (!w || !(w->kind & MK_PP) || ceiling < 1 || ceiling > WEFT_PRIO_MAX)
		return EINVAL;
	if (w->kind & MK_PSHARED)
		return ENOTSUP;           /* PRIO_PROTECT is not process-shared here */
	struct ut *self = __weft_self_ensure();
	bool mine = w->owner == self;
	if (mine && mutex_type(w) == PTHREAD_MUTEX_ERRORCHECK)
		return EDEADLK;
	if (!mine) {
		if (!w->owner)
			take(w, self);
		else
			__weft_park(&w->waiters, -1, WAIT_MUTEX, w);   /* handed over: 0 */
	}
	int prev = wmutex_ceiling(w);
	w->kind = (w->kind & ~MK_CEIL_MASK) | (ceiling << MK_CEIL_SHIFT);
	if (old)
		*old = prev;
	if (mine) {
		__weft_prio_recompute(self);
		__weft_preempt_check();
	} else {
		__weft_mutex_release(w, true);
	}
	return 0;
}
