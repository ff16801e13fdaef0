/*
 * pthread_sched.c — POSIX scheduling calls on UTs: policies, priorities,
 * sched_yield and the priority ranges.
 *
 * These change only the UT's place in Weft's ready queues; the kernel thread
 * under the VP keeps its own policy.  User-level priorities need no
 * privilege, so SCHED_FIFO/RR never fail with EPERM here.
 *
 * A UT that holds a PRIO_INHERIT or PRIO_PROTECT mutex runs at the highest
 * of its own priority and what its mutexes lend it (sync/prio.c).  Changing
 * its own priority then changes the base only; it moves only if the
 * priority it runs at changes, and is never sent to the tail of its level
 * when that priority stays (XSH 2.9.4).  A UT parked on a PRIO_INHERIT
 * mutex lends its new priority to the owner at once.
 */
#include "attr.h"
#include "posix.h"
#include "../arch/arch.h"
#include "weft.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <string.h>

EXPORT int sched_get_priority_max(int policy)
{
	switch (policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		return WEFT_PRIO_MAX;
	case SCHED_OTHER:
	case SCHED_BATCH:
	case SCHED_IDLE:
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

EXPORT int sched_get_priority_min(int policy)
{
	switch (policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		return 1;
	case SCHED_OTHER:
	case SCHED_BATCH:
	case SCHED_IDLE:
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

EXPORT WEFT_HOT_ENTRY int sched_yield(void)
{
	/* M:1: the entry's tests once, not once per layer.  (A sanitizer
	 * runtime's own calls come not here: runtime/san_text.c.) */
	struct vp *vp = __weft_m1_enter();
	if (likely(vp)) {
		__weft_yield_on(vp);
		WEFT_M1_LEAVE(vp, EXIT_OTHER);
		return 0;
	}
	WEFT_CALL();
	if (WEFT_CALL_PLAIN())
		return (int)__weft_raw_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	__weft_ensure();
	__weft_yield();
	return 0;
}

/* glibc's header redirects pthread_yield to sched_yield, but old binaries
 * still import the name, so export it under its own assembler name. */
EXPORT int weft_pthread_yield_alias(void) __asm__("pthread_yield");
EXPORT int weft_pthread_yield_alias(void)
{
	WEFT_CALL();
	if (WEFT_CALL_PLAIN())
		return (int)__weft_raw_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	__weft_ensure();
	__weft_yield();
	return 0;
}

/* Give t its new policy and base priority.  `setprio`: as
 * pthread_setschedprio (XSH 2.8.4's placement rules), else as
 * pthread_setschedparam. */
static void set_sched(struct ut *t, int policy, int prio, bool setprio)
{
	if (__weft_prio_holds(t)) {
		/* The assigned parameters are the posix layer's to set; the
		 * runtime only places the UT, by the priority it runs at. */
		t->policy = (uint8_t)policy;
		t->base_prio = (uint8_t)prio;
		__weft_prio_recompute(t);
	} else {
		__weft_set_sched(t, policy, prio, setprio);
	}
	__weft_prio_waiting_changed(t);
	__weft_preempt_check();
}

EXPORT int pthread_setschedparam(pthread_t th, int policy, const struct sched_param *p)
{
	__weft_ensure();
	WEFT_CALL();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	if (!p || !__weft_prio_valid(policy, p->sched_priority))
		return EINVAL;
	if (t->state == UT_ZOMBIE)
		return 0;
	set_sched(t, policy, p->sched_priority, false);
	return 0;
}

EXPORT int pthread_getschedparam(pthread_t th, int *policy, struct sched_param *p)
{
	__weft_ensure();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	if (!policy || !p)
		return EINVAL;
	*policy = t->policy;
	memset(p, 0, sizeof *p);
	p->sched_priority = t->base_prio;
	return 0;
}

EXPORT int pthread_setschedprio(pthread_t th, int prio)
{
	__weft_ensure();
	WEFT_CALL();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	if (!__weft_prio_valid(t->policy, prio))
		return EINVAL;
	if (t->state == UT_ZOMBIE)
		return 0;
	/* POSIX: a thread whose priority is lowered this way heads its new list */
	set_sched(t, t->policy, prio, true);
	return 0;
}

/* The RR interval of this process's UTs is Weft's time slice (0 when time
 * slicing is off); other processes are asked of the kernel. */
EXPORT int sched_rr_get_interval(pid_t pid, struct timespec *tp)
{
	__weft_ensure();
	if (pid < 0) {
		errno = EINVAL;
		return -1;
	}
	if (pid != 0 && pid != getpid()) {
		long r = __weft_raw_syscall6(SYS_sched_rr_get_interval, pid, (long)tp, 0, 0, 0, 0);
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		return 0;
	}
	if (!tp) {
		errno = EFAULT;
		return -1;
	}
	uint64_t ns = weft_timeslice_get();
	tp->tv_sec = (time_t)(ns / 1000000000u);
	tp->tv_nsec = (long)(ns % 1000000000u);
	return 0;
}

/* ---- the process's scheduling calls: sched_setscheduler and its kin ----
 * Linux applies these to one kernel thread (pid 0: the caller; a tid: that
 * thread), and programs written for NPTL rely on it: a thread that makes
 * itself SCHED_FIFO, a test that reads its boosted priority back by tid.
 * Weft's threads are user threads of process contention scope, all on the
 * VP's kernel thread, so a call that names the caller — 0, or the tid of
 * the kernel thread it runs on (gettid()) — acts on the calling UT's Weft
 * scheduling, as pthread_setschedparam(pthread_self()) would, and reads
 * back the priority it runs at (a protocol's boost included, as the kernel
 * reports a boosted NPTL thread); getpid() names the main thread, as on
 * Linux.  No privilege is needed.  The kernel's scheduling of the
 * process's kernel threads is left alone (chrt on the process changes it);
 * other pids, and policies Weft does not schedule (SCHED_BATCH, SCHED_IDLE,
 * SCHED_DEADLINE), go to the kernel. */

struct find_main {
	struct ut *t;
};

static void find_main_one(struct ut *t, void *ctx)
{
	struct find_main *f = ctx;
	if (t->id == 1 && t->state != UT_ZOMBIE && t->state != UT_FREE)
		f->t = t;
}

/* The UT a pid names, or NULL for the kernel's. */
static struct ut *named_ut(pid_t pid)
{
	struct ut *self = __weft_self();
	if (pid == 0 || pid == __weft_vp()->tid)
		return self;
	if (pid == getpid()) {
		if (self->id == 1)
			return self;
		struct find_main f = { NULL };
		__weft_ut_foreach(find_main_one, &f);
		return f.t;
	}
	return NULL;
}

static bool weft_policy(int policy)
{
	return policy == SCHED_OTHER || policy == SCHED_FIFO || policy == SCHED_RR;
}

/* syscall(SYS_sched_*) and the named calls share this: -errno or the
 * result; *handled false when the kernel is to answer. */
long __weft_sched_call(long nr, long a1, long a2, long a3, bool *handled)
{
	__weft_ensure();
	*handled = false;
	if (a1 < 0)
		return -EINVAL;
	struct ut *t = named_ut((pid_t)a1);
	if (!t)
		return 0;
	struct sched_param *p = (struct sched_param *)a2;
	switch (nr) {
	case SYS_sched_getscheduler:
		*handled = true;
		return t->policy;
	case SYS_sched_getparam:
		*handled = true;
		if (!p)
			return -EINVAL;
		memset(p, 0, sizeof *p);
		p->sched_priority = t->prio;
		return 0;
	case SYS_sched_setparam:
		*handled = true;
		if (!p || !__weft_prio_valid(t->policy, p->sched_priority))
			return -EINVAL;
		set_sched(t, t->policy, p->sched_priority, false);
		return 0;
	case SYS_sched_setscheduler: {
		int policy = (int)a2 & ~SCHED_RESET_ON_FORK;
		p = (struct sched_param *)a3;
		if (!weft_policy(policy))
			return 0;                     /* the kernel's, for the kernel thread */
		*handled = true;
		if (!p || !__weft_prio_valid(policy, p->sched_priority))
			return -EINVAL;
		set_sched(t, policy, p->sched_priority, false);
		return 0;
	}
	default:
		return 0;
	}
}

static int sched_result(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

static int sched_named(long nr, long a1, long a2, long a3)
{
	bool handled;
	long r = __weft_sched_call(nr, a1, a2, a3, &handled);
	if (!handled && r == 0)
		r = __weft_raw_syscall6(nr, a1, a2, a3, 0, 0, 0);
	return sched_result(r);
}

EXPORT int sched_getscheduler(pid_t pid)
{
	WEFT_CALL();
	return sched_named(SYS_sched_getscheduler, pid, 0, 0);
}

EXPORT int sched_getparam(pid_t pid, struct sched_param *p)
{
	WEFT_CALL();
	return sched_named(SYS_sched_getparam, pid, (long)p, 0);
}

EXPORT int sched_setparam(pid_t pid, const struct sched_param *p)
{
	WEFT_CALL();
	return sched_named(SYS_sched_setparam, pid, (long)p, 0);
}

EXPORT int sched_setscheduler(pid_t pid, int policy, const struct sched_param *p)
{
	WEFT_CALL();
	return sched_named(SYS_sched_setscheduler, pid, policy, (long)p);
}
