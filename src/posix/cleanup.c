/*
 * cleanup.c — cleanup handlers and the unwinding pthread_exit.
 *
 * Owns: the cleanup-handler ABI that glibc's <pthread.h> macros compile
 * into programs, and the forced unwind that runs those handlers and C++
 * destructors when a UT calls pthread_exit.
 *
 *  - pthread_cleanup_push/pop in C (without -fexceptions) expand to a
 *    __pthread_unwind_buf_t on the caller's stack, filled by __sigsetjmp,
 *    linked with __pthread_register_cancel and unlinked with
 *    __pthread_unregister_cancel.  When the thread exits, control returns
 *    into that setjmp a second time; the macro then runs the handler and
 *    calls __pthread_unwind_next, which goes on to the next buffer out.
 *  - _pthread_cleanup_push/pop (and _defer forms) are the older ABI: a
 *    struct _pthread_cleanup_buffer list whose handlers we call ourselves.
 *  - C++ (and C with -fexceptions) handlers are destructors / cleanup
 *    attributes; they run because the exit is a forced unwind.
 *
 * Exit: pthread_exit starts _Unwind_ForcedUnwind (from libgcc_s, looked up
 * at first use as glibc does) with a stop function that, frame by frame,
 * calls the old-ABI handlers whose frames are left and longjmps into the
 * innermost registered buffer once the unwind reaches the frame holding
 * it.  The unwind ends at __weft_entry, whose return address is undefined
 * (_UA_END_OF_STACK), or at _start for main; the UT then finishes exiting.
 *
 * Invariants: ut->cleanup_bufs lists the registered buffers innermost
 * first (each buffer's __pad[0] is the next one out, __pad[1] the old-ABI
 * list head when it was pushed); ut->cleanup_old lists the old-ABI buffers
 * innermost first.  Both lists hold only frames still on the UT's stack;
 * a buffer lies inside the frame that pushed it, so "frame left" is
 * "the frame's CFA is above the buffer's address".
 */
#include "posix.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unwind.h>

typedef _Unwind_Reason_Code (*forced_unwind_fn)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
typedef _Unwind_Word (*get_cfa_fn)(struct _Unwind_Context *);

static forced_unwind_fn forced_unwind;
static get_cfa_fn get_cfa;

#define BUF_PREV(b) ((b)->__pad[0])
#define BUF_OLD(b) ((b)->__pad[1])

/* ---- the new ABI: __pthread_unwind_buf_t ---- */

EXPORT void __pthread_register_cancel(__pthread_unwind_buf_t *buf)
{
	__weft_ensure();
	if (!buf)
		return;
	struct ut *self = __weft_self();
	BUF_PREV(buf) = self->cleanup_bufs;
	BUF_OLD(buf) = self->cleanup_old;
	self->cleanup_bufs = buf;
	__weft_libc_cancel_bufs_changed(self);
}

EXPORT void __pthread_unregister_cancel(__pthread_unwind_buf_t *buf)
{
	__weft_ensure();
	if (!buf)
		return;
	struct ut *self = __weft_self();
	if (self->cleanup_bufs == buf) {
		self->cleanup_bufs = BUF_PREV(buf);
		__weft_libc_cancel_bufs_changed(self);
	}
}

/* ---- the old ABI: struct _pthread_cleanup_buffer ---- */

/* glibc's header no longer declares these; old binaries still call them. */
void _pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute);
void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute);

EXPORT void _pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg)
{
	__weft_ensure();
	if (!b)
		return;
	struct ut *self = __weft_self();
	b->__routine = routine;
	b->__arg = arg;
	b->__canceltype = PTHREAD_CANCEL_DEFERRED;
	b->__prev = self->cleanup_old;
	self->cleanup_old = b;
}

/* Take b off the caller's old-ABI list: false for a NULL buffer. */
static bool unlink_old(struct _pthread_cleanup_buffer *b)
{
	__weft_ensure();
	if (!b)
		return false;
	struct ut *self = __weft_self();
	if (self->cleanup_old == b)
		self->cleanup_old = b->__prev;
	return true;
}

EXPORT void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute)
{
	if (!unlink_old(b))
		return;
	if (execute && b->__routine)
		b->__routine(b->__arg);
}

/* The _defer forms also switch the cancel type to deferred and back; a
 * request pending when asynchronous comes back is acted on at once (as
 * glibc), before the handler the pop would run. */
EXPORT void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg)
{
	int old = PTHREAD_CANCEL_DEFERRED;
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
	_pthread_cleanup_push(b, routine, arg);
	if (b)
		b->__canceltype = old;
}

EXPORT void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute)
{
	if (!unlink_old(b))
		return;
	if (b->__canceltype == PTHREAD_CANCEL_ASYNCHRONOUS)
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	if (execute && b->__routine)
		b->__routine(b->__arg);
}

/* Run old-ABI handlers innermost first down to (not including) `stop`, or
 * only those whose frame is gone (buffer below `cfa`) when cfa != 0. */
static void run_old_handlers(struct ut *self, void *stop, uintptr_t cfa)
{
	struct _pthread_cleanup_buffer *b = self->cleanup_old;
	while (b && (void *)b != stop && (cfa == 0 || (uintptr_t)b < cfa)) {
		self->cleanup_old = b->__prev;
		if (b->__routine) {
			__weft_outcall_begin(__weft_vp());
			b->__routine(b->__arg);
			__weft_outcall_end();
		}
		b = self->cleanup_old;
	}
}

