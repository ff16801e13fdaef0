/*
 * cancel.c — pthread_cancel, pthread_setcancelstate, pthread_setcanceltype,
 * pthread_testcancel.
 *
 * Owns: each UT's cancellation bits (ut->cancel, CANCEL_* in rt.h) and the
 * count of armed asynchronous requests (vp->cancel_armed).
 *
 * A request is acted on by unwinding the target's stack exactly as
 * pthread_exit(PTHREAD_CANCELED) does (posix/cleanup.c): cleanup handlers
 * and C++ destructors run, then the UT exits and its joiner collects
 * PTHREAD_CANCELED.  When:
 *   - deferred (the default): at the next cancellation point the target
 *     reaches — pthread_join and its timed forms, pthread_cond_wait and its
 *     timed forms (after relocking the mutex), sem_wait and its timed forms,
 *     the sleeps, pthread_testcancel — or at once if it is parked at one:
 *     pthread_cancel wakes it with ECANCELED (park.c's cancel_point), or,
 *     if it sleeps in the kernel on a process-shared condition or
 *     semaphore, wakes its futex (sync/pfutex.c), and if it is in a
 *     cancellable system call handed off the VP (msgrcv, F_SETLKW, fsync,
 *     ...: runtime/handoff.c), kicks the kernel thread making it, which
 *     ends it with EINTR or does not make it;
 *   - asynchronous: in M:1 the target never runs while pthread_cancel
 *     does, so "asynchronous" means "as soon as it runs": if it is parked
 *     anywhere it is woken with ECANCELED and acts inside __weft_park;
 *     otherwise it is armed (CANCEL_ARMED) and acts where control returns
 *     into it: the epilogue of the Weft call it was in, or of the
 *     preemption trampoline (runtime/epilogue.c);
 *   - disabled: the request stays pending until the state is enabled again.
 * glibc's rules are followed where POSIX leaves room: cancelling an exited
 * (not yet joined) thread succeeds and does nothing; enabling (or switching
 * to asynchronous) with a request pending acts at once only for the
 * asynchronous type; a request is never acted on once the UT is exiting.
 *
 * Invariant: CANCEL_ARMED is set only on a UT whose request is pending,
 * enabled and asynchronous and which is not exiting; VP 0's cancel_armed
 * counts those UTs and every VP's async_cancel is cancel_armed != 0.
 */
#include "posix.h"

/* The count is the process's, kept in VP 0 (M:N: under the runtime lock);
 * every VP's exit hook carries the flag, since an armed UT may run on any
 * of them (its tick's trampoline then acts on it). */
static void async_flag(uint8_t on)
{
	for (unsigned i = 0; i < __weft_proc.nvps; i++)
		__weft_vps[i].async_cancel = on;
}

static void arm(struct vp *vp, struct ut *t)
{
	(void)vp;
	if (t->cancel & CANCEL_ARMED)
		return;
	t->cancel |= CANCEL_ARMED;
	if (__weft_vps[0].cancel_armed++ == 0)
		async_flag(1);
}

static void disarm(struct vp *vp, struct ut *t)
{
	(void)vp;
	if (!(t->cancel & CANCEL_ARMED))
		return;
	t->cancel &= (uint8_t)~CANCEL_ARMED;
	if (--__weft_vps[0].cancel_armed == 0)
		async_flag(0);
}

void __weft_cancel_exiting(struct ut *self)
{
	struct vp *vp = __weft_vp();
	disarm(vp, self);
	if ((self->cancel & (CANCEL_PENDING | CANCEL_EXITING)) == CANCEL_PENDING && !self->guest_kt)
		__weft_libc_cancel_pending(-1);
	self->cancel |= CANCEL_EXITING;
	if (vp->libc_armed == self)
		__weft_libc_cancel_disarm(vp);
}

void __weft_cancel_act(void)
{
	struct ut *self = __weft_self();
	__weft_cancel_exiting(self);
	__weft_unwind_exit(PTHREAD_CANCELED);
}

void __weft_cancel_async_point(void)
{
	if (__weft_self()->cancel & CANCEL_ARMED)
		__weft_cancel_act();
}

static inline bool async_due(const struct ut *t)
{
	return __weft_cancel_due(t) && (t->cancel & CANCEL_ASYNC);
}

