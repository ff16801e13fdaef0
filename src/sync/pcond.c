/*
 * pcond.c — process-shared condition variables: glibc 2.36's layout and
 * its group-based algorithm (nptl/pthread_cond_{wait,signal,broadcast,
 * common,destroy}.c), kept step for step because a waiter here and a
 * signaller in an NPTL process (or the reverse) must agree on every word:
 * __wseq (waiter sequence; bit 0: which group is G2), __g1_start,
 * __g_refs (futex waiters per group; bit 0: a wake request), __g_size,
 * __g1_orig_size (its low 2 bits are the signallers' internal lock),
 * __wrefs (waiter references << 3; bit 2: destroy waits; bit 1: monotonic
 * clock; bit 0: process-shared) and __g_signals (bit 0: group closed).
 * glibc's file pthread_cond_wait.c explains the algorithm; the comments
 * here say only where Weft differs:
 *   - every futex wait is a shared futex wait inside the blocking bracket
 *     (pfutex.c), so a waiter sleeps alone, off the VP; the signallers'
 *     internal lock and the group switch (which waits for G1's sleepers to
 *     leave) sleep the same way, so a waiter of this process can run and
 *     leave meanwhile;
 *   - the mutex is either kind (a Weft mutex or a process-shared one):
 *     released and relocked through __weft_cond_mutex_release/relock, which
 *     check that the caller holds it (EPERM) and release a recursive one
 *     fully, restoring its depth after;
 *   - cancellation: the wait is a cancellation point before it registers
 *     (the mutex still held) and while it sleeps (pthread_cancel wakes the
 *     sleeper); a cancelled waiter does what glibc's cleanup handler does
 *     (leave the group, send on a signal it may have consumed, confirm its
 *     wake-up, relock the mutex) and then acts on the request.
 * Waiters of this process and of others are ordered by the same sequence,
 * so signal wakes the oldest group's waiters first wherever they live.
 */
#include "pshared.h"

#include <limits.h>
#include <string.h>

#define MAX_GROUP_SIZE (1u << 29)       /* __PTHREAD_COND_MAX_GROUP_SIZE */

#define D(c) ((c)->__data)

static inline uint64_t load_wseq(pthread_cond_t *c)
{
	return __atomic_load_n(&D(c).__wseq.__value64, __ATOMIC_RELAXED);
}
static inline uint64_t load_g1_start(pthread_cond_t *c)
{
	return __atomic_load_n(&D(c).__g1_start.__value64, __ATOMIC_RELAXED);
}

/* ---- the signallers' lock: __g1_orig_size's low 2 bits, 0/1/2 ---- */

