/*
 * pthread_exit.c — ending a UT.
 *
 * An exiting UT runs its key destructors, marks the robust mutexes it still
 * holds, wakes its joiner, and switches away for good; the next UT to run
 * releases its stack (a UT cannot unmap the stack it stands on).  When the
 * last UT ends, the process exits with status 0, as with NPTL.
 */
#include "../runtime/rt.h"

#include <stdlib.h>

void __weft_exit_current(void *retval)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	__weft_cancel_exiting(self);      /* destructors are no cancellation points */
	if (self->once_frames)
		__weft_once_abandon(self);
	__weft_tsd_run_destructors(self);
	__weft_robust_owner_died(self);
	self->retval = retval;
	__weft_wake_all_nopreempt(&self->joinq, 0);
	vp->stat.exited++;
	if (--vp->live == 0)
		exit(0);
	self->state = UT_EXITING;
	vp->exiting = self;
	__weft_schedule();
	__weft_die("thread %llu ran after it exited", (unsigned long long)self->id);
}

/* Unwinds the caller's stack first, so cleanup handlers and C++
 * destructors run (posix/cleanup.c), as with NPTL. */
EXPORT void pthread_exit(void *retval)
{
	__weft_ensure();
	__weft_unwind_exit(retval);
}
