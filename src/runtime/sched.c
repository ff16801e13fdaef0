/*
 * sched.c — the ready queues and the one place that picks the next UT.
 *
 * One circular list per priority level 0..99 and a 128-bit bitmap of the
 * non-empty levels: the highest ready priority is one count-leading-zeros.
 * Invariants: bit p of ready_bits is set iff rq[p] is non-empty; every UT on
 * rq[p] is READY with prio p; the running UT is on no ready queue.  A UT that
 * is preempted goes to the head of its level, one that yields or is made
 * ready goes to the tail (POSIX SCHED_FIFO rules; RR differs only by time
 * slicing, which arrives with preemption).
 */
#include "rt.h"
#include "../arch/arch.h"

#include <sys/syscall.h>
#include <unistd.h>

struct vp __weft_vp0;

/* AddressSanitizer must be told when the stack changes under it (fibers). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
static inline void san_leave(struct ut *prev, struct ut *next)
{
	__sanitizer_start_switch_fiber(prev->state == UT_EXITING ? NULL : &prev->asan_fake,
				       next->stack.lo, (size_t)(next->stack.hi - next->stack.lo));
}
static inline void san_enter(struct ut *self)
{
	__sanitizer_finish_switch_fiber(self->asan_fake, NULL, NULL);
}
#else
static inline void san_leave(struct ut *prev, struct ut *next) { (void)prev; (void)next; }
static inline void san_enter(struct ut *self) { (void)self; }
#endif


static inline void bit_set(struct vp *vp, unsigned p) { vp->ready_bits[p >> 6] |= 1ull << (p & 63); }
static inline void bit_clear(struct vp *vp, unsigned p) { vp->ready_bits[p >> 6] &= ~(1ull << (p & 63)); }

static inline int highest_ready(const struct vp *vp)
{
	(void)vp;
	return __weft_highest_ready();
}

static inline void rq_link(struct vp *vp, struct ut *t, bool at_head)
{
	struct ut **h = &vp->rq[t->prio];
	struct ut *head = *h;
	if (!head) {
		t->q_next = t->q_prev = t;
		*h = t;
		bit_set(vp, t->prio);
	} else {
		struct ut *tail = head->q_prev;
		t->q_next = head;
		t->q_prev = tail;
		tail->q_next = t;
		head->q_prev = t;
		if (at_head)
			*h = t;
	}
	t->state = UT_READY;
	vp->nready++;
	__weft_preempt_arm();
}

static inline void rq_unlink(struct vp *vp, struct ut *t)
{
	struct ut **h = &vp->rq[t->prio];
	if (t->q_next == t) {
		*h = NULL;
		bit_clear(vp, t->prio);
	} else {
		t->q_prev->q_next = t->q_next;
		t->q_next->q_prev = t->q_prev;
		if (*h == t)
			*h = t->q_next;
	}
	vp->nready--;
}

static inline struct ut *rq_pop(struct vp *vp, int prio)
{
	struct ut *t = vp->rq[prio];
	rq_unlink(vp, t);
	return t;
}

void __weft_ready(struct ut *t) { rq_link(&__weft_vp0, t, false); }

/* Release the stack (and, if detached, the slot) of the UT that switched
 * away for the last time.  Runs on the next UT's stack, before user code. */
static void release_exiting(struct vp *vp)
{
	struct ut *t = vp->exiting;
	vp->exiting = NULL;
	__weft_stack_put(&t->stack);
	if (t->detached) {
		__weft_tsd_release(t);
		__weft_ut_free(t);
	} else {
		t->state = UT_ZOMBIE;
	}
}

static inline void switched_in(struct vp *vp)
{
	san_enter(vp->cur);
	*vp->errnop = vp->cur->saved_errno;
	if (unlikely(vp->exiting != NULL))
		release_exiting(vp);
}

void __weft_switched_in(void) { switched_in(&__weft_vp0); }

static void canary_dead(struct ut *t)
{
	__weft_die("thread %llu (%s) overflowed its unguarded stack [%p, %p)",
		   (unsigned long long)t->id, t->name, (void *)t->stack.lo, (void *)t->stack.hi);
}

static inline void switch_to(struct vp *vp, struct ut *next)
{
	struct ut *prev = vp->cur;
	prev->saved_errno = *vp->errnop;
	if (unlikely(prev->stack.canary) && !__weft_stack_canary_ok(&prev->stack))
		canary_dead(prev);
	next->state = UT_RUNNING;
	vp->cur = next;
	vp->cur_since = vp->ticks;
	vp->stat.switches++;
	if (unlikely(vp->trace != NULL))
		__weft_trace_switch(prev, next);
	san_leave(prev, next);
	__weft_switch(&prev->sp, next->sp);
	switched_in(vp);
}

/* Sleep in the kernel until CLOCK_MONOTONIC reaches `deadline`.  A raw
 * system call: clock_nanosleep and syscall() themselves are Weft's (they
 * park the caller or emulate futexes). */
static void kernel_sleep_until(int64_t deadline)
{
	struct timespec ts = { .tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000 };
	long r = __weft_raw_syscall6(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&ts, 0, 0, 0);
	if (r == -EINTR)
		__weft_signal_caught();
}

