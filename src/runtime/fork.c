/*
 * fork.c — the child of fork holds only the UT that called it.
 *
 * Owns: the child's side of fork for the UTs (vp.c's atfork child handler
 * calls __weft_fork_child after the kernel-thread, monitor and tick state
 * are reset).  POSIX: the child is a copy of the process with one thread,
 * the caller.  Every other UT of the parent is gone from the child: taken
 * off the ready queues, the timer heap and whatever wait queue it was on
 * (a mutex's, a condition's, sigwait's), its stack and thread-local
 * storage given back, its slot freed, so that nothing in the child can
 * ever run it, wake it or join it.  What those UTs held stays as it was
 * (a mutex one of them owned stays locked), as under NPTL.
 *
 * Invariant after it: proc.live is 1, the ready queues and the timer heap
 * are empty, every slot but the caller's is free, and the caller's signal
 * state is that of a new process's only thread (its mask kept, nothing
 * pending: POSIX clears the child's pending set).
 *
 * Runs on the child's mainline, before any other code of the child: no
 * other kernel thread exists, so nothing here races.
 */
#include "rt.h"

#include <string.h>

struct reap_ctx {
	struct ut *self;
	uint32_t n;
};

static void gone(struct ut *t, void *p)
{
	struct reap_ctx *c = p;
	if (t == c->self)
		return;
	struct vp *vp = __weft_vp();
	if ((t->state == UT_BLOCKED || t->state == UT_DEFERRED) && t->wq)
		__weft_waitq_remove(t->wq, t);
	t->tindex = 0;
	t->q_next = t->q_prev = NULL;
	if (t->state != UT_ZOMBIE && t->state != UT_FREE) {
		if (t->tls)
			__weft_tls_detach(t);
		if (__weft_is_copy(t))
			__weft_cs_release(t);
		else if (t != vp->exiting && t->stack.kind != STACK_PROCESS && t->stack.kind != STACK_NONE)
			__weft_stack_put(&t->stack);
	}
	__weft_sig_forget(t);
	__weft_hooks.ut_reaped(t);
	__weft_ut_free(t);
	c->n++;
}

void __weft_fork_child(struct vp *vp)
{
	struct ut *self = vp->cur;
	/* the exited UT whose stack awaited release: give it back now */
	if (vp->exiting) {
		struct ut *x = vp->exiting;
		if (x != self)
			__weft_stack_put(&x->stack);
	}
	/* nothing is ready or timed but what the caller will make */
	memset(__weft_rq.rq, 0, sizeof __weft_rq.rq);
	memset(__weft_rq.ready_bits, 0, sizeof __weft_rq.ready_bits);
	__weft_rq.nready = 0;
	__weft_local_queues_clear();
	__weft_rq.timers.n = 0;
	self->tindex = 0;
	struct reap_ctx c = { self, 0 };
	__weft_ut_foreach(gone, &c);
	__weft_cs_after_fork(self);
	vp->exiting = NULL;
	__weft_vps[0].cancel_armed = (self->cancel & CANCEL_ARMED) ? 1 : 0;
	vp->async_cancel = __weft_vps[0].cancel_armed != 0;
	vp->dispatch_pending = 0;
	vp->rejoined_first = 0;
	__weft_proc.live = 1;
	__weft_sig_fork_child(self);
	__weft_cpu_carry(vp);                     /* the child's own CPU clock starts at 0 */
}
