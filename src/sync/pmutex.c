/*
 * pmutex.c — process-shared mutexes: glibc 2.36's layout and futex
 * protocol (nptl/pthread_mutex_{lock,timedlock,trylock,unlock}.c,
 * lowlevellock), so a UT of this process and a thread of an NPTL process
 * exclude each other on one mutex in shared memory.
 *
 * The protocol is glibc's and is kept where compatibility needs it:
 *   - normal, errorcheck, recursive, adaptive: __lock is 0 (free), 1
 *     (held), 2 (held, sleepers possible); lock is CAS 0->1, then exchange
 *     to 2 and a futex wait on 2 until the exchange returns 0; unlock is an
 *     exchange to 0 and a wake of one sleeper if the old value was 2.
 *     __owner holds the owner's TID, __count the recursion depth, __nusers
 *     the users count that pthread_mutex_destroy tests.
 *   - robust: __lock is TID | FUTEX_WAITERS | FUTEX_OWNER_DIED; an owner
 *     that dies is marked FUTEX_OWNER_DIED by the kernel (from its robust
 *     list) and the next locker gets EOWNERDEAD with __owner set to
 *     PTHREAD_MUTEX_INCONSISTENT; pthread_mutex_consistent sets it to the
 *     TID; an unlock without it sets PTHREAD_MUTEX_NOTRECOVERABLE, and
 *     every later lock answers ENOTRECOVERABLE.  A held robust mutex is on
 *     the kernel's robust list in glibc's format (the mutex's __list, the
 *     head's list_op_pending set across each change), so the kernel marks
 *     it if this process dies holding it.
 * Weft's own part (pshared.h): every UT of this process writes the one
 * process TID, so which UT holds the mutex is kept in the holder table.
 * That record answers what the TID cannot: EDEADLK for an errorcheck
 * relock, the recursion of the right UT, EPERM for an unlock by another UT.
 * It also lets a UT that finds an errorcheck, recursive or robust mutex
 * held by another UT of this process park on the record instead of
 * sleeping in the kernel: only that holder can let go of it, and only
 * while the VP runs, so the wait costs a park, not a handoff.  Waiters for
 * a holder in another process, and every waiter of a normal or adaptive
 * mutex (which anyone, in any process, may unlock), sleep in the kernel
 * (the blocking bracket).
 *   Baton rule: when a UT of this process lets go of the mutex (unlock,
 *   death) and UTs of this process are parked on its record, the first is
 *   woken; a woken UT either takes the mutex, parks again behind a new
 *   holder of this process, or — before it leaves the record to sleep in
 *   the kernel, time out or fail — wakes the next one.  So no UT is left
 *   parked with no UT of this process holding the mutex or on its way to.
 * A UT that exits holding a robust mutex is treated as glibc's owner
 * death, exactly as the kernel would treat it: FUTEX_OWNER_DIED in the
 * word, one sleeper woken, off the robust list; the next locker, here or
 * in the other process, gets EOWNERDEAD.  A non-robust one stays locked
 * for ever, as with NPTL (its record says PH_GONE).
 * PRIO_INHERIT and PRIO_PROTECT are not supported process-shared
 * (ENOTSUP, docs/pshared.md says why).
 */
#include "pshared.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#define QUEUE_PTR_ADJUST offsetof(__pthread_list_t, __next)

static inline int *lockw(pthread_mutex_t *m) { return &m->__data.__lock; }
static inline int kind_of(pthread_mutex_t *m) { return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED); }

/* glibc's atomic_compare_and_exchange_val_acq: the old value. */
static inline int cas_val(int *p, int expected, int desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	return expected;
}

/* ---- the robust list, in glibc's format (nptl/descr.h ENQUEUE/DEQUEUE) ---- */

static inline void op_pending(struct robust_list_head *h, pthread_mutex_t *m)
{
	if (h) {
		h->list_op_pending = m ? (struct robust_list *)&m->__data.__list.__next : NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

static void enqueue(struct robust_list_head *h, pthread_mutex_t *m)
{
	if (!h)
		return;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);     /* acquired before enqueued */
	/* glibc's list: every link points at a __next word (the head's is
	 * its `list`), the word before it is the __prev one */
	__pthread_list_t *next =
		(__pthread_list_t *)(((uintptr_t)h->list.next & ~1ul) - QUEUE_PTR_ADJUST);
	next->__prev = (void *)&m->__data.__list.__next;
	m->__data.__list.__next = (void *)h->list.next;
	m->__data.__list.__prev = (void *)h;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);     /* the entry is ready first */
	h->list.next = (struct robust_list *)&m->__data.__list.__next;
}

