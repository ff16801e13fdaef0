/*
 * pbarrier.c — process-shared barriers: glibc 2.36's layout (struct
 * pthread_barrier: in, current_round, count, shared, out) and algorithm
 * (nptl/pthread_barrier_{wait,destroy}.c), so that UTs of this process and
 * threads of an NPTL process make up one round together.
 *
 * Each arrival takes a position with a fetch-add on `in`; the arrival that
 * completes a round advances current_round and wakes the round; the others
 * sleep on current_round; everyone confirms leaving on `out`, and the last
 * to leave before `in` reaches its threshold resets the barrier (post-reset
 * arrivals sleep on `in`).  Weft differs only in how it sleeps: a shared
 * futex wait inside the blocking bracket (pfutex.c), so a UT of this
 * process waiting for the round leaves the VP to the UTs that will
 * complete it.  A barrier wait is not a cancellation point.
 */
#include "pshared.h"

#include <limits.h>
#include <string.h>

#define IN_THRESHOLD (UINT_MAX / 2)     /* BARRIER_IN_THRESHOLD */

static inline void sleep_on(unsigned *w, unsigned val)
{
	__weft_pfutex_wait(w, val, CLOCK_REALTIME, NULL, false);
}

int __weft_pbarrier_init(pthread_barrier_t *b, unsigned count)
{
	if (count == 0 || count >= IN_THRESHOLD)
		return EINVAL;
	memset(b, 0, sizeof *b);
	struct gbarrier *g = gbar_of(b);
	g->count = count;
	g->shared = GFUTEX_SHARED;
	return 0;
}

int __weft_pbarrier_wait(pthread_barrier_t *b)
{
	__weft_self_ensure();
	struct gbarrier *bar = gbar_of(b);
	unsigned i;
reset_restart:
	i = __atomic_add_fetch(&bar->in, 1, __ATOMIC_ACQ_REL);
	unsigned count = bar->count;
	if (count == 0)
		return EINVAL;          /* never initialised (glibc would divide by 0) */
	unsigned max_in_before_reset = IN_THRESHOLD - IN_THRESHOLD % count;
	if (i > max_in_before_reset) {
		while (i > max_in_before_reset) {
			sleep_on(&bar->in, i);
			i = __atomic_load_n(&bar->in, __ATOMIC_RELAXED);
		}
		goto reset_restart;
	}
	unsigned cr = __atomic_load_n(&bar->current_round, __ATOMIC_RELAXED);
	while (cr + count <= i) {
		unsigned newcr = i - i % count;
		if (__atomic_compare_exchange_n(&bar->current_round, &cr, newcr, true, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			cr = newcr;
			__weft_pfutex_wake(&bar->current_round, INT_MAX);
			if (i <= cr)
				goto ready_to_leave;
			break;
		}
	}
	while (i > cr) {
		sleep_on(&bar->current_round, cr);
		cr = __atomic_load_n(&bar->current_round, __ATOMIC_RELAXED);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
ready_to_leave:;
	unsigned o = __atomic_add_fetch(&bar->out, 1, __ATOMIC_RELEASE);
	if (o == max_in_before_reset) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		__atomic_store_n(&bar->current_round, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&bar->out, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&bar->in, 0, __ATOMIC_RELEASE);
		__weft_pfutex_wake(&bar->in, INT_MAX);
	}
	return i % count == 0 ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
}

int __weft_pbarrier_destroy(pthread_barrier_t *b)
{
	__weft_self_ensure();
	struct gbarrier *bar = gbar_of(b);
	unsigned count = bar->count;
	if (count == 0)
		return EINVAL;
	unsigned max_in_before_reset = IN_THRESHOLD - IN_THRESHOLD % count;
	unsigned in = __atomic_load_n(&bar->in, __ATOMIC_RELAXED);
	/* Someone waits for a round that is not complete: glibc would wait
	 * for it for ever (undefined in POSIX); say EBUSY, as POSIX allows. */
	if (in > __atomic_load_n(&bar->current_round, __ATOMIC_RELAXED))
		return EBUSY;
	/* pretend the threshold is reached and wait for the reset */
	if (__atomic_fetch_add(&bar->out, max_in_before_reset - in, __ATOMIC_RELAXED) < in) {
		while (in != 0) {
			sleep_on(&bar->in, in);
			in = __atomic_load_n(&bar->in, __ATOMIC_RELAXED);
		}
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/* A later wait is EINVAL here, not a division by zero (glibc keeps
	 * the count; using a destroyed barrier is undefined). */
	bar->count = 0;
	return 0;
}