/* Nothing is ready: let time pass until a timer makes something ready.
 * This is the only place the process sleeps in the kernel (M:1). */
static int idle(struct vp *vp)
{
	for (;;) {
		int p = highest_ready(vp);
		if (p >= 0)
			return p;
		if (!__weft_timers_pending()) {
			__weft_preempt_idle();
			/* Every UT is blocked and nothing can wake any: a deadlock,
			 * as it would be under kernel threads.  Report it if asked
			 * (WEFT_DEADLOCK=report, debug schedulers) unless some UT
			 * is in pause(), waiting for a signal; otherwise sleep, as
			 * NPTL would, until a signal handler changes something. */
			if (!__weft_pausers())
				__weft_deadlock();
			__weft_raw_syscall6(SYS_pause, 0, 0, 0, 0, 0, 0);
			__weft_signal_caught();
			continue;
		}
		vp->stat.idle_sleeps++;
		__weft_preempt_idle();
		kernel_sleep_until(__weft_timers_next());
		__weft_timers_run(__weft_now());
	}
}

static inline void run_due_timers(void)
{
	if (unlikely(__weft_timers_pending()))
		__weft_timers_run(__weft_now());
}

void __weft_schedule(void)
{
	struct vp *vp = &__weft_vp0;
	run_due_timers();
	int p = highest_ready(vp);
	if (p < 0)
		p = idle(vp);
	struct ut *next;
	if (unlikely(vp->sched_debug >= SD_RANDOM)) {
		next = __weft_debug_pick(p);
		rq_unlink(vp, next);
	} else {
		next = rq_pop(vp, p);
	}
	if (next == vp->cur) {          /* woke itself while idling */
		next->state = UT_RUNNING;
		return;
	}
	switch_to(vp, next);
}

void __weft_yield(void)
{
	struct vp *vp = &__weft_vp0;
	struct ut *cur = vp->cur;
	run_due_timers();
	int p = highest_ready(vp);
	if (p < (int)cur->prio)
		return;
	struct ut *next = vp->rq[p];
	if (p == (int)cur->prio && next->q_next == next) {
		/* the one other ready UT of our level: trade places, leaving
		 * the bitmap and the ready count as they are */
		cur->q_next = cur->q_prev = cur;
		cur->state = UT_READY;
		vp->rq[p] = cur;
	} else {
		rq_unlink(vp, next);
		rq_link(vp, cur, false);
	}
	switch_to(vp, next);
}

void __weft_rotate(void)
{
	struct vp *vp = &__weft_vp0;
	struct ut *cur = vp->cur;
	if (highest_ready(vp) != (int)cur->prio)
		return;
	struct ut *next = rq_pop(vp, cur->prio);
	rq_link(vp, cur, false);
	switch_to(vp, next);
}

static void preempt_current(struct vp *vp, bool to_head)
{
	struct ut *cur = vp->cur;
	struct ut *next = rq_pop(vp, highest_ready(vp));
	rq_link(vp, cur, to_head);
	switch_to(vp, next);
}

void __weft_preempt_check(void)
{
	struct vp *vp = &__weft_vp0;
	if (highest_ready(vp) > (int)vp->cur->prio)
		preempt_current(vp, true);
}

int __weft_yield_to(struct ut *t)
{
	struct vp *vp = &__weft_vp0;
	struct ut *cur = vp->cur;
	if (t == cur)
		return 0;
	if (t->state != UT_READY)
		return EAGAIN;
	if (t->prio < cur->prio)
		return EPERM;
	rq_unlink(vp, t);
	rq_link(vp, cur, false);
	switch_to(vp, t);
	return 0;
}

/*
 * POSIX (XSH 2.8.4): pthread_setschedparam puts a running or ready thread at
 * the tail of its (new) priority's list, even when the priority does not
 * change; pthread_setschedprio puts it at the tail when raised, at the head
 * when lowered, and leaves it where it is when unchanged.  `setprio` says
 * which of the two calls this is.
 */
void __weft_set_sched(struct ut *t, int policy, int prio, bool setprio)
{
	struct vp *vp = &__weft_vp0;
	int old = t->prio;
	t->policy = (uint8_t)policy;
	t->base_prio = (uint8_t)prio;
	if (setprio && prio == old)
		return;
	bool to_head = setprio && prio < old;
	switch (t->state) {
	case UT_READY:
		rq_unlink(vp, t);
		t->prio = (uint8_t)prio;
		rq_link(vp, t, to_head);
		__weft_preempt_check();
		return;
	case UT_BLOCKED:
		t->prio = (uint8_t)prio;
		if (t->wq) {
			struct waitq *q = t->wq;
			__weft_waitq_remove(q, t);
			__weft_waitq_insert(q, t);
		}
		return;
	case UT_RUNNING: {
		t->prio = (uint8_t)prio;
		int hp = highest_ready(vp);
		/* at the tail of its list, it runs on only if nothing else is
		 * ready at its priority; at the head, only a better UT wins */
		if (hp > prio || (hp == prio && !to_head))
			preempt_current(vp, to_head);
		return;
	}
	default:
		t->prio = (uint8_t)prio;
		return;
	}
}
