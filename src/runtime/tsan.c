/*
 * tsan.c — Weft's side of ThreadSanitizer (the WEFT_TSAN build only:
 * `make build-tsan`, docs/debugging.md "ThreadSanitizer").
 *
 * Owns: each context's TSan fiber (struct ut's tsan_fiber), the fiber
 * switch made at every switch, and the one word through which TSan finds
 * the running fiber in a thread block.
 *
 * The model is Go's race detector: the runtime is not instrumented (its
 * state keeps Weft's own rules, docs/architecture.md), the program is, and
 * the runtime tells TSan (1) which context runs — one fiber per UT, per
 * kernel thread's home and per VP's idle context — and (2) the
 * happens-before edges its objects make (WEFT_HB_* in rt.h, at the
 * exported calls of src/sync and src/posix).  Switches are made with
 * __tsan_switch_to_fiber_no_sync: a switch orders nothing, so two UTs that
 * share a counter without a lock are reported even on one VP, where a
 * preemption between a load and a store loses updates.
 *
 * Invariant: whenever code of the program or of the TSan runtime runs, the
 * `current` word of the TSan block in the thread block %fs points at names
 * the fiber of the context that runs.  Why a word of TSan's and not only
 * __tsan_switch_to_fiber: TSan keeps "the running fiber" in a __thread
 * block of its own (initial-exec, cur_thread_placeholder, whose `current`
 * field the switch writes through %fs), and with per-UT TLS (tls.c) every
 * UT has its own copy of that block, which TSan's switch never sees.  So
 * every change of the thread pointer carries the word into the new block
 * (__weft_tp_set, rt.h), the switch-out names prev in it before TSan reads
 * it, and the switch-in names self again.  The word's place is found at
 * start-up on the first kernel thread, whose block's `current` points at
 * the block itself, and checked by one switch there and back; if it is not
 * found the build dies with one line rather than corrupt TSan's state.
 *
 * Readers: the mainline of each kernel thread, for its own thread block.
 * Signal handlers do not switch fibers (a switch is a mainline act).
 */
#include "rt.h"

#if WEFT_TSAN
#include "../arch/arch.h"

#include <sanitizer/tsan_interface.h>

static struct {
	long cur_off;          /* `current`'s offset from the thread pointer */
	bool ready;
} ts;

static void **cur_word(char *tp)
{
	return (void **)(tp + ts.cur_off);
}

/* Making and ending a fiber take TSan's thread registry lock, which a
 * report holds while it symbolises, and the symboliser calls fcntl, open
 * and read: Weft's wrappers, which take the runtime lock (M:N).  So with
 * several VPs the runtime lock is let go around them, never held while
 * waiting for TSan's.  Callers: spawn (the UT not yet ready) and the
 * switch-in of the UT after an exit (the exited UT's stack already given
 * back), where nothing the lock protects is half-done. */
static void *fiber_make(void)
{
	struct vp *vp = __weft_vp();
	bool held = __weft_mn && vp->in_weft;
	if (held)
		__weft_rtl_unlock();
	void *f = __tsan_create_fiber(0);
	if (held)
		__weft_rtl_lock();
	return f;
}

static void fiber_end(void *f)
{
	struct vp *vp = __weft_vp();
	bool held = __weft_mn && vp->in_weft;
	if (held)
		__weft_rtl_unlock();
	__tsan_destroy_fiber(f);
	if (held)
		__weft_rtl_lock();
}

void __weft_tsan_init(struct ut *main_ut)
{
	char *tp = __weft_arch_tp_get();
	void *self = __tsan_get_current_fiber();
	void **block = self;
	void *probe = NULL;
	/* the first kernel thread's TSan block names itself as current */
	for (unsigned i = 0; i < 512 && !ts.ready; i++) {
		if (block[i] != self)
			continue;
		ts.cur_off = (char *)&block[i] - tp;
		if (!probe)
			probe = __tsan_create_fiber(0);
		__tsan_switch_to_fiber(probe, __tsan_switch_to_fiber_no_sync);
		bool moved = *cur_word(tp) == probe;
		__tsan_switch_to_fiber(self, __tsan_switch_to_fiber_no_sync);
		ts.ready = moved && *cur_word(tp) == self;
	}
	if (probe)
		__tsan_destroy_fiber(probe);
	if (!ts.ready)
		__weft_die("weft: this ThreadSanitizer keeps its running fiber where Weft cannot find it");
	main_ut->tsan_fiber = self;
	main_ut->tsan_borrowed = true;
}

void __weft_tsan_adopt_thread(struct ut *home)
{
	home->tsan_fiber = __tsan_get_current_fiber();
	home->tsan_borrowed = true;
}

void __weft_tsan_tp_carry(void *tp)
{
	if (ts.ready && tp)
		*cur_word(tp) = *cur_word(__weft_arch_tp_get());
}

void __weft_tsan_leave(struct ut *prev, struct ut *next)
{
	char *tp = __weft_arch_tp_get();
	if (!prev->tsan_fiber)
		__weft_die("weft: a context with no ThreadSanitizer fiber switched out");
	*cur_word(tp) = prev->tsan_fiber;
	if (!next->tsan_fiber) {
		next->tsan_fiber = __tsan_create_fiber(0);
		next->tsan_borrowed = false;
	}
	/* Copy-stack UTs (copystack.c) use the same stack addresses in turn,
	 * and the copies that hand those bytes from one to the next are the
	 * runtime's, which TSan does not see: so each one's use of its run
	 * stack is ordered after the last one's, by the run stack itself.
	 * (The price: races between two copy-stack UTs of one run stack on
	 * other memory are hidden too; docs/debugging.md.) */
	if (__weft_is_copy(prev))
		__tsan_release(__weft_cs_hb(prev));
	__tsan_switch_to_fiber(next->tsan_fiber, __tsan_switch_to_fiber_no_sync);
	if (__weft_is_copy(next))
		__tsan_acquire(__weft_cs_hb(next));
}

void __weft_tsan_enter(struct ut *self)
{
	*cur_word(__weft_arch_tp_get()) = self->tsan_fiber;
}

/* A new UT gets its fiber from its creator: TSan orders the creator's
 * past before the fiber's first access, and names the creator's stack in
 * its reports ("created by ... at"). */
void __weft_tsan_created(struct ut *t)
{
	if (t->tsan_fiber && !t->tsan_borrowed)
		fiber_end(t->tsan_fiber);
	t->tsan_fiber = fiber_make();
	t->tsan_borrowed = false;
}

/* t's context is gone (its stack given back): its fiber, if TSan's
 * fiber is Weft's to end, is taken from t (which its slot's next user may
 * have as soon as t is reaped) and ended by __weft_tsan_end after.  Run by
 * the context that runs next, never by t's own. */
void *__weft_tsan_take(struct ut *t)
{
	void *f = t->tsan_borrowed ? NULL : t->tsan_fiber;
	t->tsan_fiber = NULL;
	return f;
}

void __weft_tsan_end(void *fiber)
{
	if (fiber)
		fiber_end(fiber);
}
#endif
