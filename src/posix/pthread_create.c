/*
 * pthread_create.c — making a UT: slot, stack, first frame, ready queue.
 *
 * No system call and no allocation in the steady state: the slot comes from
 * the table's free list and the stack from the pool.  A new UT that outranks
 * its creator runs at once (the creator heads its priority's queue);
 * otherwise it waits at the tail of its level and the creator goes on.
 */
#include "attr.h"
#include "../arch/arch.h"

#include <string.h>
#include <sys/single_threaded.h>

extern uint64_t __weft_next_id HIDDEN;

static void ut_main(void *p) __attribute__((noreturn));
static void ut_main(void *p)
{
	struct ut *t = p;
	__weft_switched_in();
	__weft_exit_current(t->start(t->arg));
}

/* 0, EINVAL (a size that overflows, a supplied stack below address 0) or
 * EAGAIN (no memory for it). */
static int take_stack(struct ut *t, const struct weft_attr *a)
{
	if (a->stacktop) {
		if ((uintptr_t)a->stacktop < a->stacksize)
			return EINVAL;
		t->stack.hi = a->stacktop;
		t->stack.lo = (char *)a->stacktop - a->stacksize;
		t->stack.kind = STACK_USER;
		t->stack.guard = 0;
		return 0;
	}
	return __weft_stack_get(&t->stack, a->stacksize, a->guardsize);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
			  void *(*start)(void *), void *arg)
{
	__weft_ensure();
	if (!th || !start)
		return EINVAL;
	const struct weft_attr *a = attr ? attr_cof(attr) : __weft_default_attr();
	if (a->magic != ATTR_MAGIC)
		return EINVAL;
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	int policy = self->policy, prio = self->base_prio;
	if (a->inherit == PTHREAD_EXPLICIT_SCHED) {
		policy = a->policy;
		prio = a->prio;
		if (!__weft_prio_valid(policy, prio))
			return EINVAL;
	}
	if (__weft_timer_reserve(vp->live + 1) != 0)
		return EAGAIN;
	struct ut *t = __weft_ut_alloc();
	if (!t)
		return EAGAIN;
	/* Out of memory for a stack: UTs that have exited but not yet been
	 * switched away from, or ready ones about to exit, give stacks back
	 * once they run, so let them run and try once more (as the kernel
	 * reaps exited threads in the background for NPTL). */
	int e = take_stack(t, a);
	if (e == EAGAIN && vp->nready) {
		__weft_yield();
		e = take_stack(t, a);
	}
	if (e) {
		__weft_ut_free(t);
		return e;
	}
	t->start = start;
	t->arg = arg;
	t->id = __weft_next_id++;
	t->detached = a->detach == PTHREAD_CREATE_DETACHED;
	t->explicit_sched = a->inherit == PTHREAD_EXPLICIT_SCHED;
	t->policy = (uint8_t)policy;
	t->prio = t->base_prio = (uint8_t)prio;
	memcpy(t->name, self->name, sizeof t->name);  /* as clone() copies comm */
	t->sp = __weft_arch_frame(t->stack.hi, ut_main, t);
	*th = __weft_handle(t);
	vp->live++;
	vp->stat.created++;
	if (unlikely(vp->sched_debug || vp->trace))
		__weft_debug_created(self, t);
	/* glibc's own pthread_create tells libc and libstdc++ that the process
	 * is threaded; libstdc++ takes shortcuts (stop_token, shared_ptr) while
	 * __libc_single_threaded is 1, which are wrong once a second UT exists. */
	if (unlikely(__libc_single_threaded))
		__libc_single_threaded = 0;
	__weft_ready(t);
	if (t->prio > self->prio)
		__weft_preempt_check();
	__weft_exit_point(EXIT_OTHER);
	return 0;
}
