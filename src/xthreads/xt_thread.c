/*
 * xt_thread.c — Xthreads' thread calls: xthread_create, xthread_destroy,
 * xthread_exit, xthread_yield, xthread_self, xthread_ping, and the
 * priority extensions xthread_getprio, xthread_chprio, xthread_attr_init.
 *
 * An xthread is a detached UT at SCHED_FIFO priority 1..99 (Xinu's "the
 * highest priority ready thread runs; equal priorities first-come,
 * first-served; the running thread runs until it ends or is suspended").
 * Its start routine binds its slot, turns asynchronous cancellation on and
 * calls the function with its word arguments; the slot is freed as the
 * start routine's frame is left, however it is left.  Destroying it cancels it
 * (it unwinds wherever it is parked or stopped, running none of its code)
 * and then lets it run at once, just above the destroyer, so that when
 * xthread_destroy returns it has ended and its slot is free.
 * Invariant: a slot is ALIVE only once its UT's handle is stored in it.
 */
#include "xt.h"

#include <stdarg.h>
#include <string.h>
#include <weft.h>

typedef void (*xt_fn16)(long, long, long, long, long, long, long, long, long, long, long, long,
			long, long, long, long);

static void *xt_start(void *p)
{
	/* freed when this frame is left: by return, or unwound by
	 * xthread_exit or xthread_destroy (this file has -fexceptions) */
	struct xt_slot *s __attribute__((cleanup(xt_frame_ends))) = p;
	s->pt = pthread_self();
	if (s->state == XT_STARTING)
		s->state = XT_ALIVE;
	if (!xt_slot_bind(s, false))
		return NULL;                      /* no memory: end unseen */
	if (s->name[0])
		pthread_setname_np(s->pt, s->name);
	/* a destroy that came before we ran acts here */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	const long *a = s->args;
	/* Extra arguments are harmless in the x86-64 calling convention: the
	 * caller pushes and pops them, the callee reads the ones it declares. */
	((xt_fn16)s->func)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
			   a[11], a[12], a[13], a[14], a[15]);
	return NULL;
}

/* pthread attributes for a thread that asks for more than the defaults. */
static int attr_from(pthread_attr_t *pa, const xthread_attr_t *xa, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	if (pthread_attr_init(pa) != 0)
		return -1;
	int r = pthread_attr_setdetachstate(pa, PTHREAD_CREATE_DETACHED) ||
		pthread_attr_setinheritsched(pa, PTHREAD_EXPLICIT_SCHED) ||
		pthread_attr_setschedpolicy(pa, SCHED_FIFO) || pthread_attr_setschedparam(pa, &sp);
	if (!r && xa->stackaddr)
		r = pthread_attr_setstack(pa, xa->stackaddr, xa->stacksize);
	else if (!r && xa->stacksize)
		r = pthread_attr_setstacksize(pa, xa->stacksize);
	if (r) {
		pthread_attr_destroy(pa);
		return -1;
	}
	return 0;
}

XT_API XTCALL (xthread_create)(xthread_t *xptr, const xthread_attr_t *attrp, xthread_func_t func,
			      int narg, ...)
{
	if (!func || narg < 0 || narg > XTHREAD_MAXARGS)
		return XTERR;
	int prio = XTHREAD_DEFAULT_PRIO;
	bool plain = true;
	if (attrp) {
		if (attrp->prio && !xt_prio_ok(attrp->prio))
			return XTERR;
		if (attrp->stackaddr && !attrp->stacksize)
			return XTERR;
		if (attrp->prio)
			prio = attrp->prio;
		plain = prio == XTHREAD_DEFAULT_PRIO && !attrp->stacksize && !attrp->stackaddr;
	}
	if (!xt_current())
		return XTERR;
	pthread_attr_t own;
	const pthread_attr_t *pa = plain ? xt_default_attr() : &own;
	if (!plain && attr_from(&own, attrp, prio) != 0)
		return XTERR;

	int old = xt_lock();
	struct xt_slot *s = xt_slot_alloc();
	xt_unlock(old);
	if (!s) {
		if (!plain)
			pthread_attr_destroy(&own);
		return XTERR;
	}
	va_list ap;
	va_start(ap, narg);
	for (int i = 0; i < XTHREAD_MAXARGS; i++)
		s->args[i] = i < narg ? va_arg(ap, long) : 0;
	va_end(ap);
	s->func = func;
	s->narg = (uint8_t)narg;
	if (attrp && attrp->name) {
		strncpy(s->name, attrp->name, sizeof s->name - 1);
		s->name[sizeof s->name - 1] = 0;
	}
	uint32_t gen = s->gen;
	/* the handle is the program's before the thread can run (it may
	 * outrank us and run inside pthread_create) */
	if (xptr)
		*xptr = xt_handle(s);
	pthread_t pt;
	int e = pthread_create(&pt, pa, xt_start, s);
	if (!plain)
		pthread_attr_destroy(&own);
	if (e) {
		old = xt_lock();
		xt_slot_free(s);
		xt_unlock(old);
		if (xptr)
			*xptr = NULL;
		return XTERR;
	}
	/* Unless it has run already (and perhaps ended, the slot reused). */
	if (s->gen == gen && s->state == XT_STARTING) {
		s->pt = pt;
		s->state = XT_ALIVE;
	}
	return XTOK;
}

