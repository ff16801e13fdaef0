/*
 * sem.c — unnamed POSIX semaphores (sem_init ... sem_getvalue) in glibc's
 * 32-byte sem_t.
 *
 * `value` is the count of free units; waiters park on the semaphore's queue,
 * highest priority first.  Post hands its unit straight to the first waiter
 * instead of raising the count, so a woken waiter never finds the unit gone
 * and value stays 0 while anyone waits.  Invariant: value > 0 implies no
 * waiters.  These calls return -1 with errno set, as POSIX says.
 *
 * Process-shared semaphores — sem_init(s, 1, v), and the named ones that
 * glibc's sem_open makes (sem_open, sem_close and sem_unlink stay glibc's)
 * — are glibc's struct new_sem, recognised by its `private` word (offset 8,
 * never set in Weft's layout) at every call and handed to psem.c.
 *
 * M:N.  A wait that finds a unit and a post that finds no waiter do not
 * enter Weft (the runtime lock, mn.c): each is a CAS on `value`, whose bit
 * 31 (SEM_VALUE_MAX is 2^31 - 1) says "UTs may wait".  A UT that must wait
 * sets it, under the runtime lock, before it parks; a post that sees it
 * goes through the lock, where it hands its unit to the first waiter and
 * clears the bit when none is left; a wait that finds the bit takes the
 * lock too.  So a fast post never raises a count that waiters should have
 * had, and the slow paths, serial under the lock, see every change the
 * fast ones make through the CAS.  M:1 never sets the bit.
 */
#include "pshared.h"

#include <limits.h>
#include <string.h>

static inline struct wsem *wsem_of(sem_t *s) { return (struct wsem *)s; }

/* ---- M:N's word (the header's rules) ---- */

#define SEM_WAITED 0x80000000u
#define SEM_COUNT(v) ((v) & ~SEM_WAITED)

static inline uint32_t value_load(const struct wsem *w) { return __atomic_load_n(&w->value, __ATOMIC_ACQUIRE); }

static inline bool value_cas(struct wsem *w, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&w->value, &from, to, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Take a unit if there is one: M:1's decrement, M:N's CAS (under the
 * runtime lock here, or on the fast path). */
static inline __attribute__((always_inline)) bool take_unit(struct wsem *w, bool mn)
{
	if (!mn) {
		if (!w->value)
			return false;
		w->value--;
		return true;
	}
	for (;;) {
		uint32_t v = value_load(w);
		if (!SEM_COUNT(v))
			return false;
		if (value_cas(w, v, v - 1))
			return true;
	}
}

/* Under the runtime lock, before parking: mark the word waited for, unless
 * a unit came (then take it: true). */
static inline __attribute__((always_inline)) bool mark_waited_or_take(struct wsem *w, bool mn)
{
	if (!mn)
		return false;
	for (;;) {
		uint32_t v = value_load(w);
		if (SEM_COUNT(v)) {
			if (value_cas(w, v, v - 1))
				return true;      /* a fast post came meanwhile */
			continue;
		}
		if ((v & SEM_WAITED) || value_cas(w, v, v | SEM_WAITED))
			return false;
	}
}

static __attribute__((noinline)) bool mn_wait_fast(struct wsem *w)
{
	struct ut *self;
	/* sem_wait is a cancellation point: a request due goes the slow way */
	if (!w || w->private || !(self = __weft_mn_fast_self()) || __weft_cancel_due(self))
		return false;
	uint32_t v = value_load(w);
	if (!SEM_COUNT(v) || (v & SEM_WAITED) || !value_cas(w, v, v - 1))
		return false;
	WEFT_HB_ACQUIRE(w);
	return true;
}

static __attribute__((noinline)) bool mn_post_fast(struct wsem *w)
{
	if (!w || w->private || !__weft_mn_fast_self())
		return false;
	uint32_t v = value_load(w);
	if ((v & SEM_WAITED) || v >= SEM_VALUE_MAX)
		return false;
	WEFT_HB_RELEASE(w);
	return value_cas(w, v, v + 1);
}

static inline int fail(int e)
{
	errno = e;
	return -1;
}

EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
	if (!s || value > SEM_VALUE_MAX)
		return fail(EINVAL);
	if (pshared)
		return __weft_psem_init(s, value);
	memset(s, 0, sizeof *s);
	wsem_of(s)->value = value;
	return 0;
}