static void dequeue(pthread_mutex_t *m)
{
	if (!m->__data.__list.__next)
		return;                                  /* never enqueued: no list */
	__pthread_list_t *next =
		(__pthread_list_t *)(((uintptr_t)m->__data.__list.__next & ~1ul) - QUEUE_PTR_ADJUST);
	next->__prev = m->__data.__list.__prev;
	__pthread_list_t *prev =
		(__pthread_list_t *)(((uintptr_t)m->__data.__list.__prev & ~1ul) - QUEUE_PTR_ADJUST);
	prev->__next = m->__data.__list.__next;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);     /* off the list before __next changes */
	m->__data.__list.__prev = NULL;
	m->__data.__list.__next = NULL;
}

/* ---- the holder record ---- */

/* self now holds m. */
static int took(pthread_mutex_t *m, struct ut *self, int result)
{
	struct pholder *h = __weft_pholder_get(m, PH_MUTEX);
	if (h)
		h->owner = self;
	/* Out of memory for the record: the mutex is held all the same, only
	 * the per-UT checks (EDEADLK, EPERM) cannot see who holds it. */
	return result;
}

/* The baton rule: nobody of this process holds m; wake one parked UT.
 * Never switches (a condition wait's release must not): the exported
 * calls end with a preemption check. */
static void pass_baton(pthread_mutex_t *m)
{
	struct pholder *h = __weft_pholder_find(m);
	if (!h)
		return;
	if (!h->owner && h->waiters.head) {
		__weft_unpark_nopreempt(h->waiters.head, 0);
		return;
	}
	__weft_pholder_tidy(h);
}

/* A UT of this process other than the caller may hold m, or the caller
 * itself: park until it lets go.  0, or ETIMEDOUT.  The caller looks the
 * record up again afterwards. */
static int park_behind(struct pholder *h, int64_t deadline)
{
	return __weft_park(&h->waiters, deadline, WAIT_MUTEX, (void *)h->obj);
}

/* What a waiting caller needs once: the deadline for parks, and the time
 * checked as glibc checks it (only when it must wait). */
struct wait_time {
	clockid_t clk;
	const struct timespec *abs;     /* NULL: no limit */
	int64_t deadline;               /* monotonic ns, -1: none */
	bool checked;
};

static int wait_time_check(struct wait_time *t)
{
	if (t->checked || !t->abs)
		return 0;
	t->checked = true;
	int r = __weft_ptime_check(t->clk, t->abs);
	if (r)
		return r;
	return __weft_abs_deadline(t->clk, t->abs, &t->deadline);
}

/* The mutex is held by someone; if it is a UT of this process (the record
 * says so) and only that UT can let go of it, park behind it.  1: parked
 * and woken (try again), 0: sleep in the kernel instead, or an error.
 * A normal or adaptive mutex may be unlocked by anyone — another UT, or
 * another process (a forked child unlocking what its parent locked, as
 * glibc's tst-cond4 does) — and such an unlock only wakes the kernel's
 * sleepers, so its waiters always sleep in the kernel. */
static int wait_local(pthread_mutex_t *m, struct wait_time *t, int *err)
{
	int kind = kind_of(m), type = GM_TYPE(kind) & 3;
	if (!(kind & GM_ROBUST) && type != PTHREAD_MUTEX_RECURSIVE &&
	    type != PTHREAD_MUTEX_ERRORCHECK)
		return 0;
	struct pholder *h = __weft_pholder_find(m);
	if (!h || !h->owner)
		return 0;
	int r = park_behind(h, t->deadline);
	if (r) {
		pass_baton(m);
		*err = r;
	}
	return 1;
}

/* Sleep in the kernel while the word is `val`; the baton goes on first. */
static int wait_kernel(pthread_mutex_t *m, int val, struct wait_time *t)
{
	pass_baton(m);
	return __weft_pfutex_wait(lockw(m), (uint32_t)val, t->clk, t->abs, false);
}