/* ---- the unwinding exit ---- */

static void finish_exit(struct ut *self) __attribute__((noreturn));
static void finish_exit(struct ut *self)
{
	run_old_handlers(self, NULL, 0);
	self->cleanup_bufs = NULL;
	free(self->unwind_exc);
	self->unwind_exc = NULL;
	__weft_ut_exit(self->retval);
}

/* Re-enter the pthread_cleanup_push of `buf`: it runs its handler and
 * calls __pthread_unwind_next. */
static void jump_into(struct ut *self, __pthread_unwind_buf_t *buf) __attribute__((noreturn));
static void jump_into(struct ut *self, __pthread_unwind_buf_t *buf)
{
	run_old_handlers(self, BUF_OLD(buf), 0);
	self->cleanup_bufs = BUF_PREV(buf);
	/* The buffer holds only the jmp_buf and mask flag that __sigsetjmp
	 * filled (no saved mask), which is all siglongjmp reads here; GCC
	 * sizes sigjmp_buf with the mask and would warn. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
	siglongjmp((struct __jmp_buf_tag *)(void *)buf->__cancel_jmp_buf, 1);
#pragma GCC diagnostic pop
}

static _Unwind_Reason_Code exit_stop(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
				     struct _Unwind_Exception *exc, struct _Unwind_Context *ctx, void *param)
{
	struct ut *self = __weft_self();
	__pthread_unwind_buf_t *buf = self->cleanup_bufs;
	if (actions & _UA_END_OF_STACK) {
		if (buf)
			jump_into(self, buf);
		finish_exit(self);
	}
	uintptr_t cfa = (uintptr_t)get_cfa(ctx);
	if (buf && cfa > (uintptr_t)buf)
		jump_into(self, buf);
	run_old_handlers(self, buf ? BUF_OLD(buf) : NULL, cfa);
	return _URC_NO_REASON;
}

/* A catch (...) that swallows the exit instead of rethrowing it. */
static void exit_not_rethrown(_Unwind_Reason_Code reason, struct _Unwind_Exception *exc)
{
	__weft_die("thread %llu: pthread_exit's unwind was caught and not rethrown",
		   (unsigned long long)__weft_self()->id);
}

static bool unwinder_ready(void)
{
	if (forced_unwind && get_cfa)
		return true;
	void *h = NULL;
	void *fu = dlsym(RTLD_DEFAULT, "_Unwind_ForcedUnwind");
	void *gc = dlsym(RTLD_DEFAULT, "_Unwind_GetCFA");
	if (!fu || !gc) {
		h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL);
		if (!h)
			return false;
		fu = dlsym(h, "_Unwind_ForcedUnwind");
		gc = dlsym(h, "_Unwind_GetCFA");
		if (!fu || !gc)
			return false;
	}
	get_cfa = (get_cfa_fn)gc;
	forced_unwind = (forced_unwind_fn)fu;
	return true;
}

/* Unwind the calling UT's stack from here; never returns. */
static void unwind_from_here(struct ut *self) __attribute__((noreturn));
static void unwind_from_here(struct ut *self)
{
	if (!self->unwind_exc)
		self->unwind_exc = aligned_alloc(16, sizeof(struct _Unwind_Exception));
	struct _Unwind_Exception *exc = self->unwind_exc;
	if (exc && unwinder_ready()) {
		exc->exception_class = 0;
		exc->exception_cleanup = exit_not_rethrown;
		forced_unwind(exc, exit_stop, NULL);
	}
	/* No unwinder or no memory: the C handlers still run, by jumping
	 * from buffer to buffer; C++ destructors do not. */
	if (self->cleanup_bufs)
		jump_into(self, self->cleanup_bufs);
	finish_exit(self);
}

void __weft_unwind_exit(void *retval)
{
	struct ut *self = __weft_self();
	__weft_cancel_exiting(self);
	/* Free the pthread_once controls now: their frames are on the stack
	 * the handlers are about to reuse. */
	if (self->once_frames)
		__weft_once_abandon(self);
	self->retval = retval;
	unwind_from_here(self);
}

EXPORT void __pthread_unwind_next(__pthread_unwind_buf_t *buf)
{
	__weft_ensure();
	struct ut *self = __weft_self();
	if (!(self->cancel & CANCEL_EXITING)) {
		/* glibc's own cancellation, from a cancellation point inside
		 * libc, unwound into buf (runtime/libc_cancel.c), whose handler
		 * has run: from here it is Weft's exit with PTHREAD_CANCELED.
		 * Entered from the program's code: the runtime's state is
		 * changed as in any Weft call (M:N: under the runtime lock),
		 * and the unwind runs the program's handlers outside it. */
		(void)__weft_enter();
		__weft_libc_cancel_unwound(__weft_vp());
		if (self->cleanup_bufs == buf)
			self->cleanup_bufs = BUF_PREV(buf);
		__weft_cancel_exiting(self);
		if (self->once_frames)
			__weft_once_abandon(self);
		self->retval = PTHREAD_CANCELED;
		__weft_outcall_begin(__weft_vp());
	}
	unwind_from_here(self);
}
