/*
 * once.c — pthread_once.
 *
 * The control word (glibc's int, PTHREAD_ONCE_INIT == 0) moves
 * 0 -> RUNNING -> DONE.  A UT that finds RUNNING parks on one process-wide
 * queue (the word has no room for a queue, and waiting here is rare) and
 * rechecks when the runner finishes.  The runner keeps a frame on its own
 * stack, linked from its UT, so that if the routine ends the thread instead
 * of returning, exit puts the word back to 0 and a later caller runs it
 * (POSIX's rule for a cancelled init routine).
 */
#include "sync.h"

enum { ONCE_INIT = 0, ONCE_RUNNING = 1, ONCE_DONE = 2 };

struct once_frame {
	pthread_once_t *once;
	struct once_frame *prev;
};

static struct waitq once_waiters;

WEFT_SLOW_PART int once_slow(pthread_once_t *once, void (*init)(void))
{
	if (!once || !init)
		return EINVAL;
	WEFT_CALL();
	__weft_ensure();
	while (*once == ONCE_RUNNING)
		__weft_park(&once_waiters, -1, WAIT_ONCE, once);
	if (*once == ONCE_DONE) {
		WEFT_HB_ACQUIRE(once);
		return 0;
	}
	struct ut *self = __weft_self();
	struct once_frame f = { once, self->once_frames };
	self->once_frames = &f;
	*once = ONCE_RUNNING;
	__weft_outcall_begin(__weft_vp());
	init();
	__weft_outcall_end();
	WEFT_HB_RELEASE(once);
	*once = ONCE_DONE;
	self->once_frames = f.prev;
	__weft_wake_all(&once_waiters, 0);
	return 0;
}

/* The done check saves no register and makes no frame: the rest is
 * once_slow's (1.61 -> 1.48 ns on an EPYC guest when four registers' saves
 * were here), called so that a UT parked in it shows pthread_once in a
 * thread dump (WEFT_SLOW_CALL). */
EXPORT WEFT_HOT_ENTRY int pthread_once(pthread_once_t *once, void (*init)(void))
{
	if (likely(once && init && *once == ONCE_DONE)) {
		WEFT_HB_ACQUIRE(once);
		return 0;
	}
	return WEFT_SLOW_CALL(once_slow(once, init));
}

void __weft_once_abandon(struct ut *t)
{
	for (struct once_frame *f = t->once_frames; f; f = f->prev)
		*f->once = ONCE_INIT;
	t->once_frames = NULL;
	__weft_wake_all_nopreempt(&once_waiters, 0);
}
