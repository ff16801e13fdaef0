/*
 * prio.c — the mutex priority protocols, PTHREAD_PRIO_INHERIT and
 * PTHREAD_PRIO_PROTECT (Mueller 1993, "Priority Inversion: Inheritance and
 * Ceilings", Tables 3 and 4; XSH 2.9.4 and pthread_mutexattr_setprotocol).
 *
 * Owns: a UT's effective priority (ut->prio) while it differs from its base
 * priority (ut->base_prio) because of a mutex.  The state it is computed
 * from lives where it belongs and nowhere else:
 *   - per UT: its held list (robust.c: every robust or protocol mutex it
 *     owns, threaded through the mutexes' own __list words) and its base
 *     priority (pthread_setschedparam's);
 *   - per mutex: its protocol and ceiling (the kind word) and its queue of
 *     waiters, highest priority first, so the top waiter is the head.
 * Invariant, whenever no Weft call is running:
 *     t->prio == max(t->base_prio,
 *                    the ceiling of every PRIO_PROTECT mutex t holds,
 *                    the priority of the top waiter of every PRIO_INHERIT
 *                    mutex t holds)
 * for every live UT, with one exception: a waiter whose deadline passed is
 * taken off the queue by the runtime's timer, and its share of the owner's
 * priority is taken back when it runs again (the runtime has no hook for a
 * timeout; that is also when Linux takes it back).
 *
 * One rule for both protocols: the priority is recomputed by a linear
 * search of the held list whenever it can fall (Mueller's Table 3 for
 * inheritance); a rise needs no search, and a release that cannot have
 * lowered the priority (the mutex lent less than the UT runs at) skips it,
 * so an uncontended lock and unlock never search.  Ceilings are not kept as a stack (SRP): with the two
 * protocols nested, popping the stack at the unlock of the ceiling mutex
 * would drop a priority still inherited through the other one (Table 4,
 * step 4), and an unlock out of LIFO order would pop the wrong level.  The
 * list holds the mutexes a UT owns at once, usually one or two.
 *
 * Inheritance is transitive: an owner that itself waits on a PRIO_INHERIT
 * mutex is moved in that queue by its new priority, and that mutex's owner
 * is recomputed, and so on up the chain.  A chain of deadlocked owners is a
 * cycle; the walk stops after CHAIN_MAX steps.
 *
 * Where a UT goes when its priority changes: a boost puts it at the tail of
 * its new level, the end of a boost at the head of its level.  That is
 * pthread_setschedprio's rule (XSH 2.8.4) and Mueller's argument: a boost
 * is not the thread's choice, so its end must neither penalise it nor let
 * another thread of its base priority run in its place.  The running UT is
 * only renumbered; the caller then calls __weft_preempt_check, which puts
 * it at the head of its level if a better UT is ready.
 *
 * M:N: every value read here is a mutex's kind and queue or a UT's held
 * list and priorities, so each step of a walk can be made under the
 * mutex's own queue lock (bit 0 of its queue head) and then the UT's
 * scheduling lock, in the written order (runtime/lockorder.h), dropping
 * both before the next step as Linux's rt_mutex chain walk does.
 */
#include "sync.h"

/* Longest chain of owners walked (Linux's max_lock_depth is 1024 too). */
#define CHAIN_MAX 1024

static inline struct wmutex *held_first(const struct ut *t) { return t->robust_head; }

/* Mueller's linear search: what t's priority must be now. */
static int effective(const struct ut *t)
{
	int p = t->base_prio;
	for (const struct wmutex *w = held_first(t); w; w = w->rnext) {
		if (w->kind & MK_PP) {
			int c = wmutex_ceiling(w);
			if (c > p)
				p = c;
		} else if ((w->kind & MK_PI) && w->waiters.head && w->waiters.head->prio > p) {
			p = w->waiters.head->prio;
		}
	}
	return p;
}

/* The owner t's priority flows to: the owner of the PRIO_INHERIT mutex t
 * is parked on, if any. */
static struct ut *next_owner(const struct ut *t)
{
	if (t->state != UT_BLOCKED || t->wait_kind != WAIT_MUTEX || !t->wait_obj)
		return NULL;
	const struct wmutex *w = t->wait_obj;
	if ((w->kind & (MK_PI | MK_ORPHAN)) != MK_PI)
		return NULL;
	return w->owner;
}

void __weft_prio_recompute(struct ut *t)
{
	for (int n = 0; t && n < CHAIN_MAX; n++) {
		int p = effective(t);
		if (p == t->prio)
			return;
		__weft_set_effective_prio(t, p, p < t->prio);
		t = next_owner(t);
	}
}

void __weft_prio_give_back(struct ut *t, int lent)
{
	if (lent >= t->prio && t->prio > t->base_prio)
		__weft_prio_recompute(t);
}

void __weft_prio_inherit(struct wmutex *w, struct ut *t)
{
	if (w->kind & MK_ORPHAN)
		return;
	int p = t->prio;
	struct ut *o = w->owner;
	/* Raising needs no search: with t queued, each owner's priority is
	 * the larger of what it was and p. */
	for (int n = 0; o && o->prio < p && n < CHAIN_MAX; n++) {
		__weft_set_effective_prio(o, p, false);
		o = next_owner(o);
	}
}

void __weft_prio_waiter_left(struct wmutex *w)
{
	if ((w->kind & (MK_PI | MK_ORPHAN)) == MK_PI && w->owner)
		__weft_prio_recompute(w->owner);
}

void __weft_prio_waiting_changed(struct ut *t)
{
	struct ut *o = next_owner(t);
	if (o)
		__weft_prio_recompute(o);
}

bool __weft_prio_holds(const struct ut *t)
{
	for (const struct wmutex *w = held_first(t); w; w = w->rnext)
		if (w->kind & MK_PROTOCOL)
			return true;
	return false;
}

void __weft_sync_unpark(struct ut *t, int result)
{
	struct wmutex *w = t->wait_kind == WAIT_MUTEX ? t->wait_obj : NULL;
	__weft_unpark_nopreempt(t, result);
	if (w)
		__weft_prio_waiter_left(w);
	__weft_preempt_check();
}
