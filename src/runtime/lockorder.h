/*
 * lockorder.h — the runtime's lock order, written as data before the first
 * lock exists.
 *
 * M:1 takes no lock at all (rt.h: the mainline is never interrupted midway
 * inside Weft).  M:N will: every lock belongs to one class below, and a
 * kernel thread may take a lock only while every lock it already holds is of
 * a strictly lower class.  Two locks of one class are never held together,
 * with the one exception a class says it allows (then lower address first).
 * WEFT_DEBUG builds check this at every acquisition (check.c).  A new lock
 * gets a class here first, with the reason for its place.
 *
 * Why this order: a sync operation starts at its object (a condition
 * variable, then the mutex it morphs waiters onto), may wake a UT (the
 * UT's own state, then a VP's ready queue), and a VP's queues may need a
 * stack or a slot only when a UT is made; the process-wide tables are
 * leaves.  Signal-handler state takes no lock: handlers never block.
 */
#ifndef WEFT_LOCKORDER_H
#define WEFT_LOCKORDER_H

#define WEFT_LOCK_CLASSES(X)                                                          \
	X(LK_COND, "a condition variable's waiters (taken before its mutex: morphing)") \
	X(LK_OBJECT, "a mutex, rwlock, barrier, semaphore, event or once wait queue")   \
	X(LK_FUTEX_BUCKET, "a bucket of the futex emulation's hashed wait queues")      \
	X(LK_JOIN, "a UT's join queue and exit state")                                  \
	X(LK_UT, "a UT's scheduling fields (priority, state) while it changes queue")   \
	X(LK_TIMERS, "a VP's timer heap")                                               \
	X(LK_RUNQ, "a VP's ready queues (several VPs: lower index first)")             \
	X(LK_UT_TABLE, "the UT table's free list")                                     \
	X(LK_STACKS, "the stack pool")

enum lock_class {
#define WEFT_LOCK_ENUM(name, why) name,
	WEFT_LOCK_CLASSES(WEFT_LOCK_ENUM)
#undef WEFT_LOCK_ENUM
	LK_NCLASSES
};

/* The class that may be held twice (lower address first). */
#define WEFT_LOCK_CLASS_MAY_NEST(c) ((c) == LK_RUNQ)

#endif
