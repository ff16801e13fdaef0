/*
 * epilogue.c — what every Weft call does as it returns to its caller.
 *
 * Owns: __weft_epilogue_slow, the one place where work deferred into a Weft
 * call is done before control goes back to the program: a tick that found
 * Weft's or libc's code running (dispatch_pending), program signals that
 * arrived while Weft's text ran, the debug schedulers' switch points, and an
 * asynchronous cancel armed while the UT was switched out.  The fast path is
 * rt.h's __weft_epilogue: one load of vp->exit_hook and a branch.  Every
 * exported call that touches runtime state runs it exactly once (WEFT_CALL),
 * and so do the preemption trampoline's return and a new UT's first run.
 *
 * Sanitizer builds: a call the sanitizer's runtime made (its symboliser's
 * I/O while it reports) does nothing of this at its end; it is all left
 * for the program's next call (__weft_epilogue_from, rt.h says why).
 *
 * Order: signals first (a handler runs as if it interrupted the caller just
 * after the call), then nothing more while a handler runs over protected
 * code (noswitch: no switch may happen there), then the deferred tick, the
 * debug scheduler and the cancel, each of which may switch or unwind.
 */
#include "rt.h"

void __weft_epilogue_slow(enum exit_point p)
{
	struct vp *vp = __weft_vp();
	if (vp->signals) {
		__weft_signals_deliver(vp);
		vp = __weft_vp();             /* a handler may switch: M:N, another VP */
	}
	if (__weft_noswitch(vp))
		return;
	if (vp->dispatch_pending) {
		/* counted only when the tick did switch, as the trampoline
		 * counts preemptions: a deferred tick that found nothing to
		 * rotate changed no schedule (debug_sched.c reports these as
		 * "forced by the tick") */
		uint64_t before = vp->stat.switches;
		__weft_preempted();
		if (vp->stat.switches != before)
			vp->stat.dispatches++;
		vp = __weft_vp();             /* M:N: it may go on on another VP */
	}
	if (vp->sched_debug) {
		vp->stat.switch_points++;
		vp->cur->switch_points++;
		__weft_debug_switch_point(vp, p);
		vp = __weft_vp();
	}
	/* Asynchronously cancelled while switched out: act on return. */
	if (vp->async_cancel)
		__weft_hooks.cancel_async_point();
}

#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
/* the sanitizer runtime's range: san_text.c */
void __weft_epilogue_from(enum exit_point p, const void *ra)
{
	if (__weft_called_by_san(ra))
		return;
	__weft_epilogue_slow(p);
}
#endif
