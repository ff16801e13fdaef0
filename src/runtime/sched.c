/*
 * sched.c — the ready queues, the one function that chooses the next UT,
 * and the one function every switch goes through.
 *
 * One circular list per priority level 0..99 and a 128-bit bitmap of the
 * non-empty levels: the highest ready priority is one count-leading-zeros.
 * Invariants: bit p of ready_bits is set iff rq[p] is non-empty; every UT on
 * rq[p] is READY with prio p; the running UT is on no ready queue; nready
 * counts the UTs on the queues.  A UT that is preempted goes to the head of
 * its level, one that yields or is made ready goes to the tail (POSIX
 * SCHED_FIFO rules; RR differs only by time slicing).  M:N keeps level 0
 * per VP instead ("level 0 per VP" below): rq[0] empty, bit 0 iff nlocal.
 *
 * choose() is the only place that decides which ready UT runs next
 * (POSIX order, or a debug scheduler's pick within the top level);
 * weft_yield_to names its UT itself (a directed yield), and a join or an
 * exit may name one through __weft_hand_to, which __weft_schedule honours
 * only where POSIX leaves the order free (hand_off_choice).  switch_to()
 * is the only place that moves the VP from one UT to another: it keeps
 * errno, the thread pointer, the sanitizers and the WEFT_DEBUG checks
 * right for every switch.  Nothing switches while a program's signal handler runs over
 * protected code (rt.h, "noswitch"): those points leave a dispatch pending
 * instead, acted on by the next epilogue.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* AddressSanitizer must be told when the stack changes under it (fibers).
 * Fake stacks (detect_stack_use_after_return): each UT has its own, kept
 * in ut->asan_fake while the UT is switched out.  ASan names the fake
 * stack in use in its per-thread record (found through a key Weft keeps
 * per kernel thread, sync/key.c) and in a TLS word (per thread block, so
 * per UT where UTs have blocks of their own).  Invariant: a fake stack is
 * named by at most one kernel thread, the one running its UT.
 * start_switch takes the name from the kernel thread (and from the
 * leaving context's block: san_leave_tp) into prev->asan_fake, and every
 * switch out of a UT makes it before the UT can be run elsewhere (it is
 * queued, or the VP let go, only after: switch_to below, switch_home in
 * kthread.c); finish_switch gives the name to the kernel thread that runs
 * the UT next (a NULL one: ASan makes a fake stack at the UT's first fake
 * frame).  A UT that ends frees its fake stack (a NULL save) on the
 * kernel thread it ends on, which names no other UT's.  So fake stacks
 * stay on with any number of kernel threads, and a UT keeps its fake
 * frames on whichever carries it (asan_fake_stacks_across_kthreads). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
static inline void san_leave(struct ut *prev, struct ut *next)
{
	bool ends = prev->state == UT_EXITING;
	/* A switched-out UT's fake frames are LeakSanitizer's roots
	 * (lsan_roots.c): named at its first switch out, and unnamed at its
	 * last before ASan destroys them, each while prev is still its
	 * kernel thread's fiber, whose fake stack every check scans.  Named
	 * after ASan was told prev left, the frames were scanned nowhere in
	 * between, and the naming waits there for LeakSanitizer's lock, which
	 * a check on another VP holds throughout: that check could report a
	 * block only those frames held (not seen in practice: a copy of the
	 * pointer on the real stack usually hid it). */
	if (ends)
		__weft_lsan_unroot_fake_stack(prev);
	else if (unlikely(!prev->asan_fake_root))
		__weft_lsan_root_fake_stack(prev, __asan_get_current_fake_stack());
	__sanitizer_start_switch_fiber(ends ? NULL : &prev->asan_fake, next->stack.lo,
				       (size_t)(next->stack.hi - next->stack.lo));
}
static inline void san_enter(struct ut *self)
{
	__sanitizer_finish_switch_fiber(self->asan_fake, NULL, NULL);
}
#elif WEFT_TSAN
/* ThreadSanitizer: one fiber per context (tsan.c). */
static inline void san_leave(struct ut *prev, struct ut *next) { __weft_tsan_leave(prev, next); }
static inline void san_enter(struct ut *self) { __weft_tsan_enter(self); }
#else
static inline void san_leave(struct ut *prev, struct ut *next) { (void)prev; (void)next; }
static inline void san_enter(struct ut *self) { (void)self; }
#endif

/* Where a switch also moves the thread pointer, ASan must be told first:
 * __sanitizer_start_switch_fiber clears the fake-stack slot in the TLS of
 * the context it leaves (its runtime's TLS, per thread block), and told
 * after the move it cleared the next one's and left prev's block naming
 * prev's fake stack — which the next context on that block (the kernel
 * thread's home, or main's successor there) then used, and used after
 * prev's exit destroyed it.  san_leave_tp is that early leave: true when
 * it told ASan (the switch must not tell it again). */
#if defined(__SANITIZE_ADDRESS__)
static inline bool san_leave_tp(struct ut *prev, struct ut *next)
{
	san_leave(prev, next);
	return true;
}
#else
static inline bool san_leave_tp(struct ut *prev, struct ut *next)
{
	(void)prev;
	(void)next;
	return false;
}
#endif

void __weft_san_leave(struct ut *prev, struct ut *next) { san_leave(prev, next); }
void __weft_san_leave_to_tp(struct ut *prev, struct ut *next, void *tp)
{
	bool told = san_leave_tp(prev, next);     /* ASan: before the move */
	if (__weft_arch_tp_get() != tp)
		__weft_tp_set(tp);
	if (!told)
		san_leave(prev, next);            /* TSan: after (tsan.c's word) */
}
void __weft_san_enter(struct ut *self) { san_enter(self); }

