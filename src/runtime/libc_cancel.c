/*
 * libc_cancel.c — glibc's own cancellation points act on Weft's requests.
 *
 * Owns: glibc's view of cancellation for the UT a VP runs (vp->libc_armed,
 * libc_tp, libc_saved_jb, libc_landing), the count of UTs with a request
 * pending (proc.libc_cancel_pending) and the switch flag it keeps up
 * (vp->libc_cancel).
 *
 * Weft wraps the cancellation points a program calls, but libc calls its
 * own inside itself: printf's write, fopen's open, getaddrinfo's recvfrom.
 * glibc 2.36 makes each of those look at THREAD_SELF's cancelhandling
 * first (LIBC_CANCEL_ASYNC) and, finding CANCELED with nothing else in the
 * way, unwinds the thread: a forced unwind that runs libc's own cleanups
 * (its old-ABI list under %fs), every frame's C++ destructors and cleanup
 * attributes, and longjmps to the thread block's cleanup_jmp_buf once the
 * unwind passes it.  THREAD_SELF is the VP's kernel thread for every UT of
 * the VP (tls.c, tcb_fill), so Weft arms that word only while the UT with
 * a due deferred request runs:
 *   - armed (the UT runs, its request pending, enabled, deferred): the
 *     word has CANCELED; the UT's thread block (its own, or the VP's first
 *     kernel thread's for UTs without one) names as cleanup_jmp_buf the
 *     UT's innermost pthread_cleanup_push buffer, or else the VP's landing:
 *     a jmp_buf that returns to __weft_arch_libc_landing with the stack
 *     pointer at the top of the UT's stack, above every frame it has (for
 *     UT 1 on the process stack, where glibc's own buffer for main points);
 *     the process is marked threaded (__libc_single_threaded, and the
 *     block's header.multiple_threads for older glibcs), as glibc's
 *     pthread_cancel marks a process that cancels itself: libc skips the
 *     look otherwise;
 *   - disarmed (the UT left the VP: any change of cur, __weft_cur_set; or
 *     it is exiting, or disabled its cancellation): the word and the slot
 *     are as before.
 * So another UT of the VP never sees the request.  The unwind then ends:
 *   - in the program's cleanup buffer: its handler runs and calls
 *     __pthread_unwind_next, where Weft sees a UT not yet exiting, puts
 *     glibc's view back (__weft_libc_cancel_unwound) and goes on with its
 *     own unwind as for pthread_exit(PTHREAD_CANCELED) (posix/cleanup.c);
 *   - at the landing: every frame is gone; Weft acts on the request there
 *     (its unwind from the landing ends at once) and the UT exits.
 * glibc sets EXITING in the word as it starts (no second cancel while the
 * handlers run, which may call printf again); both ends clear it.
 *
 * Not armed: the guests (real glibc threads), a UT whose thread block is
 * not yet made, and
 * everything when the thread-block layout was not checked (tls.c).  Those
 * still act at every cancellation point Weft wraps.
 *
 * Invariants: at most one UT per VP is armed, and only while it is that
 * VP's cur (__weft_cur_set disarms first whenever cur changes); the count is
 * the number of UTs with CANCEL_PENDING and without CANCEL_EXITING (the
 * guests' requests aside), and every VP's libc_cancel is count != 0.
 *
 * Async readers: glibc's code on the armed UT's own kernel thread (its
 * cancellation points read the word and the slot).  Writers besides the
 * VP's mainline: the monitor, whose takeover changes cur (so disarms)
 * while the carrier sleeps in the kernel, and under M:N another VP's
 * pthread_cancel, under the runtime lock, for the UT this VP runs
 * (__weft_libc_cancel_eval_running).  The word is changed by atomic RMW
 * only, after the slot.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <sys/single_threaded.h>

/* UT 1's stack pointer in glibc's own cleanup buffer for main (its
 * __libc_start_call_main frame): the top of the frames main runs. */
static uintptr_t main_top;

void __weft_libc_cancel_pending(int by)
{
	uint32_t n = __weft_proc.libc_cancel_pending += (uint32_t)by;
	for (unsigned i = 0; i < __weft_proc.nvps; i++)
		__weft_vps[i].libc_cancel = n != 0;
}

static bool wants(const struct ut *t)
{
	return __weft_cancel_due(t) && !(t->cancel & CANCEL_ASYNC);
}

/* UT 1's: glibc's own buffer for main is in the first kernel thread's
 * block (VP 0's tp0), which may hold the landing of a UT armed there. */
