/*
 * lifecycle.c — a UT's life: spawn, first run, exit, reap.
 *
 * Owns: making a UT (slot, stack, first frame, ready queue), the path of
 * an exiting UT (upper layers' exit work through hooks.ut_exiting, waking
 * its joiner, switching away for good), the hand-off of its stack to the
 * next UT to run (a UT cannot unmap the stack it stands on: sched.c's
 * switched_in releases vp->exiting), and freeing a slot (reap).
 *
 * Invariants: proc.live counts UTs from spawn to exit, main included; the
 * process exits with status 0 when it reaches 0, as with NPTL.  A UT's slot
 * is freed exactly once: by reap after its join, at detach of a ZOMBIE, or
 * at the stack hand-off of a detached UT.  No system call and no allocation
 * in the steady state: the slot comes from the table's free list and the
 * stack from the pool; the timer heap is grown here, at creation, so that
 * parking with a deadline never needs memory.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <stdlib.h>
#include <string.h>

static void ut_main(void *p) __attribute__((noreturn));
static void ut_main(void *p)
{
	struct ut *t = p;
	__weft_ut_first_run(t);
	__weft_ut_exit(t->start(t->arg));
}

void __weft_ut_first_run(struct ut *t)
{
	(void)t;
	__weft_switched_in(__weft_vp());
	/* deferred work reaches a new UT before its start routine, as it
	 * would reach a returning Weft call */
	__weft_epilogue(EXIT_OTHER);
}

static int take_stack(struct ut *t, const struct ut_spawn *how)
{
	if (how->stackaddr) {
		t->stack.lo = how->stackaddr;
		t->stack.hi = (char *)how->stackaddr + how->stacksize;
		t->stack.kind = STACK_USER;
		t->stack.guard = 0;
		return 0;
	}
	return __weft_stack_get(&t->stack, how->stacksize, how->guardsize);
}

int __weft_ut_spawn(const struct ut_spawn *how, struct ut **out)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	if (__weft_timer_reserve(__weft_proc.live + 1) != 0)
		return EAGAIN;
	struct ut *t = __weft_ut_alloc();
	if (!t)
		return EAGAIN;
	/* Out of memory for a stack: UTs that have exited but not yet been
	 * switched away from, or ready ones about to exit, give stacks back
	 * once they run, so let them run and try once more (as the kernel
	 * reaps exited threads in the background for NPTL). */
	int e = take_stack(t, how);
	if (e == EAGAIN && vp->nready) {
		__weft_yield();
		e = take_stack(t, how);
	}
	if (e) {
		__weft_ut_free(t);
		return e;
	}
	t->start = how->start;
	t->arg = how->arg;
	t->id = __weft_proc.next_id++;
	t->detached = how->detached;
	t->explicit_sched = how->explicit_sched;
	t->policy = (uint8_t)how->policy;
	t->prio = t->base_prio = (uint8_t)how->prio;
	memcpy(t->name, self->name, sizeof t->name);  /* as clone() copies comm */
	t->sp = __weft_arch_frame(t->stack.hi, ut_main, t);
	*out = t;
	__weft_proc.live++;
	vp->stat.created++;
	if (unlikely(vp->sched_debug || __weft_proc.trace))
		__weft_debug_created(self, t);
	__weft_ready(t);
	if (t->prio > self->prio)
		__weft_preempt_check();
	return 0;
}

void __weft_ut_exit(void *retval)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	__weft_hooks.ut_exiting(self);
	self->retval = retval;
	__weft_wake_all_nopreempt(&self->joinq, 0);
	vp->stat.exited++;
	if (--__weft_proc.live == 0)
		exit(0);
	WEFT_STATE(self, UT_EXITING);
	vp->exiting = self;
	__weft_schedule();
	__weft_die("thread %llu ran after it exited", (unsigned long long)self->id);
}

void __weft_ut_reap(struct ut *t)
{
	__weft_hooks.ut_reaped(t);
	__weft_ut_free(t);
}