EXPORT int sem_destroy(sem_t *s)
{
	if (!s)
		return fail(EINVAL);
	if (psem_is(s))
		return 0;                 /* glibc: nothing to do */
	if (wsem_of(s)->waiters.head)
		return fail(EBUSY);
	return 0;
}

/* Inlined twice: mn is __weft_mn, known where it is called. */
static inline __attribute__((always_inline)) int take(struct wsem *w, clockid_t clk, const struct timespec *abs,
						       bool try_only, bool mn)
{
	if (!w)
		return fail(EINVAL);
	if (unlikely(w->private)) {
		int r = __weft_psem_wait((sem_t *)w, try_only, clk, abs);
		return r ? fail(r) : 0;
	}
	if (!try_only) {
		/* POSIX: sem_wait is a cancellation point even when it does not
		 * block (glibc tests here too). */
		__weft_ensure();
		__weft_testcancel();
	}
	if (likely(take_unit(w, mn)))
		return 0;
	if (try_only)
		return fail(EAGAIN);
	int64_t deadline = -1;
	if (abs) {
		int r = __weft_sync_deadline(clk, abs, &deadline);
		if (r)
			return fail(r);
	}
	__weft_ensure();
	for (;;) {
		if (mark_waited_or_take(w, mn))
			return 0;
		int r = __weft_park_cancellable(&w->waiters, deadline, WAIT_SEM, w);
		if (r == ECANCELED)
			__weft_hooks.cancel_act();  /* post hands units only to those it wakes */
		/* a handler ran for this UT: EINTR, or (SA_RESTART) wait on, as
		 * Linux restarts sem_wait; a unit posted meanwhile is there */
		if (r == EINTR && __weft_sig_restartable()) {
			if (take_unit(w, mn))
				return 0;
			continue;
		}
		return r ? fail(r) : 0;
	}
}

static __attribute__((noinline)) int take_m1(struct wsem *w, clockid_t clk, const struct timespec *abs, bool try_only)
{
	return take(w, clk, abs, try_only, false);
}

static __attribute__((noinline)) int take_mn(struct wsem *w, clockid_t clk, const struct timespec *abs, bool try_only)
{
	return take(w, clk, abs, try_only, true);
}

/* Take a unit, waiting until abs on clk (abs NULL: no deadline). */
static inline int sem_take(struct wsem *w, clockid_t clk, const struct timespec *abs, bool try_only)
{
	return __weft_mn ? take_mn(w, clk, abs, try_only) : take_m1(w, clk, abs, try_only);
}

static const struct timespec bad_time = { 0, -1 };

/*
 * M:1 and a unit there to take, or nobody waiting for the one posted: the
 * few loads and stores of an uncontended mutex, with M:1's fast entry
 * (__weft_m1_fast_self: in_weft stays clear, as in pthread_mutex_lock);
 * a wait that has a cancellation due, or would park, and a post that wakes
 * someone take __weft_m1_enter's entry below.  The sem_nowait row (a post,
 * then a wait that finds the unit) went from 7.1-7.6 ns to 5.5-6.3 on the
 * AMD EPYC guest, pinned (glibc: 6.1).  The price is paid by the waits and
 * posts that block: the sem row (ping-pong) 31.5 -> 32.5 ns, from the
 * added tests and the layout they bring (several orders were tried).
 */
static inline __attribute__((always_inline)) bool m1_unit_there(struct wsem *w)
{
	return w && w->value && !w->private;
}