static inline void bit_set(struct vp *vp, unsigned p) { __weft_rq.ready_bits[p >> 6] |= 1ull << (p & 63); }
static inline void bit_clear(struct vp *vp, unsigned p) { __weft_rq.ready_bits[p >> 6] &= ~(1ull << (p & 63)); }

/* Link t into the circular list *h (at its head or tail); true if the
 * list was empty. */
static inline bool list_link(struct ut **h, struct ut *t, bool at_head)
{
	struct ut *head = *h;
	if (!head) {
		t->q_next = t->q_prev = t;
		*h = t;
		return true;
	}
	struct ut *tail = head->q_prev;
	t->q_next = head;
	t->q_prev = tail;
	tail->q_next = t;
	head->q_prev = t;
	if (at_head)
		*h = t;
	return false;
}

/* Unlink t from the circular list *h; true if the list is empty now. */
static inline bool list_unlink(struct ut **h, struct ut *t)
{
	if (t->q_next == t) {
		*h = NULL;
		return true;
	}
	t->q_prev->q_next = t->q_next;
	t->q_next->q_prev = t->q_prev;
	if (*h == t)
		*h = t->q_next;
	return false;
}

/*
 * Level 0 per VP (M:N, vp->mn_local).  SCHED_OTHER, SCHED_BATCH and
 * SCHED_IDLE UTs (level 0) are ordered as the implementation likes
 * (POSIX), so with several VPs each VP keeps its own list of them: a UT
 * made ready goes to the list of the VP that readies it (a child to its
 * creator's, a woken UT to its waker's), and a VP takes from its own list
 * first, so that a UT tends to run where the data it shares with its
 * creator or waker is in cache (skynet's subtrees stay on one VP).  A VP
 * whose list is empty steals from the longest other list, and one whose
 * list is shorter by two or more than another's takes from that one, so
 * that the VPs' lists stay even and every level-0 UT gets its turns
 * (eight CPU-bound UTs made on one VP share two VPs' time evenly).  Bit 0
 * of ready_bits says "some VP's list is non-empty" (nlocal), so every
 * test of the top ready level is unchanged, and a level-0 UT on any list
 * is "ready" for yields, rotations and idle VPs alike.  The levels above
 * (SCHED_FIFO, SCHED_RR, boosts) stay one shared FIFO each, so the N
 * running UTs are still the N best and POSIX's order holds there.  All
 * under the runtime lock: any VP may unlink from any list (a steal, a
 * hand-off, a priority change), only the owner links to its own.
 */
static __attribute__((noinline)) void local_link(struct vp *vp, struct ut *t, bool at_head)
{
	t->rq_vp = (uint8_t)vp->index;
	vp->lq_n++;
	list_link(&vp->lq, t, at_head);
	if (__weft_rq.nlocal++ == 0)
		bit_set(vp, 0);
}

static __attribute__((noinline)) void local_unlink(struct vp *vp, struct ut *t)
{
	struct vp *owner = &__weft_vps[t->rq_vp];
	if (owner != vp)
		vp->stat.steals++;
	owner->lq_n--;
	list_unlink(&owner->lq, t);
	if (--__weft_rq.nlocal == 0)
		bit_clear(vp, 0);
}

/* The list this VP takes level 0's next UT from (nlocal != 0): its own
 * unless another's is longer by two or more, or its own is empty. */
static __attribute__((noinline)) struct ut *local_head(struct vp *vp)
{
	struct vp *from = vp;
	uint32_t more_than = vp->lq_n ? vp->lq_n + 1 : 0;
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (v->lq_n > more_than) {
			from = v;
			more_than = v->lq_n;
		}
	}
	return from->lq;
}

/* `maybe_local` false: the caller knows vp->mn_local is 0 (the plain
 * yield's path), so no test is made for it. */
static inline __attribute__((always_inline)) void rq_link_as(struct vp *vp, struct ut *t, bool at_head,
							      bool maybe_local)
{
	if (maybe_local && unlikely(vp->mn_local) && t->prio == 0)
		local_link(vp, t, at_head);
	else if (list_link(&__weft_rq.rq[t->prio], t, at_head))
		bit_set(vp, t->prio);
	WEFT_STATE(t, UT_READY);
	__weft_rq.nready++;
	__weft_preempt_arm_ready(vp);
}

static inline __attribute__((always_inline)) void rq_unlink_as(struct vp *vp, struct ut *t, bool maybe_local)
{
	if (maybe_local && unlikely(vp->mn_local) && t->prio == 0)
		local_unlink(vp, t);
	else if (list_unlink(&__weft_rq.rq[t->prio], t))
		bit_clear(vp, t->prio);
	__weft_rq.nready--;
}

static inline void rq_link(struct vp *vp, struct ut *t, bool at_head) { rq_link_as(vp, t, at_head, true); }
static inline void rq_unlink(struct vp *vp, struct ut *t) { rq_unlink_as(vp, t, true); }

/* M:N is starting (mn.c, before the other VPs run): level 0 becomes VP 0's
 * list, and every VP keeps level 0 per VP from here on. */
void __weft_local_queues_on(struct vp *v0)
{
	if (v0->mn_local)
		return;                   /* a fork's child: on since its parent's start */
	struct ut *h = __weft_rq.rq[0];
	__weft_rq.rq[0] = NULL;
	v0->lq = h;
	v0->lq_n = 0;
	if (h) {
		struct ut *t = h;
		do {
			t->rq_vp = (uint8_t)v0->index;
			v0->lq_n++;
			t = t->q_next;
		} while (t != h);
	}
	__weft_rq.nlocal = v0->lq_n;
	v0->mn_local = 1;                 /* copied to the other VPs with switch_care */
}

