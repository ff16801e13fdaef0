/*
 * lifecycle.h — making a UT, inline for pthread_create.
 *
 * The runtime owns how a UT is made (lifecycle.c says why it is made this
 * way); this header holds that code so that the one hot caller,
 * pthread_create, gets it without a call and without building the request
 * in memory.  Everyone else calls __weft_ut_spawn.
 */
#ifndef WEFT_LIFECYCLE_H
#define WEFT_LIFECYCLE_H

#include "rt.h"
#include "../arch/arch.h"

#include <string.h>

static inline int __weft_take_stack(struct ut *t, const struct ut_spawn *how, struct vp *vp)
{
	/* a copy-stack UT shares its VP's run stack (copystack.c); a stack
	 * of the program's own cannot be one (pthread_create refuses it) */
	if (unlikely(how->stack_mode == CS_MODE_COPY))
		return __weft_cs_spawn(t, vp, how->stacksize, how->guardsize);
	if (how->stackaddr) {
		t->stack.lo = how->stackaddr;
		t->stack.hi = (char *)how->stackaddr + how->stacksize;
		t->stack.kind = STACK_USER;
		t->stack.guard = 0;
		if (unlikely(__weft_arch_valgrind))
			__weft_stack_vg_register(&t->stack);
		return 0;
	}
	return __weft_stack_get(&t->stack, how->stacksize, how->guardsize);
}

static inline __attribute__((always_inline)) int __weft_ut_spawn_inline(const struct ut_spawn *how,
								      struct ut **out)
{
	/* M:N: the other VPs start with the second UT (mn.c) */
	if (unlikely(__weft_mn) && !__weft_proc.mn.started)
		__weft_mn_start();
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
	int e = __weft_take_stack(t, how, vp);
	if (e == EAGAIN && __weft_rq.nready) {
		__weft_yield();
		vp = __weft_vp();
		e = __weft_take_stack(t, how, vp);
	}
	if (e) {
		__weft_ut_free(t);
		return e;
	}
	t->start = how->start;
	t->arg = how->arg;
	t->id = __weft_proc.next_id++;
	t->detached = how->detached;
	t->fresh = 1;
	t->explicit_sched = how->explicit_sched;
	t->policy = (uint8_t)how->policy;
	t->prio = t->base_prio = (uint8_t)how->prio;
	memcpy(t->name, self->name, sizeof t->name);  /* as clone() copies comm */
	__weft_sig_born(t, self, how->sigmask);
	char *top = t->stack.hi;
	if (unlikely(__weft_is_copy(t))) {
		/* its first frame is in its save area already; its thread
		 * block, if UTs have their own, cannot be on a shared stack */
		if (unlikely(vp->tp_on) && (e = __weft_tls_attach_apart(t)) != 0) {
			__weft_cs_release(t);
			__weft_ut_free(t);
			return e;
		}
	} else {
		if (unlikely(vp->tp_on)) {
			e = __weft_tls_attach(t, &top);
			if (e) {
				__weft_stack_put(&t->stack);
				__weft_ut_free(t);
				return e;
			}
		}
		t->sp = __weft_arch_frame(top, __weft_ut_main, t);
	}
	*out = t;
	__weft_proc.live++;
	vp->stat.created++;
	/* a second UT: blocking in unwrapped calls can now stop someone.
	 * live is written before settled is read: a retiring monitor's
	 * membarrier is the fence between them (monitor.c, "retirement"), the
	 * compiler's barrier is here */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(!__atomic_load_n(&__weft_monitor_settled, __ATOMIC_RELAXED)))
		__weft_monitor_start(false);
	if (unlikely(vp->sched_debug || __weft_proc.trace))
		__weft_debug_created(self, t);
#if WEFT_TSAN
	__weft_tsan_created(t);           /* the creator's past happens before t */
#endif
	__weft_ready(t);
	if (t->prio > self->prio)
		__weft_preempt_check();
	return 0;
}

#endif