/* Another UT's request: wake it if it waits where the request counts. */
static void cancel_other(struct vp *vp, struct ut *t)
{
	if (!__weft_cancel_due(t))
		return;                        /* disabled: kept pending */
	bool async = t->cancel & CANCEL_ASYNC;
	if (async)
		arm(vp, t);
	/* In a cancellable system call (runtime/handoff.c: msgrcv, F_SETLKW,
	 * ...; on or off the VP): its kernel thread is kicked, the call ends
	 * with EINTR or is not made, and the UT acts.  The request was
	 * published (seq_cst) before the tid is read. */
	pid_t tid = __atomic_load_n(&t->csys_tid, __ATOMIC_SEQ_CST);
	if (tid) {
		__weft_preempt_cancel_kick(tid);
		return;
	}
	/* Taken off the VP by the monitor in code Weft did not wrap: in one of
	 * libc's own cancellable calls (glibc's mark is up), the kick ends it
	 * and the UT acts when back (runtime/preempt.c, away_cancel); the
	 * monitor repeats it while the mark is up and the UT away. */
	if (t->away) {
		struct kt *k = __weft_kt_away_with(t);
		if (k && __weft_tls_glibc_marked(t->tp))
			__weft_preempt_cancel_kick(k->tid);
		return;
	}
	if (t->state == UT_RUNNING)
		__weft_libc_cancel_eval_running(t);   /* M:N: on another VP */
	if (t->state != UT_BLOCKED)
		return;
	/* Off the VP in the kernel: a process-shared condition or semaphore
	 * wait is woken to see the request (sync/pfutex.c). */
	if (t->wait_kind == WAIT_SYSCALL) {
		__weft_pfutex_cancel_kick(t);
		return;
	}
	/* A waiter for a PRIO_INHERIT mutex takes back what it lent. */
	if (t->cancel_point == CP_WAITING || (async && t->cancel_point == CP_NONE))
		__weft_sync_unpark(t, ECANCELED);
}

EXPORT int pthread_cancel(pthread_t th)
{
	__weft_ensure();
	WEFT_CALL();
	struct vp *vp = __weft_vp();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	/* Exited or exiting: its outcome is decided (glibc returns 0 too). */
	if (t->state == UT_ZOMBIE || t->state == UT_EXITING || (t->cancel & CANCEL_EXITING))
		return 0;
	/* A second request changes nothing (the first decided everything). */
	if (t->cancel & CANCEL_PENDING)
		return 0;
	/* seq_cst: seen by a cancellable call's look at the bits, or else
	 * its tid is seen here (cancel_other) */
	__atomic_or_fetch(&t->cancel, CANCEL_PENDING, __ATOMIC_SEQ_CST);
	if (!t->guest_kt)
		__weft_libc_cancel_pending(1);
	if (t == vp->cur) {
		if (async_due(t))
			__weft_cancel_act();
		__weft_libc_cancel_eval(vp);   /* libc's own cancellation points */
		return 0;
	}
	cancel_other(vp, t);
	return 0;
}

EXPORT int pthread_setcancelstate(int state, int *old)
{
	if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE)
		return EINVAL;
	__weft_ensure();
	struct ut *self = __weft_self();
	if (old)
		*old = (self->cancel & CANCEL_DISABLED) ? PTHREAD_CANCEL_DISABLE : PTHREAD_CANCEL_ENABLE;
	if (state == PTHREAD_CANCEL_DISABLE) {
		self->cancel |= CANCEL_DISABLED;
		disarm(__weft_vp(), self);
		__weft_libc_cancel_eval(__weft_vp());
		return 0;
	}
	self->cancel &= (uint8_t)~CANCEL_DISABLED;
	if (async_due(self))
		__weft_cancel_act();
	__weft_libc_cancel_eval(__weft_vp());
	return 0;
}

EXPORT int pthread_setcanceltype(int type, int *old)
{
	if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	__weft_ensure();
	struct ut *self = __weft_self();
	if (old)
		*old = (self->cancel & CANCEL_ASYNC) ? PTHREAD_CANCEL_ASYNCHRONOUS : PTHREAD_CANCEL_DEFERRED;
	if (type == PTHREAD_CANCEL_DEFERRED) {
		self->cancel &= (uint8_t)~CANCEL_ASYNC;
		disarm(__weft_vp(), self);
		__weft_libc_cancel_eval(__weft_vp());
		return 0;
	}
	self->cancel |= CANCEL_ASYNC;
	if (async_due(self))
		__weft_cancel_act();
	__weft_libc_cancel_eval(__weft_vp());
	return 0;
}

EXPORT void pthread_testcancel(void)
{
	__weft_ensure();
	WEFT_CALL();
	__weft_testcancel();
}