static uintptr_t main_top_find(void)
{
	struct vp *v0 = &__weft_vps[0];
	void **slot = __weft_tls_glibc_cleanup_jmp_buf(v0->tp0);
	if (!slot)
		return 0;
	__pthread_unwind_buf_t *g = v0->libc_armed && v0->libc_tp == v0->tp0 ? v0->libc_saved_jb : *slot;
	return g ? __weft_arch_jmpbuf_sp(g->__cancel_jmp_buf[0].__cancel_jmp_buf) : 0;
}

/* Where the landing returns to for t (0: t is not armed). */
static uintptr_t landing_top(const struct ut *t)
{
	if (t->guest_kt)
		return 0;
	if (t->stack.kind == STACK_PROCESS) {
		if (!main_top)
			main_top = main_top_find();
		return main_top;
	}
	return __weft_tls_stack_floor(t);
}

static void landed(void) __attribute__((noreturn));

/* Arm for t, whose thread block is tp (the one its code runs under). */
static void arm(struct vp *vp, struct ut *t, void *tp)
{
	if (!tp)
		return;
	void **slot = __weft_tls_glibc_cleanup_jmp_buf(tp);
	volatile int *word = __weft_tls_glibc_cancelhandling_of(tp);
	uintptr_t top = landing_top(t);
	if (!slot || !word || !top)
		return;
	__weft_arch_landing_jmpbuf(vp->libc_landing.__cancel_jmp_buf[0].__cancel_jmp_buf, top, landed);
	vp->libc_landing.__cancel_jmp_buf[0].__mask_was_saved = 0;
	vp->libc_armed = t;
	vp->libc_tp = tp;
	vp->libc_saved_jb = *slot;
	*slot = t->cleanup_bufs ? t->cleanup_bufs : (void *)&vp->libc_landing;
	/* glibc skips the look in a single-threaded process: its
	 * pthread_cancel of itself makes the process threaded first */
	__weft_tls_glibc_threaded(tp);
	if (__libc_single_threaded)
		__libc_single_threaded = 0;
	__atomic_or_fetch(word, GLIBC_CANCELED, __ATOMIC_RELAXED);
}

static void disarm_clearing(struct vp *vp, int bits)
{
	if (!vp->libc_armed)
		return;
	void **slot = __weft_tls_glibc_cleanup_jmp_buf(vp->libc_tp);
	volatile int *word = __weft_tls_glibc_cancelhandling_of(vp->libc_tp);
	if (slot)
		*slot = vp->libc_saved_jb;
	if (word)
		__atomic_and_fetch(word, ~bits, __ATOMIC_RELAXED);
	vp->libc_armed = NULL;
	vp->libc_tp = NULL;
}

void __weft_libc_cancel_disarm(struct vp *vp)
{
	disarm_clearing(vp, GLIBC_CANCELED | GLIBC_EXITING);
}

void __weft_libc_cancel_left(struct vp *vp, struct ut *t)
{
	if (vp->libc_armed && vp->libc_armed != t)
		__weft_libc_cancel_disarm(vp);
}

void __weft_libc_cancel_eval(struct vp *vp)
{
	struct ut *cur = vp->cur;
	if (vp->libc_armed && vp->libc_armed != cur)
		__weft_libc_cancel_disarm(vp);
	if (!cur || !wants(cur)) {
		__weft_libc_cancel_disarm(vp);
		return;
	}
	if (!vp->libc_armed)
		arm(vp, cur, __weft_arch_tp_get());
}

void __weft_libc_cancel_eval_running(struct ut *t)
{
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *o = &__weft_vps[i];
		if (o->cur == t && !o->libc_armed && wants(t))
			arm(o, t, t->tp ? t->tp : o->tp0);
	}
}

void __weft_libc_cancel_switch_in(struct vp *vp, struct ut *next)
{
	if (wants(next))
		arm(vp, next, __weft_arch_tp_get());   /* next's block is loaded already */
}

void __weft_libc_cancel_bufs_changed(struct ut *t)
{
	struct vp *vp = __weft_vp();
	if (vp->libc_armed != t)
		return;
	void **slot = __weft_tls_glibc_cleanup_jmp_buf(vp->libc_tp);
	if (slot)
		*slot = t->cleanup_bufs ? t->cleanup_bufs : (void *)&vp->libc_landing;
}

/* glibc left its mark (CANCELTYPE: it was inside a cancellable call when
 * it acted) and EXITING: neither is the VP's any more. */
void __weft_libc_cancel_unwound(struct vp *vp)
{
	disarm_clearing(vp, GLIBC_CANCELED | GLIBC_EXITING | GLIBC_CANCELTYPE);
}

/* Where the landing's jmp_buf leads (arch: __weft_arch_libc_landing). */
static void landed(void)
{
	(void)__weft_enter();             /* from libc's unwinder: Weft's code from here */
	__weft_libc_cancel_unwound(__weft_vp());
	__weft_hooks.cancel_act();        /* its unwind ends at the landing's frame */
}
