/*
 * robust.c — robust mutexes: what happens when an owner ends holding one.
 *
 * Each UT keeps the robust mutexes it holds on a doubly linked list headed
 * by ut->robust_head and threaded through the mutexes' own rnext/rprev words
 * (glibc's __list field), so linking and unlinking is O(1) and needs no
 * memory.  Invariant: a robust mutex is on its owner's list iff it has an
 * owner.  When a UT exits, every mutex still on its list is marked
 * inconsistent and passed to its first waiter, whose lock call returns
 * EOWNERDEAD; with no waiter it is left unlocked and the next locker gets
 * EOWNERDEAD.  pthread_mutex_consistent clears the mark; unlocking without
 * it makes the mutex ENOTRECOVERABLE for good (mutex.c).
 */
#include "sync.h"

void __weft_robust_link(struct wmutex *w, struct ut *owner)
{
	struct wmutex *head = owner->robust_head;
	w->rprev = NULL;
	w->rnext = head;
	if (head)
		head->rprev = w;
	owner->robust_head = w;
}

void __weft_robust_unlink(struct wmutex *w, struct ut *owner)
{
	if (w->rprev)
		w->rprev->rnext = w->rnext;
	else
		owner->robust_head = w->rnext;
	if (w->rnext)
		w->rnext->rprev = w->rprev;
	w->rnext = w->rprev = NULL;
}

void __weft_robust_owner_died(struct ut *t)
{
	struct wmutex *w;
	while ((w = t->robust_head) != NULL) {
		__weft_robust_unlink(w, t);
		w->kind |= MK_INCONSISTENT;
		w->count = 0;
		struct ut *next = __weft_waitq_first(&w->waiters);
		w->owner = next;
		if (next) {
			__weft_robust_link(w, next);
			/* The dying UT is about to switch away for good: no
			 * switch from here. */
			__weft_unpark_nopreempt(next, EOWNERDEAD);
		}
	}
}