/* ---- lock ---- */

/* EINVAL for a destroyed mutex (__kind -1) or a kind glibc never makes;
 * ENOTSUP for the priority protocols (docs/pshared.md says why). */
static int kind_check(int kind)
{
	int type = GM_TYPE(kind);
	if (type & ~(GM_ROBUST | GM_PI | GM_PP | 3))
		return EINVAL;
	return (type & (GM_PI | GM_PP)) ? ENOTSUP : 0;
}

/* Normal, errorcheck, recursive, adaptive (glibc's simple types). */
static int lock_simple(pthread_mutex_t *m, struct ut *self, pid_t tid, bool try, bool cond,
		       struct wait_time *t)
{
	int type = GM_TYPE(kind_of(m)) & 3;
	if (pholder_owner(m) == self) {
		if (type == PTHREAD_MUTEX_RECURSIVE) {
			if (m->__data.__count + 1 == 0)
				return EAGAIN;
			m->__data.__count++;
			return 0;
		}
		if (type == PTHREAD_MUTEX_ERRORCHECK)
			return try ? EBUSY : EDEADLK;
		/* normal, adaptive: relocking waits for an unlock by anyone, here
		 * or in another process (glibc: a deadlock unless one comes) */
	}
	/* lll_lock: CAS 0 -> 1, then exchange to 2 until it returns 0;
	 * lll_cond_lock starts with the exchange. */
	bool marked = cond;
	for (;;) {
		int old = marked ? __atomic_exchange_n(lockw(m), 2, __ATOMIC_ACQUIRE)
				 : cas_val(lockw(m), 0, 1);
		if (old == 0)
			break;
		if (try)
			return EBUSY;
		int r = wait_time_check(t);
		if (r)
			return r;
		if (!marked) {
			marked = true;  /* glibc: a word already 2 is slept on as is */
			if (__atomic_load_n(lockw(m), __ATOMIC_RELAXED) != 2)
				continue;
		}
		int err = 0;
		if (wait_local(m, t, &err)) {
			if (err)
				return err;
			continue;
		}
		r = wait_kernel(m, 2, t);
		if (r == ETIMEDOUT || r == EINVAL)
			return r;
	}
	m->__data.__owner = tid;
	if (!cond)
		m->__data.__nusers++;
	if (type == PTHREAD_MUTEX_RECURSIVE)
		m->__data.__count = 1;
	return took(m, self, 0);
}

/* Robust (glibc's __pthread_mutex_lock_full, timedlock and trylock). */
static int lock_robust(pthread_mutex_t *m, struct ut *self, pid_t tid, bool try, bool cond,
		       struct wait_time *t)
{
	int type = GM_TYPE(kind_of(m)) & 3;
	struct robust_list_head *head = __weft_pshared_robust_head();
	/* glibc's lock_full for a condition relock assumes other sleepers */
	int assume_waiters = cond ? FUTEX_WAITERS : 0;
	for (;;) {
		op_pending(head, m);
		int old = __atomic_load_n(lockw(m), __ATOMIC_RELAXED);
		if (old == 0) {
			old = cas_val(lockw(m), 0, tid | assume_waiters);
			if (old == 0)
				break;
		}
		if (old & FUTEX_OWNER_DIED) {
			int nv = tid | (old & FUTEX_WAITERS) | assume_waiters;
			if (cas_val(lockw(m), old, nv) != old)
				continue;
			m->__data.__count = 1;
			m->__data.__owner = GM_INCONSISTENT;
			enqueue(head, m);
			op_pending(head, NULL);
			/* glibc: the dead owner's user is not discounted */
			if (cond)
				m->__data.__nusers--;
			return took(m, self, EOWNERDEAD);
		}
		op_pending(head, NULL);
		if ((old & FUTEX_TID_MASK) == tid && pholder_owner(m) == self) {
			if (type == PTHREAD_MUTEX_ERRORCHECK)
				return EDEADLK;
			if (type == PTHREAD_MUTEX_RECURSIVE) {
				if (m->__data.__count + 1 == 0)
					return EAGAIN;
				m->__data.__count++;
				return 0;
			}
		}
		if (try)
			return EBUSY;
		int r = wait_time_check(t);
		if (r)
			return r;
		int err = 0;
		if ((old & FUTEX_TID_MASK) == tid && wait_local(m, t, &err)) {
			if (err)
				return err;
			continue;
		}
		/* Mark the sleepers and sleep on the word as marked. */
		if (!(old & FUTEX_WAITERS)) {
			if (cas_val(lockw(m), old, old | FUTEX_WAITERS) != old)
				continue;
			old |= FUTEX_WAITERS;
		}
		assume_waiters |= FUTEX_WAITERS;   /* we may share the mark now */
		r = wait_kernel(m, old, t);
		if (r == ETIMEDOUT || r == EINVAL)
			return r;
	}
	/* Ours: still usable? */
	if (m->__data.__owner == GM_NOTRECOVERABLE) {
		m->__data.__count = 0;
		int old = __atomic_exchange_n(lockw(m), 0, __ATOMIC_RELEASE);
		if (old > 1)
			__weft_pfutex_wake(lockw(m), 1);
		op_pending(head, NULL);
		pass_baton(m);
		return ENOTRECOVERABLE;
	}
	m->__data.__count = 1;
	enqueue(head, m);
	op_pending(head, NULL);
	m->__data.__owner = tid;
	if (!cond)
		m->__data.__nusers++;
	return took(m, self, 0);
}