/* A fork's child: no list holds anything (fork.c empties the queues). */
void __weft_local_queues_clear(void)
{
	/* Only the VPs the program has (proc.nvps, fixed before a second UT;
	 * no other VP's list was ever used): a fork's child calls this first
	 * thing, and a look at each of the 64 VPs' structures was a page
	 * fault each in the child (about 60 of the 99 faults, and about
	 * 130 µs, between a Weft program's fork and its child's first line). */
	unsigned n = __weft_proc.nvps;
	if (n == 0 || n > WEFT_VPS_MAX)
		n = WEFT_VPS_MAX;
	for (unsigned i = 0; i < n; i++) {
		__weft_vps[i].lq = NULL;
		__weft_vps[i].lq_n = 0;
	}
	__weft_rq.nlocal = 0;
}

struct weft_runq __weft_rq;

/* Made ready (not a running UT put back): under M:N another VP may have
 * to take it (mn.c). */
void __weft_ready(struct ut *t)
{
	rq_link(__weft_vp(), t, false);
	if (unlikely(__weft_mn))
		__weft_mn_readied(t);
}

void __weft_ready_first(struct ut *t)
{
	rq_link(__weft_vp(), t, true);
	if (unlikely(__weft_mn))
		__weft_mn_readied(t);
}

/* The one choice: which UT of the (non-empty) top level p runs next. */
static inline struct ut *level_head(struct vp *vp, int p)
{
	if (unlikely(vp->mn_local) && p == 0)
		return local_head(vp);
	return __weft_rq.rq[p];
}

struct ut *__weft_level_head(struct vp *vp, int p)
{
	return level_head(vp, p);
}

static inline struct ut *choose(struct vp *vp, int p)
{
	struct ut *head = level_head(vp, p);
	if (unlikely(vp->debug_pick))
		return __weft_debug_pick(vp, head);
	return head;
}

/*
 * The fork-join hand-off (Go's runnext; Cilk's work-first order): a UT
 * that parks to join a thread that is READY and has never run (`fresh`)
 * runs that thread next, and a UT that ends runs its joiner next, instead
 * of the head of the level
 * (__weft_hand_to names them: posix/pthread_join.c, lifecycle.c).  A tree
 * of threads that each create and join their children (skynet) then runs
 * depth first, with a few stacks alive, taken warm from the pool; in FIFO
 * order it ran breadth first, every thread of the tree alive at once on a
 * fresh stack of its own (1,111,111 of them for skynet's million).
 *
 * Honoured only where POSIX leaves the order free: the top ready level is
 * 0, which holds only SCHED_OTHER, SCHED_BATCH and SCHED_IDLE UTs (the
 * SCHED_FIFO and SCHED_RR priorities start at 1), the named UT is READY
 * there (not boosted, not already taken by another VP), and no debug
 * scheduler chooses (its seed decides).  The named UT runs on the rest of
 * the caller's slice, so a pair that hands the VP back and forth gives way
 * to the rest of the level at the next tick, as one UT would.  The hint
 * is dropped here whether honoured or not.
 */
static inline struct ut *hand_off_choice(struct vp *vp, int p)
{
	struct ut *t = vp->hand_to;
	vp->hand_to = NULL;
	/* READY with level 0 on top: it is at level 0 (not boosted) */
	if (p != 0 || t->state != UT_READY || vp->debug_pick)
		return NULL;
	return t;
}

/* cur runs again on this kernel thread.  `stack_moved`: it comes back by
 * a switch of stacks, which told the sanitizers it began (san_leave);
 * false where a guest's kernel thread goes on with its guest on the stack
 * it never left (it waited for the VP: guest.c), and no switch began. */
static inline void switched_in_as(struct vp *vp, bool stack_moved)
{
	struct ut *cur = vp->cur;
	if (stack_moved)
		san_enter(cur);
	*vp->errnop = cur->saved_errno;
	/* a signal became due for it while it was switched out: its handler
	 * runs at the epilogue it returns through (sigdeliver.c) */
	if (unlikely(cur->sig_ready))
		vp->signals = 1;
	if (unlikely(vp->exiting != NULL)) {
		struct ut *t = vp->exiting;
		vp->exiting = NULL;
		if (unlikely(__weft_is_copy(t)))
			__weft_cs_release(t);
		else
			__weft_stack_put(&t->stack);
#if WEFT_TSAN
		void *fiber = __weft_tsan_take(t);   /* ends below, once t is settled */
#endif
		if (t->detached) {
			__weft_ut_reap(t);
		} else {
			WEFT_STATE(t, UT_ZOMBIE);
			/* M:N: the VP may have been let go between t's exit
			 * (which woke its joiner) and here — t gave way to a
			 * guest, whose kernel thread takes the VP and comes
			 * here — and a joiner that ran meanwhile on another VP
			 * saw EXITING and parked again (pthread_join.c) */
			if (unlikely(t->joinq.head))
				__weft_wake_all_nopreempt(&t->joinq, 0);
		}
#if WEFT_TSAN
		__weft_tsan_end(fiber);
#endif
	}
}

static inline void switched_in(struct vp *vp)
{
	switched_in_as(vp, true);
}

void __weft_switched_in(struct vp *vp)
{
	switched_in(vp);
}

void __weft_switched_in_waited(struct vp *vp)
{
	switched_in_as(vp, false);
}

/* The first code of every new UT (its switch frame returns here): the
 * switch-in bookkeeping its creator's switch_to would have done, the
 * epilogue (deferred work reaches a new UT before its start routine, as it
 * would reach a returning Weft call), then the start routine. */
void __weft_ut_main(void *p)
{
	struct ut *t = p;
	struct vp *vp = __weft_vp();
	t->fresh = 0;
	switched_in(vp);
	__weft_epilogue(EXIT_OTHER);
	/* M:N: the epilogue may have switched (a deferred tick) and t goes on
	 * on another VP: leave that one's Weft (the stale VP's in_weft cleared
	 * here left the runtime lock held for good by the VP t left) */
	__weft_outcall_begin(__weft_vp());
	void *r = t->start(t->arg);
	/* the start routine may have blocked where the monitor took the VP */
	__weft_outcall_end();
	__weft_ut_exit(r);
}

