/*
 * robust.c — each UT's held list, and what happens when a UT ends holding
 * mutexes on it.
 *
 * Each UT keeps the robust and the protocol (PRIO_INHERIT, PRIO_PROTECT)
 * mutexes it holds on a doubly linked list headed by ut->robust_head and
 * threaded through the mutexes' own rnext/rprev words (glibc's __list
 * field), so linking and unlinking (sync.h, inline for the lock paths) is
 * O(1) and needs no memory.  Invariant:
 * a mutex whose kind has a bit of MK_HELD_LIST is on its owner's list iff it
 * has an owner (and that owner has not exited).  The protocols read the
 * list to compute their owner's priority (prio.c).
 *
 * When a UT exits, every robust mutex still on its list is marked
 * inconsistent and passed to its first waiter, whose lock call returns
 * EOWNERDEAD; with no waiter it is left unlocked and the next locker gets
 * EOWNERDEAD.  pthread_mutex_consistent clears the mark; unlocking without
 * it makes the mutex ENOTRECOVERABLE for good (mutex.c).  A protocol mutex
 * that is not robust stays locked for ever, as with NPTL, and is marked
 * orphaned so that its waiters no longer lend their priority to anyone.
 *
 * Process-shared mutexes are not on this list (their __list word is the
 * kernel's robust list, in glibc's format): the holder table knows which
 * the UT holds, and pmutex.c treats them as the kernel treats a dead owner.
 */
#include "pshared.h"

void __weft_robust_owner_died(struct ut *t)
{
	__weft_pmutex_owner_died(t);
	struct wmutex *w;
	while ((w = t->robust_head) != NULL) {
		__weft_held_unlink(w, t);
		if (!(w->kind & MK_ROBUST)) {
			w->kind |= MK_ORPHAN;
			continue;
		}
		w->kind |= MK_INCONSISTENT;
		w->count = 0;
		struct ut *next = __weft_waitq_first(&w->waiters);
		w->owner = next;
		if (next) {
			__weft_held_link(w, next);
			/* The dying UT is about to switch away for good: no
			 * switch from here. */
			__weft_unpark_nopreempt(next, EOWNERDEAD);
			if (w->kind & MK_PROTOCOL)
				__weft_prio_recompute(next);
		}
	}
}