int __weft_pmutex_lock(pthread_mutex_t *m, bool try, bool cond, clockid_t clk,
		       const struct timespec *abs)
{
	struct ut *self = __weft_self_ensure();
	int kind = kind_of(m);
	int r = kind_check(kind);
	if (r)
		return r;
	struct wait_time t = { clk, abs, -1, false };
	pid_t tid = __weft_pshared_tid();
	if (kind & GM_ROBUST)
		return lock_robust(m, self, tid, try, cond, &t);
	return lock_simple(m, self, tid, try, cond, &t);
}

/* ---- unlock ---- */

static void let_go(pthread_mutex_t *m)
{
	struct pholder *h = __weft_pholder_find(m);
	if (h)
		h->owner = NULL;
	pass_baton(m);
}

int __weft_pmutex_unlock(pthread_mutex_t *m, bool decr)
{
	__weft_self_ensure();
	int kind = kind_of(m);
	int type = GM_TYPE(kind);
	int r = kind_check(kind);
	if (r)
		return r;
	struct ut *self = __weft_self();
	bool mine = pholder_owner(m) == self;
	pid_t tid = __weft_pshared_tid();
	if (!(kind & GM_ROBUST)) {
		if (type == PTHREAD_MUTEX_RECURSIVE) {
			if (!mine || m->__data.__owner != tid)
				return EPERM;
			if (--m->__data.__count != 0)
				return 0;
		} else if (type == PTHREAD_MUTEX_ERRORCHECK) {
			if (!mine || m->__data.__owner != tid ||
			    __atomic_load_n(lockw(m), __ATOMIC_RELAXED) == 0)
				return EPERM;
		}
		/* normal, adaptive: released by whoever asks, as in glibc */
		m->__data.__owner = 0;
		if (decr)
			m->__data.__nusers--;
		int old = __atomic_exchange_n(lockw(m), 0, __ATOMIC_RELEASE);
		if (old > 1)
			__weft_pfutex_wake(lockw(m), 1);
		let_go(m);
		return 0;
	}
	/* robust */
	int newowner = 0;
	int word = __atomic_load_n(lockw(m), __ATOMIC_RELAXED);
	if (type == (GM_ROBUST | PTHREAD_MUTEX_RECURSIVE)) {
		if ((word & FUTEX_TID_MASK) == tid && mine &&
		    m->__data.__owner == GM_INCONSISTENT) {
			if (--m->__data.__count != 0)
				return ENOTRECOVERABLE;
			newowner = GM_NOTRECOVERABLE;
		} else {
			if (!mine || m->__data.__owner != tid)
				return EPERM;
			if (--m->__data.__count != 0)
				return 0;
		}
	} else {
		if ((word & FUTEX_TID_MASK) != tid || word == 0 || !mine)
			return EPERM;
		if (m->__data.__owner == GM_INCONSISTENT)
			newowner = GM_NOTRECOVERABLE;
	}
	struct robust_list_head *head = __weft_pshared_robust_head();
	op_pending(head, m);
	dequeue(m);
	m->__data.__owner = newowner;
	if (decr)
		m->__data.__nusers--;
	if (__atomic_exchange_n(lockw(m), 0, __ATOMIC_RELEASE) & FUTEX_WAITERS)
		__weft_pfutex_wake(lockw(m), 1);
	op_pending(head, NULL);
	let_go(m);
	return 0;
}