XT_API XTCALL xthread_exit(void)
{
	pthread_exit(NULL);
}

/* Thread pt has been cancelled: let it run now, just above us, so that it
 * unwinds and ends before we go on (we head our priority again after it).
 * If it cannot end yet (it disabled cancellation), it gets its own
 * priority back. */
static void hurry(pthread_t pt)
{
	int mypol, tpol;
	struct sched_param me, t;
	if (pthread_getschedparam(pthread_self(), &mypol, &me) != 0 ||
	    pthread_getschedparam(pt, &tpol, &t) != 0)
		return;
	if (t.sched_priority > me.sched_priority)
		return;                       /* it outranks us: ran already if it could */
	if (me.sched_priority >= XTHREAD_MAX_PRIO) {
		weft_yield_to(pt);
		return;
	}
	struct sched_param up = { .sched_priority = me.sched_priority + 1 };
	if (pthread_setschedparam(pt, SCHED_FIFO, &up) == 0 && weft_ping(pt) == 0)
		pthread_setschedparam(pt, tpol, &t);
}

XT_API XTCALL xthread_destroy(xthread_t xptr)
{
	struct xt_slot *me = xt_current();
	struct xt_slot *s = xt_lookup(xptr);
	if (!me || !s)
		return XTERR;
	if (s == me)
		xthread_exit();
	s->state = XT_DYING;
	pthread_t pt = s->pt;
	if (pthread_cancel(pt) != 0) {
		/* its UT is gone without its slot: give the slot back */
		int old = xt_lock();
		if (s->state == XT_DYING)
			xt_slot_free(s);
		xt_unlock(old);
		return XTOK;
	}
	hurry(pt);
	return XTOK;
}

XT_API XTCALL xthread_yield(xthread_t xptr)
{
	if (!xt_current())
		return XTERR;
	struct xt_slot *s = xt_lookup(xptr);
	if (!s)
		return XTERR;
	return weft_yield_to(s->pt) == 0 ? XTOK : XTERR;
}

XT_API XTCALL xthread_self(xthread_t *xptr)
{
	if (!xptr)
		return XTERR;
	struct xt_slot *me = xt_current();
	if (!me)
		return XTERR;
	*xptr = xt_handle(me);
	return XTOK;
}

XT_API XTCALL xthread_ping(xthread_t xptr)
{
	struct xt_slot *s = xt_lookup(xptr);
	return s && weft_ping(s->pt) == 0 ? XTOK : XTERR;
}

XT_API XTCALL xthread_getprio(xthread_t xptr)
{
	struct xt_slot *s = xt_lookup(xptr);
	int policy;
	struct sched_param sp;
	if (!s || pthread_getschedparam(s->pt, &policy, &sp) != 0)
		return XTERR;
	return sp.sched_priority;
}

XT_API XTCALL xthread_chprio(xthread_t xptr, int prio)
{
	if (!xt_prio_ok(prio) || !xt_current())
		return XTERR;
	XTCALL old = xthread_getprio(xptr);
	struct xt_slot *s = xt_lookup(xptr);
	struct sched_param sp = { .sched_priority = prio };
	if (old == XTERR || !s || pthread_setschedparam(s->pt, SCHED_FIFO, &sp) != 0)
		return XTERR;
	return old;
}

XT_API XTCALL xthread_attr_init(xthread_attr_t *attrp)
{
	if (!attrp)
		return XTERR;
	*attrp = (xthread_attr_t)XTHREAD_ATTR_INITIALIZER;
	return XTOK;
}