EXPORT WEFT_HOT_ENTRY int sem_wait(sem_t *s)
{
	struct wsem *w = wsem_of(s);
	struct ut *self = __weft_m1_fast_self();
	if (likely(self)) {
		if (likely(m1_unit_there(w) && !__weft_cancel_due(self))) {
			w->value--;
			WEFT_HB_ACQUIRE(s);
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return 0;
		}
		struct vp *vp = __weft_m1_enter_known();   /* M:1's entry */
		if (likely(vp)) {
			int r = __weft_hb_got(s, take_m1(w, 0, NULL, false));
			WEFT_M1_LEAVE(vp, EXIT_OTHER);
			return r;
		}
	}
	if (unlikely(__weft_mn) && mn_wait_fast(wsem_of(s)))
		return 0;
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), 0, NULL, false));
}

EXPORT int sem_trywait(sem_t *s)
{
	struct wsem *w = wsem_of(s);
	if (likely(m1_unit_there(w) && __weft_m1_fast_self())) {
		w->value--;
		WEFT_HB_ACQUIRE(s);
		WEFT_FAST_EPILOGUE(EXIT_OTHER);
		return 0;
	}
	if (unlikely(__weft_mn) && mn_wait_fast(wsem_of(s)))
		return 0;
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), 0, NULL, true));
}

EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs)
{
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), CLOCK_REALTIME, abs ? abs : &bad_time, false));
}

EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abs)
{
	WEFT_CALL();
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return fail(EINVAL);
	return __weft_hb_got(s, sem_take(wsem_of(s), clk, abs ? abs : &bad_time, false));
}

/* Post under Weft (the runtime lock, in M:N): hand the unit to the first
 * waiter, or add it.  Inlined into both posts. */
static inline __attribute__((always_inline)) int post(sem_t *s, bool mn)
{
	struct wsem *w = wsem_of(s);
	if (!w)
		return fail(EINVAL);
	if (unlikely(w->private)) {
		int r = __weft_psem_post(s);
		return r ? fail(r) : 0;
	}
	if (unlikely(w->waiters.head)) {
		struct ut *t = w->waiters.head;
		/* M:N: the last waiter taken, nobody waits: the bit goes
		 * (before the unpark, which may switch to t at once) */
		if (mn && t->q_next == t)
			__atomic_and_fetch(&w->value, ~SEM_WAITED, __ATOMIC_RELEASE);
		__weft_unpark(t, 0);
		return 0;
	}
	if (!mn) {
		if (w->value >= SEM_VALUE_MAX)
			return fail(EOVERFLOW);
		w->value++;
		return 0;
	}
	/* M:N: the bit may be stale (its waiters left: a timeout, a cancel) */
	for (;;) {
		uint32_t v = value_load(w);
		if (SEM_COUNT(v) >= SEM_VALUE_MAX)
			return fail(EOVERFLOW);
		if (value_cas(w, v, SEM_COUNT(v) + 1))
			return 0;
	}
}

static __attribute__((noinline)) int mn_sem_post(sem_t *s)
{
	if (mn_post_fast(wsem_of(s)))
		return 0;
	WEFT_CALL();
	WEFT_HB_RELEASE(s);
	return post(s, true);
}

EXPORT WEFT_HOT_ENTRY int sem_post(sem_t *s)
{
	struct wsem *w = wsem_of(s);
	if (likely(__weft_m1_fast_self() != NULL)) {
		if (likely(w && !w->private && !w->waiters.head && w->value < SEM_VALUE_MAX)) {
			WEFT_HB_RELEASE(s);
			w->value++;
			WEFT_FAST_EPILOGUE(EXIT_OTHER);
			return 0;
		}
		struct vp *vp = __weft_m1_enter_known();   /* M:1's entry */
		if (likely(vp)) {
			WEFT_HB_RELEASE(s);
			int r = post(s, false);
			WEFT_M1_LEAVE(vp, EXIT_OTHER);
			return r;
		}
	}
	if (unlikely(__weft_mn))
		return mn_sem_post(s);
	WEFT_CALL();
	WEFT_HB_RELEASE(s);
	return post(s, false);
}

EXPORT int sem_getvalue(sem_t *s, int *value)
{
	if (!s || !value)
		return fail(EINVAL);
	if (psem_is(s))
		return __weft_psem_getvalue(s, value);
	*value = (int)SEM_COUNT(value_load(wsem_of(s)));
	return 0;
}
