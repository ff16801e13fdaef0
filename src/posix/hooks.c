/*
 * hooks.c — the runtime's hook table: the only way the runtime calls up
 * into the sync and posix layers (rt.h, struct weft_hooks).
 *
 * Owns: __weft_hooks.  Each entry names the upper-layer work the runtime
 * must let happen at one point of a UT's life; rt.h says when each runs.
 */
#include "posix.h"

/* A UT's own exit work, in glibc's order: no cancellation from here on,
 * pthread_once controls it was running reset (their frames are gone),
 * thread-specific destructors, then robust mutexes it still holds marked
 * for their next owner. */
static void ut_exiting(struct ut *self)
{
	/* no request, no asynchronous arming, no glibc cancellation armed
	 * for it: only the mark that it is exiting (cancel.c's whole work
	 * then; most exits) */
	if (likely(!(self->cancel & (CANCEL_PENDING | CANCEL_ARMED)) && __weft_vp()->libc_armed != self))
		self->cancel |= CANCEL_EXITING;
	else
		__weft_cancel_exiting(self);
	if (self->once_frames)
		__weft_once_abandon(self);
	/* the calls only for a UT with keys' values or mutexes to mark */
	if (self->tsd)
		__weft_tsd_run_destructors(self);
	if (__weft_robust_may_hold(self))
		__weft_robust_owner_died(self);
}

static void ut_reaped(struct ut *t)
{
	if (t->tsd)
		__weft_tsd_release(t);
}

/* t is about to run under another VP's identity (M:N): the glibc locks
 * it holds follow it. */
static void ut_rehomed(struct ut *t, void *old_self, void *new_self, pid_t old_tid, pid_t new_tid)
{
	if (t->files_held)
		__weft_stdio_rehomed(t, old_self, new_self);
	if (t->in_loader)
		__weft_loader_rehomed(old_tid, new_tid);
}

const struct weft_hooks __weft_hooks = {
	.ut_exiting = ut_exiting,
	.ut_reaped = ut_reaped,
	.cancel_act = __weft_cancel_act,
	.cancel_async_point = __weft_cancel_async_point,
	.wait_holder = __weft_wait_holder,
	.wait_interrupted = __weft_wait_interrupted,
	.wait_poll = __weft_futex_poll,
	.ut_rehomed = ut_rehomed,
};
