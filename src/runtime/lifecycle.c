/*
 * lifecycle.c — a UT's life: spawn, first run, exit, reap.
 *
 * Owns: making a UT (slot, stack, first frame, ready queue), the path of
 * an exiting UT (upper layers' exit work through hooks.ut_exiting, waking
 * its joiner, switching away for good), the hand-off of its stack to the
 * next UT to run (a UT cannot unmap the stack it stands on: sched.c's
 * switched_in releases vp->exiting), and freeing a slot (reap).  A new UT
 * starts in sched.c's __weft_ut_main, the other half of the first switch.
 *
 * Invariants: proc.live counts UTs from spawn to exit, main included; the
 * process exits with status 0 when it reaches 0, as with NPTL.  A UT's slot
 * is freed exactly once: by reap after its join, at detach of a ZOMBIE, or
 * at the stack hand-off of a detached UT.  No system call and no allocation
 * in the steady state: the slot comes from the table's free list and the
 * stack from the pool; the timer heap is grown here, at creation, so that
 * parking with a deadline never needs memory.
 */
#include "lifecycle.h"

#include <stdlib.h>
#include <string.h>

int __weft_ut_spawn(const struct ut_spawn *how, struct ut **out)
{
	return __weft_ut_spawn_inline(how, out);
}

void __weft_ut_exit(void *retval)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	/* glibc's order: C++ thread_local destructors, then keys' destructors
	 * (in the hook), then the thread's TLS state is let go */
	if (self->tp)                         /* a thread pointer of its own */
		__weft_tls_exit_dtors(self);
	__weft_hooks.ut_exiting(self);
	if (self->tls)                        /* TLS of its own (tls.c) */
		__weft_tls_detach(self);
	__weft_sig_gone(self);
	/* M:N: a destructor that parked (a contended mutex in free()) may
	 * have resumed self on another VP; the stack hand-off below is the
	 * VP's it leaves now (an exiting pointer left on the VP it ran on
	 * before was overwritten by that VP's next exit: a UT for ever
	 * EXITING, its joiner parked for good) */
	vp = __weft_vp();
	self->retval = retval;
	WEFT_HB_RELEASE(self);                /* its life happens before its join */
	struct ut *joiner = self->joinq.head;
	__weft_wake_all_nopreempt(&self->joinq, 0);
	vp->stat.exited++;
	if (--__weft_proc.live == 0)
		exit(0);
	WEFT_STATE(self, UT_EXITING);
	vp->exiting = self;
	/* the joiner goes on first where POSIX leaves the order free (the
	 * fork-join hand-off, sched.c) */
	if (joiner)
		__weft_hand_to(vp, joiner);
	__weft_schedule();
	__weft_die("thread %llu ran after it exited", (unsigned long long)self->id);
}

void __weft_ut_reap(struct ut *t)
{
	__weft_hooks.ut_reaped(t);
	__weft_ut_free(t);
}