static void canary_dead(struct ut *t)
{
	__weft_die("thread %llu (%s) overflowed its unguarded stack [%p, %p)",
		   (unsigned long long)t->id, t->name, (void *)t->stack.lo, (void *)t->stack.hi);
}

static int idle(struct vp *vp);
static void mn_idle_switch(struct vp *vp);

/*
 * Copy-stack UTs (copystack.c): the chosen UT may be unable to run now,
 * its run stack busy (its occupant runs on another VP, or is away in the
 * kernel).  Then it waits for that run stack (UT_DEFERRED) and the next
 * best is chosen, as if it were not ready; with nothing else ready the VP
 * waits as __weft_schedule would (M:N: NULL, the caller goes idle).
 */
static struct ut *cs_runnable(struct vp *vp, struct ut *next)
{
	while (__weft_is_copy(next) && __weft_cs_busy(next)) {
		__weft_cs_defer(next);
		int p = __weft_highest_ready();
		if (p < 0) {
			if (unlikely(__weft_mn) && __weft_proc.mn.started)
				return NULL;
			p = idle(vp);
		}
		next = choose(vp, p);
		rq_unlink(vp, next);
	}
	return next;
}

/* The switch itself, prev to next (both decided): inlined into switch_to
 * with `moved` false (the path every switch without copy-stack UTs takes)
 * and into switch_copy.  `keep_slice`: next runs on what is left of
 * prev's time slice (the fork-join hand-off, __weft_schedule), not on a
 * slice of its own.  `care`: vp->switch_care, read once by the caller
 * for the whole switch (it is volatile: each test was a load).  Its
 * bytes are written by whoever holds the VP (its carrier; the monitor
 * while it has taken it, tls.c's tp_on) and, for libc_cancel under M:N,
 * under the runtime lock, which the switching carrier holds: none
 * changes between that read and the switch. */
static inline __attribute__((always_inline)) void switch_finish(struct vp *vp, struct ut *prev, struct ut *next,
								 bool moved, bool keep_slice, uint64_t care)
{
	bool told = false;              /* ASan told already (san_leave_tp) */
	prev->saved_errno = *vp->errnop;
	if (unlikely(prev->stack.canary) && !__weft_stack_canary_ok(&prev->stack))
		canary_dead(prev);
#ifdef WEFT_DEBUG
	__weft_check_switch(vp, prev, next);
#endif
	WEFT_STATE(next, UT_RUNNING);
	/* __weft_cur_set, its libc_cancel test folded into care's */
	if (unlikely(care) && vp->libc_cancel)
		__weft_libc_cancel_left(vp, next);
	__weft_cur_store(vp, next);
	if (!keep_slice)
		vp->cur_since = vp->async.ticks;
	vp->stat.switches++;
	if (unlikely(care)) {
		if (vp->trace_on)
			__weft_trace_switch(prev, next);
		if (vp->cpu_acct)
			__weft_cpu_switch(vp, prev);
		/* The thread-pointer slot: once UTs have TLS of their own
		 * (tls.c), each carries its own thread pointer; one made before
		 * gets its block now, before it runs. */
		if (vp->tp_on) {
			if (unlikely(next->guest_kt || prev->guest_kt)) {
				/* a guest runs only on its own kernel thread */
				__weft_guest_switch(vp, prev, next);
				/* M:N: maybe another VP.  A guest prev waited
				 * for the VP on its own stack; an ordinary one
				 * was switched from its kernel thread's home */
				switched_in_as(__weft_vp(), !prev->guest_kt);
				return;
			}
			if (unlikely(!next->tp))
				__weft_tls_attach_late(next);
			if (unlikely(__weft_mn))
				__weft_tls_rehome(next, vp);
			if (next->tp != prev->tp) {
				told = san_leave_tp(prev, next);
				__weft_tp_set(next->tp);
			}
		}
		/* next's block names this VP's thread now (rehomed above) */
		if (vp->libc_cancel)
			__weft_libc_cancel_switch_in(vp, next);
		/* next's slice starts after the system calls above: a tick
		 * the kernel hands over as one of them returns (where a
		 * virtualised timer's signal is mostly seen) ended prev's
		 * slice, and must not make next give the processor up at its
		 * first epilogue.  Else, where arch_prctl is slow, every
		 * switch drew the next one and UTs ran almost nothing. */
		if (!keep_slice)
			vp->cur_since = vp->async.ticks;
	}
	if (!told)
		san_leave(prev, next);
	if (moved)
		__weft_cs_switch_moved(vp, prev, next);   /* both on one run stack */
	else
		__weft_switch(&prev->sp, next->sp);
	/* prev runs again, on whichever VP chose it (M:N) */
	switched_in(__weft_vp());
}

/* A switch where prev or next is a copy-stack UT (copystack.c): next may
 * have to wait for its run stack, and its frames may have to be put back,
 * through the VP's mover if prev stands on that run stack. */
static __attribute__((noinline)) void switch_copy(struct vp *vp, struct ut *prev, struct ut *next,
						   bool keep_slice, uint64_t care)
{
	next = cs_runnable(vp, next);
	if (next == prev) {            /* chosen again while its pick waited */
		WEFT_STATE(prev, UT_RUNNING);
		return;
	}
	if (!next) {
		mn_idle_switch(vp);
		return;
	}
	bool moved = __weft_cs_prepare(vp, prev, next);
	/* cs_runnable may have waited for a run stack: care read afresh
	 * (the slow path; the caller's read only chose it) */
	care = vp->switch_care;
	if (moved)
		switch_finish(vp, prev, next, true, keep_slice, care);
	else
		switch_finish(vp, prev, next, false, keep_slice, care);
}