static void lock_acquire(pthread_cond_t *c)
{
	unsigned *w = &D(c).__g1_orig_size;
	unsigned s = __atomic_load_n(w, __ATOMIC_RELAXED);
	while ((s & 3) == 0)
		if (__atomic_compare_exchange_n(w, &s, s | 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
	for (;;) {
		while ((s & 3) != 2) {
			if (__atomic_compare_exchange_n(w, &s, (s & ~3u) | 2, true, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				if ((s & 3) == 0)
					return;
				break;
			}
		}
		__weft_pfutex_wait(w, (s & ~3u) | 2, CLOCK_REALTIME, NULL, false);
		s = __atomic_load_n(w, __ATOMIC_RELAXED);
	}
}

static void lock_release(pthread_cond_t *c)
{
	if ((__atomic_fetch_and(&D(c).__g1_orig_size, ~3u, __ATOMIC_RELEASE) & 3) == 2)
		__weft_pfutex_wake(&D(c).__g1_orig_size, 1);
}

static inline unsigned get_orig_size(pthread_cond_t *c)
{
	return __atomic_load_n(&D(c).__g1_orig_size, __ATOMIC_RELAXED) >> 2;
}

static void set_orig_size(pthread_cond_t *c, unsigned size)
{
	unsigned *w = &D(c).__g1_orig_size;
	unsigned s = (__atomic_load_n(w, __ATOMIC_RELAXED) & 3) | (size << 2);
	if ((__atomic_exchange_n(w, s, __ATOMIC_RELAXED) & 3) != (s & 3))
		__atomic_store_n(w, (size << 2) | 2, __ATOMIC_RELAXED);
}

/* ---- the group switch ---- */

/* Close G1, wait for its futex sleepers to leave, make G2 the new G1.
 * False iff G2 was empty (nothing switched) or the new G1 is empty. */
static bool quiesce_and_switch_g1(pthread_cond_t *c, uint64_t wseq, unsigned *g1index)
{
	unsigned g1 = *g1index;
	unsigned old_orig_size = get_orig_size(c);
	uint64_t old_g1_start = load_g1_start(c) >> 1;
	if (((unsigned)(wseq - old_g1_start - old_orig_size) + D(c).__g_size[g1 ^ 1]) == 0)
		return false;
	__atomic_fetch_or(&D(c).__g_signals[g1], 1, __ATOMIC_RELAXED);
	unsigned r = __atomic_fetch_or(&D(c).__g_refs[g1], 0, __ATOMIC_RELEASE);
	while ((r >> 1) > 0) {
		r = __atomic_fetch_or(&D(c).__g_refs[g1], 1, __ATOMIC_RELAXED) | 1;
		if ((r >> 1) > 0)
			__weft_pfutex_wait(&D(c).__g_refs[g1], r, CLOCK_REALTIME, NULL, false);
		r = __atomic_load_n(&D(c).__g_refs[g1], __ATOMIC_RELAXED);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	__atomic_fetch_add(&D(c).__g1_start.__value64,
			   (uint64_t)((old_orig_size << 1) + (g1 == 1 ? 1 : -1)), __ATOMIC_RELAXED);
	__atomic_store_n(&D(c).__g_signals[g1], 0, __ATOMIC_RELEASE);
	wseq = __atomic_fetch_xor(&D(c).__wseq.__value64, 1, __ATOMIC_RELEASE) >> 1;
	g1 ^= 1;
	*g1index ^= 1;
	unsigned orig_size = (unsigned)(wseq - (old_g1_start + old_orig_size));
	set_orig_size(c, orig_size);
	D(c).__g_size[g1] += orig_size;
	return D(c).__g_size[g1] != 0;
}

/* ---- signal and broadcast ---- */

/* Nobody waits (no reference in __wrefs): false, nothing to do.  Else
 * take the signallers' lock. */
static bool lock_if_waiters(pthread_cond_t *c)
{
	__weft_self_ensure();
	if (__atomic_load_n(&D(c).__wrefs, __ATOMIC_RELAXED) >> 3 == 0)
		return false;
	lock_acquire(c);
	return true;
}

int __weft_pcond_signal(pthread_cond_t *c)
{
	if (!lock_if_waiters(c))
		return 0;
	uint64_t wseq = load_wseq(c);
	unsigned g1 = (wseq & 1) ^ 1;
	wseq >>= 1;
	bool wake = false;
	if (D(c).__g_size[g1] != 0 || quiesce_and_switch_g1(c, wseq, &g1)) {
		__atomic_fetch_add(&D(c).__g_signals[g1], 2, __ATOMIC_RELAXED);
		D(c).__g_size[g1]--;
		wake = true;
	}
	lock_release(c);
	if (wake)
		__weft_pfutex_wake(&D(c).__g_signals[g1], 1);
	return 0;
}

int __weft_pcond_broadcast(pthread_cond_t *c)
{
	if (!lock_if_waiters(c))
		return 0;
	uint64_t wseq = load_wseq(c);
	unsigned g2 = wseq & 1;
	unsigned g1 = g2 ^ 1;
	wseq >>= 1;
	bool wake = false;
	if (D(c).__g_size[g1] != 0) {
		__atomic_fetch_add(&D(c).__g_signals[g1], D(c).__g_size[g1] << 1, __ATOMIC_RELAXED);
		D(c).__g_size[g1] = 0;
		__weft_pfutex_wake(&D(c).__g_signals[g1], INT_MAX);
	}
	if (quiesce_and_switch_g1(c, wseq, &g1)) {
		__atomic_fetch_add(&D(c).__g_signals[g1], D(c).__g_size[g1] << 1, __ATOMIC_RELAXED);
		D(c).__g_size[g1] = 0;
		wake = true;
	}
	lock_release(c);
	if (wake)
		__weft_pfutex_wake(&D(c).__g_signals[g1], INT_MAX);
	return 0;
}

/* ---- waiting ---- */

static void confirm_wakeup(pthread_cond_t *c)
{
	if ((__atomic_fetch_add(&D(c).__wrefs, -8, __ATOMIC_RELEASE) >> 2) == 3)
		__weft_pfutex_wake(&D(c).__wrefs, INT_MAX);
}

static void dec_grefs(pthread_cond_t *c, unsigned g)
{
	if (__atomic_fetch_add(&D(c).__g_refs[g], -2, __ATOMIC_RELEASE) == 3) {
		__atomic_fetch_and(&D(c).__g_refs[g], ~1u, __ATOMIC_RELAXED);
		__weft_pfutex_wake(&D(c).__g_refs[g], INT_MAX);
	}
}

/* Stop waiting (timeout, cancellation, a failed release) having been
 * registered at position seq in group g; a signal we may have consumed
 * is sent on. */
static void cancel_waiting(pthread_cond_t *c, uint64_t seq, unsigned g)
{
	bool consumed = false;
	lock_acquire(c);
	uint64_t g1_start = load_g1_start(c) >> 1;
	if (g1_start > seq) {
		consumed = true;                 /* our group is closed */
	} else if (g1_start + get_orig_size(c) <= seq) {
		/* in G2: shrink it, or on overflow wake everyone */
		if (D(c).__g_size[g] + MAX_GROUP_SIZE > 0) {
			D(c).__g_size[g]--;
		} else {
			lock_release(c);
			__weft_pcond_broadcast(c);
			return;
		}
	} else if (D(c).__g_size[g] == 0) {
		consumed = true;                 /* G1 holds a signal only we can take */
	} else {
		D(c).__g_size[g]--;
	}
	lock_release(c);
	if (consumed)
		__weft_pcond_signal(c);
}

int __weft_pcond_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
		      const struct timespec *abs)
{
	struct ut *self = __weft_self_ensure();
	if (pmutex_is(m) ? !__weft_pmutex_owned(m, self) : wmutex_of(m)->owner != self)
		return EPERM;
	__weft_testcancel();                      /* the mutex is still held */
	uint64_t wseq = __atomic_fetch_add(&D(c).__wseq.__value64, 2, __ATOMIC_ACQUIRE);
	unsigned g = wseq & 1;
	uint64_t seq = wseq >> 1;
	__atomic_fetch_add(&D(c).__wrefs, 8, __ATOMIC_RELAXED);
	uint32_t depth;
	int err = __weft_cond_mutex_release(m, &depth);
	if (err) {
		cancel_waiting(c, seq, g);
		confirm_wakeup(c);
		return err;
	}
	int result = 0;
	unsigned signals = __atomic_load_n(&D(c).__g_signals[g], __ATOMIC_ACQUIRE);
	do {
		for (;;) {
			if (signals & 1)
				goto done;               /* our group is closed */
			if (signals != 0)
				break;                   /* a signal to take */
			__atomic_fetch_add(&D(c).__g_refs[g], 2, __ATOMIC_ACQUIRE);
			if ((__atomic_load_n(&D(c).__g_signals[g], __ATOMIC_ACQUIRE) & 1) ||
			    seq < (load_g1_start(c) >> 1)) {
				dec_grefs(c, g);
				goto done;
			}
			err = __weft_pfutex_wait(&D(c).__g_signals[g], 0, clk, abs, true);
			dec_grefs(c, g);
			if (err == ECANCELED) {
				/* glibc's __condvar_cleanup_waiting, then act */
				cancel_waiting(c, seq, g);
				__weft_pfutex_wake(&D(c).__g_signals[g], 1);
				confirm_wakeup(c);
				__weft_cond_mutex_relock(m, depth);
				__weft_hooks.cancel_act();
			}
			if (err == ETIMEDOUT || err == EINVAL) {
				cancel_waiting(c, seq, g);
				result = err;
				goto done;
			}
			signals = __atomic_load_n(&D(c).__g_signals[g], __ATOMIC_ACQUIRE);
		}
	} while (!__atomic_compare_exchange_n(&D(c).__g_signals[g], &signals, signals - 2, true,
					      __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
	/* We may have taken a signal from a newer group that shares our slot:
	 * if our group is closed and G1 has our slot, put one back. */
	uint64_t g1_start = load_g1_start(c);
	if (seq < (g1_start >> 1) && ((g1_start & 1) ^ 1) == g) {
		unsigned s = __atomic_load_n(&D(c).__g_signals[g], __ATOMIC_RELAXED);
		while (load_g1_start(c) == g1_start) {
			if ((s & 1) || __atomic_compare_exchange_n(&D(c).__g_signals[g], &s, s + 2, true,
								   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				__weft_pfutex_wake(&D(c).__g_signals[g], 1);
				break;
			}
		}
	}
done:
	confirm_wakeup(c);
	err = __weft_cond_mutex_relock(m, depth);
	return err ? err : result;
}

/* ---- init and destroy ---- */

int __weft_pcond_init(pthread_cond_t *c, bool pshared, clockid_t clk)
{
	memset(c, 0, sizeof *c);
	unsigned w = (pshared ? GC_SHARED : 0) | (clk == CLOCK_MONOTONIC ? GC_MONOTONIC : 0);
	__atomic_store_n(&D(c).__wrefs, w, __ATOMIC_RELAXED);
	return 0;
}

int __weft_pcond_destroy(pthread_cond_t *c)
{
	__weft_self_ensure();
	/* wait until every woken waiter has confirmed its wake-up */
	unsigned wrefs = __atomic_fetch_or(&D(c).__wrefs, 4, __ATOMIC_ACQUIRE);
	while (wrefs >> 3 != 0) {
		__weft_pfutex_wait(&D(c).__wrefs, wrefs, CLOCK_REALTIME, NULL, false);
		wrefs = __atomic_load_n(&D(c).__wrefs, __ATOMIC_ACQUIRE);
	}
	return 0;
}
