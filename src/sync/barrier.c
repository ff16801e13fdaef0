/*
 * barrier.c — pthread_barrier_*: on glibc's 32-byte layout.
 *
 * A round collects `count` UTs.  The first count-1 park; the last to arrive
 * starts the next round (arrived back to 0), readies every waiter and is
 * the one that gets PTHREAD_BARRIER_SERIAL_THREAD — it is already running,
 * so the round ends with no extra switch.  Invariant: arrived < count, and
 * exactly `arrived` UTs are parked on the queue.  The woken UTs never touch
 * the barrier again, so the serial UT may destroy it at once.
 *
 * A process-shared barrier is glibc's struct pthread_barrier, recognised
 * by its `shared` word (offset 12, never set in Weft's layout) at every
 * call and handed to pbarrier.c.
 */
#include "pshared.h"

#include <limits.h>
#include <string.h>

static inline struct wbarrier *wbar_of(pthread_barrier_t *b) { return (struct wbarrier *)b; }

EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
	if (!b || count == 0 || count > INT_MAX)
		return EINVAL;
	if (a && a->__align == PTHREAD_PROCESS_SHARED)
		return __weft_pbarrier_init(b, count);
	if (a && a->__align != PTHREAD_PROCESS_PRIVATE)
		return EINVAL;
	memset(b, 0, sizeof *b);
	wbar_of(b)->count = count;
	return 0;
}

EXPORT int pthread_barrier_destroy(pthread_barrier_t *b)
{
	WEFT_CALL();
	struct wbarrier *w = wbar_of(b);
	if (!w)
		return EINVAL;
	if (w->shared)
		return __weft_pbarrier_destroy(b);
	if (w->arrived || w->waiters.head)
		return EBUSY;
	w->count = 0;
	return 0;
}

EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	WEFT_CALL();
	struct wbarrier *w = wbar_of(b);
	if (!w)
		return EINVAL;
	if (w->count == 0 && !w->shared)
		return EINVAL;
	/* every arrival of a round happens before every departure */
	WEFT_HB_RELEASE(b);
	if (w->shared) {
		int r = __weft_pbarrier_wait(b);
		WEFT_HB_ACQUIRE(b);
		return r;
	}
	__weft_ensure();
	uint32_t round = w->round;
	if (++w->arrived < w->count) {
		/* A signal for this UT ends the park with EINTR once its
		 * handler has run (park.c): wait on, unless the round ended
		 * while the handler ran (the last to arrive woke only those
		 * still queued). */
		struct ut *self = __weft_self();
		do {
			self->sig_intr = 1;
			int r = __weft_park(&w->waiters, -1, WAIT_BARRIER, w);
			self->sig_intr = 0;
			if (r != EINTR)
				break;
		} while (w->round == round);
		WEFT_HB_ACQUIRE(b);
		return 0;
	}
	w->arrived = 0;
	w->round = round + 1;
	WEFT_HB_ACQUIRE(b);
	__weft_wake_all(&w->waiters, 0);
	return PTHREAD_BARRIER_SERIAL_THREAD;
}