/* Every switch: prev (RUNNING, BLOCKED, READY or EXITING, already queued
 * wherever it belongs) gives the VP to next (READY, already unlinked). */
static inline __attribute__((always_inline)) void switch_to_as(struct vp *vp, struct ut *next, bool keep_slice)
{
	struct ut *prev = vp->cur;
	uint64_t care = vp->switch_care;
	if (unlikely(care) && vp->cs_on && (__weft_is_copy(next) || __weft_is_copy(prev))) {
		switch_copy(vp, prev, next, keep_slice, care);
		return;
	}
	switch_finish(vp, prev, next, false, keep_slice, care);
}

static inline void switch_to(struct vp *vp, struct ut *next)
{
	switch_to_as(vp, next, false);
}

/* The fork-join hand-off's switch: next runs on the rest of the slice. */
static __attribute__((noinline)) void switch_to_keep_slice(struct vp *vp, struct ut *next)
{
	switch_to_as(vp, next, true);
}

/* Sleep in the kernel until CLOCK_MONOTONIC reaches `deadline` (-1: no
 * deadline), or until a kernel thread that queued a UT on the inbox bumps
 * vp->wake (handoff.c).  A raw futex wait: clock_nanosleep and syscall()
 * themselves are Weft's.  `seen` is vp->wake as read before the caller
 * last looked at the inbox.  True when a signal cut it short. */
static bool kernel_sleep_until(struct vp *vp, uint32_t seen, int64_t deadline)
{
	struct timespec ts = { .tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000 };
	long r = __weft_raw_syscall6(SYS_futex, (long)&vp->wake, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen,
				     deadline >= 0 ? (long)&ts : 0, 0, FUTEX_BITSET_MATCH_ANY);
	return r == -EINTR;
}

/* A signal ended a wait in the kernel: if it was a program signal (not
 * Weft's tick), it goes to its UT now (sigdeliver.c), which wakes that UT
 * if it waits where a signal may end the wait. */
static void after_kernel_wait(struct vp *vp)
{
	if (vp->signals)
		__weft_signals_deliver(vp);
}

/* The VP waits in the kernel: the tick has nothing to preempt meanwhile,
 * and a kernel thread that queues a UT on the inbox wakes it.  The fence
 * pairs with the one after the inbox push (handoff.c): either the pusher
 * sees idle and bumps `wake`, or the inbox test below sees its UT. */