/* ---- the rest of the interface ---- */

int __weft_pmutex_init(pthread_mutex_t *m, int kind)
{
	memset(m, 0, sizeof *m);
	__atomic_store_n(&m->__data.__kind, kind | GM_PSHARED, __ATOMIC_RELAXED);
	return 0;
}

int __weft_pmutex_consistent(pthread_mutex_t *m)
{
	__weft_self_ensure();
	if (!(kind_of(m) & GM_ROBUST) || m->__data.__owner != GM_INCONSISTENT ||
	    pholder_owner(m) != __weft_self())
		return EINVAL;
	m->__data.__owner = __weft_pshared_tid();
	return 0;
}

int __weft_pmutex_destroy(pthread_mutex_t *m)
{
	/* glibc: busy while users are counted (not for robust ones), and
	 * marked destroyed (__kind -1) */
	if (!(kind_of(m) & GM_ROBUST) && m->__data.__nusers != 0)
		return EBUSY;
	__atomic_store_n(&m->__data.__kind, -1, __ATOMIC_RELAXED);
	return 0;
}

bool __weft_pmutex_owned(pthread_mutex_t *m, struct ut *self)
{
	return pholder_owner(m) == self && self;
}

/* A UT exits holding m: the kernel's treatment of a dead owner
 * (kernel/futex/core.c handle_futex_death) for a robust one. */
static void owner_died(struct pholder *h, struct ut *t)
{
	pthread_mutex_t *m = (pthread_mutex_t *)h->obj;
	if (h->kind != PH_MUTEX || !(kind_of(m) & GM_ROBUST)) {
		/* locked for ever, as with NPTL (an rwlock's writer too) */
		h->owner = PH_GONE;
		return;
	}
	pid_t tid = __weft_pshared_tid();
	struct robust_list_head *head = __weft_pshared_robust_head();
	op_pending(head, m);
	dequeue(m);
	int old = __atomic_load_n(lockw(m), __ATOMIC_RELAXED);
	while ((old & FUTEX_TID_MASK) == tid) {
		int nv = (old & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
		if (__atomic_compare_exchange_n(lockw(m), &old, nv, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			if (old & FUTEX_WAITERS)
				__weft_pfutex_wake(lockw(m), 1);
			break;
		}
	}
	op_pending(head, NULL);
	h->owner = NULL;
	/* the exiting UT must not switch here: wake without preempting */
	if (h->waiters.head)
		__weft_unpark_nopreempt(h->waiters.head, 0);
	else
		__weft_pholder_tidy(h);
}

void __weft_pmutex_owner_died(struct ut *t)
{
	__weft_pholder_each_owned(t, owner_died);
}

/* ---- a condition wait's release and relock, either kind of mutex ---- */

int __weft_cond_mutex_release(pthread_mutex_t *m, uint32_t *depth)
{
	struct ut *self = __weft_self();
	if (pmutex_is(m)) {
		if (!__weft_pmutex_owned(m, self))
			return EPERM;
		*depth = 0;
		if (GM_TYPE(kind_of(m)) & PTHREAD_MUTEX_RECURSIVE) {
			*depth = m->__data.__count;
			m->__data.__count = 1;
		}
		return __weft_pmutex_unlock(m, false);
	}
	struct wmutex *w = wmutex_of(m);
	if (w->owner != self)
		return EPERM;
	*depth = w->count;
	__weft_mutex_release(w, false);
	return 0;
}

int __weft_cond_mutex_relock(pthread_mutex_t *m, uint32_t depth)
{
	if (pmutex_is(m)) {
		int r = __weft_pmutex_lock(m, false, true, CLOCK_REALTIME, NULL);
		if ((r == 0 || r == EOWNERDEAD) && depth)
			m->__data.__count = depth;
		return r;
	}
	struct wmutex *w = wmutex_of(m);
	int r = __weft_mutex_acquire(w, __weft_self(), -1);
	if (r == 0 || r == EOWNERDEAD)
		w->count = depth;
	return r;
}