static inline void idle_begin(struct vp *vp)
{
	__atomic_store_n(&vp->idle, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void idle_end(struct vp *vp)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->idle = 0;
	/* the monitor may have parked, having seen every VP idle (rt.h,
	 * __weft_monitor_parked): a fence and a load, after a kernel wait */
	__weft_monitor_check_parked();
}

/* The io layer's poller, once a UT has waited on a descriptor (rt.h). */
const struct weft_poller *__weft_poller;

/* Nothing is ready: let time pass until a timer or a descriptor makes
 * something ready, or a UT comes back from a blocking call.  This is the
 * only place the VP sleeps in the kernel: in the poller while UTs wait on
 * descriptors (a UT back from a blocking call wakes it with the poller's
 * wake, preempt.c), else on the futex word vp->wake. */
static int idle(struct vp *vp)
{
	bool spun = false, first_pass = true, graced = false;
	for (;;) {
		__weft_inbox_drain(vp);
		if (unlikely(__weft_mn))
			__weft_mn_inboxes_take(vp);
		int p = __weft_highest_ready();
		/* M:N: one UT on a busy VP's list is that VP's to run first,
		 * for a moment (mn.c, __weft_mn_grace) */
		if (p == 0 && unlikely(vp->mn_local) && !graced) {
			graced = true;
			if (__weft_mn_grace(vp))
				continue;
		}
		if (p >= 0)
			return p;
		__weft_preempt_idle(first_pass);
		first_pass = false;
		if (vp->signals) {
			__weft_signals_deliver(vp);
			continue;
		}
		/* M:N: look a little while without the lock before sleeping,
		 * so that work made by another VP a moment later is taken
		 * without a wake-up (Go's spinning M) — but not where this VP
		 * would wait in the poller next: UTs wait on descriptors and no
		 * VP watches them, so their readiness, which no spin can see,
		 * would wait for the spin to end (two VPs passing bytes over
		 * sockets took 90 us a round trip, against 15 on one VP) */
		if (unlikely(__weft_mn) && __weft_proc.mn.started && !spun &&
		    !(__weft_proc.mn.poll_owner < 0 && __weft_poller && __weft_poller->waiting(vp))) {
			spun = true;
			__weft_mn_spin(vp);
			__weft_timers_run(__weft_now());
			continue;
		}
		/* M:N: a sleeping carrier's kernel mask as the process's tally
		 * says now (another VP may have changed it: sigdeliver.c) */
		if (unlikely(__weft_mn))
			__weft_sig_kmask_refresh(vp);
		uint32_t seen = __atomic_load_n(&vp->wake, __ATOMIC_ACQUIRE);
		idle_begin(vp);
		/* a signal deferred since the look above would otherwise wait
		 * for the next wake-up: the dispatcher bumps `wake` only once
		 * it sees idle set (signal.c, defer) */
		if (vp->inbox || vp->signals || (__weft_mn && __weft_mn_inboxes_hold(vp))) {
			idle_end(vp);
			continue;
		}
		const struct weft_poller *poller = __weft_poller;
		bool polled = poller && poller->waiting(vp);
		if (polled && (!__weft_mn || __weft_proc.mn.poll_owner < 0)) {
			vp->stat.idle_sleeps++;
			/* M:N: one VP waits in the poller, which lets the lock go
			 * for the wait itself (io/poller.c); the others sleep
			 * below, to the nearest deadline (the poll quantum's too) */
			if (__weft_mn)
				__weft_proc.mn.poll_owner = (int)vp->index;
			bool interrupted = poller->wait(vp, __weft_timers_pending() ? __weft_timers_next() : -1);
			if (__weft_mn)
				__weft_proc.mn.poll_owner = -1;
			idle_end(vp);
			if (interrupted)
				after_kernel_wait(vp);
			__weft_timers_run(__weft_now());
			continue;
		}
		if (!__weft_timers_pending()) {
			/* Every UT is blocked and nothing can wake any: a deadlock,
			 * as it would be under kernel threads.  Report it if asked
			 * (WEFT_DEADLOCK=report, debug schedulers) unless some UT
			 * is in pause(), waiting for a signal, or in a call off the
			 * VP, which will come back; otherwise sleep, as NPTL would,
			 * until a signal handler changes something. */
			/* M:N: a UT waiting on a descriptor while another VP
			 * waits in the poller for it is no deadlock */
			if (!__weft_sig_waiting() && !vp->offvp && !polled &&
			    (!__weft_mn || __weft_mn_all_idle())) {
				idle_end(vp);
				__weft_deadlock();
				idle_begin(vp);
			}
			__weft_mn_sleep_begin(vp);
			bool interrupted = kernel_sleep_until(vp, seen, -1);
			__weft_mn_sleep_end(vp);
			idle_end(vp);
			if (interrupted)
				after_kernel_wait(vp);
			continue;
		}
		vp->stat.idle_sleeps++;
		int64_t until = __weft_timers_next();
		__weft_mn_sleep_begin(vp);
		bool interrupted = kernel_sleep_until(vp, seen, until);
		__weft_mn_sleep_end(vp);
		idle_end(vp);
		if (interrupted)
			after_kernel_wait(vp);
		__weft_timers_run(__weft_now());
	}
}

static inline void run_due_timers(struct vp *vp)
{
	if (unlikely(__weft_timers_pending()) && __weft_timers_maybe_due()) {
		int64_t now = __weft_timers_due_now();
		if (now >= 0)
			__weft_timers_run(now);
	}
}

/*
 * The caller gave up the processor (BLOCKED or EXITING) while a program's
 * handler runs over protected code, so no other UT may run: wait in the
 * kernel as a kernel thread would, until something (a timer, or a nested
 * handler) makes the caller ready again.
 */
static void schedule_noswitch(struct vp *vp)
{
	struct ut *self = vp->cur;
	if (self->state == UT_EXITING)
		__weft_die("thread %llu exited inside a signal handler that interrupted libc or Weft",
			   (unsigned long long)self->id);
	while (self->state == UT_BLOCKED) {
		if (self->tindex) {
			int64_t d = self->deadline;
			if (__weft_mn)
				__weft_rtl_unlock();
			kernel_sleep_until(vp, vp->wake, d);
			if (__weft_mn)
				__weft_rtl_lock();
			__weft_timers_run(__weft_now());
		} else {
			if (__weft_mn)
				__weft_rtl_unlock();
			__weft_raw_syscall6(SYS_pause, 0, 0, 0, 0, 0, 0);
			if (__weft_mn)
				__weft_rtl_lock();
		}
	}
	/* woken: it was made READY; it runs on without a switch */
	rq_unlink(vp, self);
	WEFT_STATE(self, UT_RUNNING);
	vp->dispatch_pending = 1;
}

/*
 * M:N: nothing is ready.  The VP must not wait on the stack of the UT that
 * gave up the processor, since another VP may choose that UT as soon as
 * it is woken; it switches to its idle context instead (a stack of its
 * own, a frame made afresh each time, never resumed), which waits for
 * work and switches to what it chooses.  The context runs on the
 * carrier's own thread block (the UT's may be released meanwhile: an
 * exiting UT's stack is given back by the idle context's switch-in).
 */
static __attribute__((noreturn)) void idle_main(void *p)
{
	struct vp *vp = p;
	if (vp->tp_on)
		__weft_tp_set(vp->carrier->tp);
	switched_in(vp);
	vp->kicked = 0;
	struct ut *next;
	do {
		int prio = idle(vp);
		next = choose(vp, prio);
		rq_unlink(vp, next);
		/* a copy-stack UT whose run stack another VP uses waits for it */
		if (unlikely(vp->cs_on) && __weft_is_copy(next) && __weft_cs_busy(next)) {
			__weft_cs_defer(next);
			next = NULL;
		}
	} while (!next);
	if (__weft_rq.nready)
		__weft_mn_wake_idle();       /* more work than this VP takes */
	__weft_preempt_arm(vp);
	switch_to(vp, next);
	__weft_die("a VP's idle context was resumed");
}

static void mn_idle_switch(struct vp *vp)
{
	struct ut *prev = vp->cur;
	struct ut *ctx = &vp->idle_ut;
	prev->saved_errno = *vp->errnop;
	if (unlikely(prev->stack.canary) && !__weft_stack_canary_ok(&prev->stack))
		canary_dead(prev);
	/* prev's CPU time ends here (the idle context's is charged to the
	 * context itself by its switch_to, and read by nobody) */
	if (unlikely(vp->cpu_acct))
		__weft_cpu_switch(vp, prev);
	if (unlikely(prev->guest_kt)) {
		/* a guest's kernel thread runs nothing but its guest: the VP
		 * idles on a spare, and the guest waits for its turn */
		__weft_guest_idle(vp);
		switched_in_as(__weft_vp(), false);   /* it waited on its own stack */
		return;
	}
	if (unlikely(__weft_is_copy(prev)))
		__weft_cs_left(prev);                /* its run stack is free */
	ctx->tp = NULL;
	ctx->sp = __weft_arch_frame(ctx->stack.hi, idle_main, vp);
	__weft_cur_set(vp, ctx);
	san_leave(prev, ctx);
	__weft_switch(&prev->sp, ctx->sp);
	switched_in(__weft_vp());
}

static __attribute__((noinline)) void schedule_full(struct vp *vp)
{
	if (unlikely(vp->switch_care) && __weft_noswitch(vp)) {
		schedule_noswitch(vp);
		return;
	}
	__weft_inbox_drain(vp);
	run_due_timers(vp);
	int p = __weft_highest_ready();
	if (p < 0) {
		if (unlikely(__weft_mn) && __weft_proc.mn.started) {
			mn_idle_switch(vp);
			return;
		}
		p = idle(vp);
	}
	if (unlikely(vp->hand_to != NULL)) {
		struct ut *t = hand_off_choice(vp, p);
		if (t) {
			rq_unlink(vp, t);
			switch_to_keep_slice(vp, t);
			return;
		}
	}
	struct ut *next = __weft_rq.rq[p];
	if (unlikely(vp->switch_care))
		next = choose(vp, p);
	rq_unlink(vp, next);
	if (next == vp->cur) {          /* woke itself while idling */
		WEFT_STATE(next, UT_RUNNING);
		return;
	}
	switch_to(vp, next);
}

/*
 * The one choice, in its common case: nothing beyond the plain queues to
 * look at (switch_care clear: no debug pick, no per-VP level 0, no
 * noswitch mark), no inbox, no timer that may be due, and a UT ready.
 * Then the fork-join hand-off's UT or the head of the top level runs, as
 * schedule_full would choose; everything else is schedule_full's.  Apart
 * so that this path calls nothing but the switch (a tail call) and saves
 * no register: schedule_full's four pushes and pops were a fifth of its
 * cost on a mutex hand-off.
 */
void __weft_schedule(void)
{
	struct vp *vp = __weft_vp();
	int p;
	if (unlikely(vp->switch_care | (vp->inbox != NULL)) ||
	    unlikely(__weft_timers_pending() && __weft_timers_maybe_due()) ||
	    unlikely((p = __weft_highest_ready()) < 0)) {
		schedule_full(vp);
		return;
	}
	if (vp->hand_to != NULL) {
		struct ut *t = hand_off_choice(vp, p);
		if (t) {
			rq_unlink_as(vp, t, false);
			switch_to_keep_slice(vp, t);
			return;
		}
	}
	struct ut *next = __weft_rq.rq[p];
	rq_unlink_as(vp, next, false);
	if (unlikely(next == vp->cur)) {
		WEFT_STATE(next, UT_RUNNING);
		return;
	}
	switch_to(vp, next);
}

/*
 * The VP was handed to this kernel thread (kthread.c): choose a UT and
 * switch to it from the kernel thread's home context.  The home is `cur`
 * meanwhile, BLOCKED so that nothing switches away from it (a deferred
 * signal handler run from the idle loop runs as on a parked UT).  Returns
 * when a UT on this kernel thread comes home from a blocking call.
 */
void __weft_run_from_home(struct vp *vp, struct ut *home, struct ut *run)
{
	home->state = UT_BLOCKED;
	struct ut *next = run;
	if (run) {
		/* handed the VP to run this one (guest.c): it is RUNNING already */
		__weft_cur_set(vp, run);
		goto go;
	}
	__weft_cur_set(vp, home);
	__weft_inbox_drain(vp);
	run_due_timers(vp);
	do {
		int p = __weft_highest_ready();
		if (p < 0)
			p = idle(vp);
		next = choose(vp, p);
		rq_unlink(vp, next);
		/* a copy-stack UT whose run stack is busy waits for it */
		if (unlikely(vp->cs_on) && __weft_is_copy(next)) {
			if (__weft_cs_busy(next)) {
				__weft_cs_defer(next);
				next = NULL;
			} else {
				(void)__weft_cs_prepare(vp, home, next);   /* home is not on it */
			}
		}
	} while (!next);
	WEFT_STATE(next, UT_RUNNING);
	__weft_cur_set(vp, next);
	if (unlikely(next->guest_kt)) {
		/* only its own kernel thread runs a guest: home lends it the VP */
		vp->carrier->lend_to = next->guest_kt;
		next->guest_kt->resume = next;
		vp->cur_since = vp->async.ticks;
		vp->stat.switches++;
		return;                   /* home_loop lets the VP go and lends it */
	}
go:
	vp->cur_since = vp->async.ticks;
	vp->stat.switches++;
	/* a new carrier starts with the tick off (handoff.c, monitor.c): UTs
	 * already waiting behind the one it runs get their slice from here
	 * (M:N: a running VP always ticks, mn.c) */
	if (__weft_rq.nready || __weft_mn)
		__weft_preempt_arm(vp);
	bool told = false;
	if (vp->tp_on) {
		if (unlikely(!next->tp))
			__weft_tls_attach_late(next);
		if (unlikely(__weft_mn))
			__weft_tls_rehome(next, vp);
		told = san_leave_tp(home, next);
		__weft_tp_set(next->tp);
		vp->cur_since = vp->async.ticks;   /* as switch_finish: after the system call */
	}
	if (vp->libc_cancel)
		__weft_libc_cancel_switch_in(vp, next);   /* as switch_finish does */
	if (!told)
		san_leave(home, next);
	__weft_switch(&home->sp, next->sp);
	san_enter(home);
}

/* A switch point found a handler running over protected code. */
static bool declined(struct vp *vp)
{
	if (likely(!__weft_noswitch(vp)))
		return false;
	vp->dispatch_pending = 1;
	return true;
}

void __weft_yield_slow(void)
{
	struct vp *vp = __weft_vp();
	__weft_inbox_drain(vp);
	run_due_timers(vp);
	int p = __weft_highest_ready();
	if (p >= (int)vp->cur->prio)
		__weft_yield_level(vp, p);
}

/* cur gives level p's chosen UT the VP and goes to the tail of its own.
 * `not_local`: level p's list is the shared rq[p] (vp->mn_local is 0, or
 * known to be: the plain yield), so the lone other UT may trade places. */
static inline __attribute__((always_inline)) void yield_finish(struct vp *vp, struct ut *next, int p,
								bool not_local)
{
	struct ut *cur = vp->cur;
	if (not_local && next->q_next == next && p == (int)cur->prio) {
		/* the one other ready UT of our level: trade places, leaving
		 * the bitmap and the ready count as they are */
		cur->q_next = cur->q_prev = cur;
		WEFT_STATE(cur, UT_READY);
		__weft_rq.rq[p] = cur;
	} else {
		rq_unlink_as(vp, next, !not_local);
		rq_link_as(vp, cur, false, !not_local);
	}
	switch_to(vp, next);
}

/* A yield where a handler over protected code may forbid the switch or
 * a debug scheduler picks: apart, so that the plain yield keeps no
 * register across a call. */
static __attribute__((noinline)) void yield_level_care(struct vp *vp, int p)
{
	if (declined(vp))
		return;
	/* level 0 per VP: cur goes to this VP's list, next may be another's */
	yield_finish(vp, choose(vp, p), p, !vp->mn_local);
}

void __weft_yield_level(struct vp *vp, int p)
{
	/* noswitch_set, debug_pick and mn_local, not the whole word: tp_on,
	 * set for good in most C++ programs (libstdc++ has TLS), needs no
	 * care here */
	if (unlikely(vp->switch_care & VP_YIELD_CARE)) {
		yield_level_care(vp, p);
		return;
	}
	yield_finish(vp, __weft_rq.rq[p], p, true);
}

void __weft_rotate(void)
{
	struct vp *vp = __weft_vp();
	struct ut *cur = vp->cur;
	if (__weft_highest_ready() != (int)cur->prio || declined(vp))
		return;
	struct ut *next = choose(vp, cur->prio);
	rq_unlink(vp, next);
	rq_link(vp, cur, false);
	switch_to(vp, next);
}

static void preempt_current(struct vp *vp, bool to_head)
{
	if (declined(vp))
		return;
	struct ut *cur = vp->cur;
	struct ut *next = choose(vp, __weft_highest_ready());
	rq_unlink(vp, next);
	rq_link(vp, cur, to_head);
	switch_to(vp, next);
}

void __weft_preempt_check(void)
{
	struct vp *vp = __weft_vp();
	if (__weft_highest_ready() > (int)vp->cur->prio) {
		/* M:N: the UT that gives way is the lowest-priority running
		 * one, which may be another VP's */
		if (unlikely(__weft_mn)) {
			struct vp *low = __weft_mn_lower_vp(vp);
			if (low) {
				__weft_mn_kick(low);
				return;
			}
		}
		preempt_current(vp, true);
	}
}

int __weft_yield_to(struct ut *t)
{
	struct vp *vp = __weft_vp();
	struct ut *cur = vp->cur;
	if (t == cur)
		return 0;
	if (t->state != UT_READY)
		return EAGAIN;
	if (t->prio < cur->prio)
		return EPERM;
	if (declined(vp))
		return 0;
	rq_unlink(vp, t);
	rq_link(vp, cur, false);
	switch_to(vp, t);
	return 0;
}

/* Give a UT that is not running priority `prio` where its queue says:
 * READY at the head or tail of its new level, BLOCKED re-placed in its
 * wait queue's priority order; any other state keeps only the number. */
static void place(struct vp *vp, struct ut *t, int prio, bool to_head)
{
	switch (t->state) {
	case UT_READY:
		rq_unlink(vp, t);
		t->prio = (uint8_t)prio;
		rq_link(vp, t, to_head);
		return;
	case UT_BLOCKED:
		t->prio = (uint8_t)prio;
		if (t->wq) {
			struct waitq *q = t->wq;
			__weft_waitq_remove(q, t);
			__weft_waitq_insert(q, t);
		}
		return;
	default:
		t->prio = (uint8_t)prio;
		return;
	}
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
	struct vp *vp = __weft_vp();
	int old = t->prio;
	t->policy = (uint8_t)policy;
	t->base_prio = (uint8_t)prio;
	if (setprio && prio == old)
		return;
	bool to_head = setprio && prio < old;
	switch (t->state) {
	case UT_RUNNING: {
		t->prio = (uint8_t)prio;
		int hp = __weft_highest_ready();
		/* at the tail of its list, it runs on only if nothing else is
		 * ready at its priority; at the head, only a better UT wins */
		if (hp > prio || (hp == prio && !to_head))
			preempt_current(vp, to_head);
		return;
	}
	case UT_READY:
		place(vp, t, prio, to_head);
		__weft_preempt_check();
		return;
	default:
		place(vp, t, prio, to_head);
		return;
	}
}

/*
 * A mutex protocol (sync/prio.c) moves t to effective priority `prio`; its
 * policy and base priority stay.  READY: unlinked and linked again at the
 * head of its new level when `to_head` (a boost that ends), else at the
 * tail (a boost that begins); BLOCKED: re-placed in its wait queue (the
 * queue's priority order); RUNNING: only the number changes.  Never
 * switches: the caller, once done with every UT it moves, calls
 * __weft_preempt_check(), which keeps a preempted UT at the head of its
 * level.  Under M:N the caller holds t's scheduling-fields lock.
 */
void __weft_set_effective_prio(struct ut *t, int prio, bool to_head)
{
	if (t->prio != prio)
		place(__weft_vp(), t, prio, to_head);
}
