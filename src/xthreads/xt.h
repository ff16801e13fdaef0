/*
 * xt.h — libweft-xthreads' internals: the thread table, the calling
 * thread's entry, the lock, and the "every thread waits" rule.
 *
 * libweft-xthreads is a client of Weft's public API (weft.h, pthread.h):
 * an xthread is a detached UT running at SCHED_FIFO priority 1..99, with
 * asynchronous cancellation on (so xthread_destroy ends it wherever it
 * waits), whose entry in this table gives it its handle.  Its code is the
 * program's as far as the time-slice tick is concerned, so it may be
 * switched out between any two instructions; the table's lock keeps the
 * free list, the event table and the waiting count consistent, and
 * cancellation is disabled while a thread holds it (an asynchronous cancel
 * acted on inside would unwind with the lock held).
 *
 * Invariants:
 *   - a handle is (generation << 32 | index + 1); it names the slot's
 *     thread only while the slot's generation matches and the slot is
 *     ALIVE; the generation changes when the slot is freed, so a handle
 *     never names a later thread;
 *   - a slot is ALIVE from xthread_create (or adoption) until its thread is
 *     destroyed (DYING) or ends (FREE: its key destructor frees it);
 *   - xt_waiting counts the slots whose thread is marked in_wait: about to
 *     park, or parked, in xthread_wait or xthread_receive, with nothing yet
 *     to return; only the slot's own thread marks and unmarks it, with
 *     cancellation disabled, and its key destructor unmarks it if it ends
 *     marked.
 */
#ifndef WEFT_XT_H
#define WEFT_XT_H

#include <weft/xthreads.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define XT_API __attribute__((visibility("default")))

enum xt_state { XT_FREE, XT_STARTING, XT_ALIVE, XT_DYING };

struct xt_slot {
	pthread_t pt;                  /* its UT, once known (not FREE/STARTING) */
	uint32_t gen;                  /* bumped whenever the slot is freed */
	uint32_t index;                /* place in the table */
	uint32_t next_free;            /* free list: index + 1 of the next, 0 at the end */
	uint8_t state;                 /* enum xt_state */
	uint8_t in_wait;               /* see xt_waiting */
	uint8_t keyed;                 /* its thread's key holds it */
	uint8_t narg;
	xthread_func_t func;           /* what a new thread runs, with args */
	long args[XTHREAD_MAXARGS];
	char name[16];
};

static inline xthread_t xt_handle(const struct xt_slot *s)
{
	return (xthread_t)(uintptr_t)(((uint64_t)s->gen << 32) | (s->index + 1));
}

/* The slot an ALIVE handle names, or NULL.  Never dereferences h. */
struct xt_slot *xt_lookup(xthread_t h);

/* The calling thread's slot; a thread not made by xthread_create (main, or
 * a pthread) is adopted at its first Xthreads call.  NULL: no memory. */
struct xt_slot *xt_current(void);

/* Make the caller an xthread (xt_table.c says how).  With ends_by_key its
 * slot is freed by its key's destructor when it ends; without, the caller
 * must see that xt_thread_ends runs (a cleanup in the frame that calls
 * it).  NULL: no memory. */
struct xt_slot *xt_adopt(bool ends_by_key);

/* The calling thread, whose slot is s, ends: free s (and end the program
 * if every other thread waits for ever). */
void xt_thread_ends(struct xt_slot *s);

/* Make s the calling thread's slot (s->pt set); false: no memory. */
bool xt_slot_bind(struct xt_slot *s, bool ends_by_key);

/* As a variable attribute in a thread's outermost frame, compiled with
 * -fexceptions: runs xt_thread_ends on return and on the forced unwind of
 * pthread_exit and cancellation alike. */
static inline void xt_frame_ends(struct xt_slot **s)
{
	if (*s)
		xt_thread_ends(*s);
}

/* A free slot, STARTING, generation unchanged; NULL when the table is full
 * or memory is short.  Called with the lock held. */
struct xt_slot *xt_slot_alloc(void);
/* Give a slot back (FREE, new generation).  Called with the lock held. */
void xt_slot_free(struct xt_slot *s);

/* The table's lock, cancellation disabled while it is held. */
int xt_lock(void);
void xt_unlock(int cancel_state);

/* The default attributes of a new xthread (detached, SCHED_FIFO at
 * XTHREAD_DEFAULT_PRIO), made once. */
const pthread_attr_t *xt_default_attr(void);

/* Mark / unmark the caller as waiting in xthread_wait or xthread_receive
 * (xt_waiting). */
void xt_wait_begin(struct xt_slot *me);
void xt_wait_end(struct xt_slot *me);

/* With the caller marked (or, `unmarked_self` 1, an ending caller that
 * counts itself as waiting), the verdict of Xthreads' resched():
 *   XT_ALL_WAIT   every live thread is marked and none is ready or running:
 *                 nothing but the caller can ever run again; if the caller
 *                 has nothing to return either, the program ends (exit
 *                 status 0).  Once this is true no other thread runs before
 *                 the caller parks, so its re-check after is exact.
 *   XT_NOT_ALL    some live thread is not marked: wait as usual.  That
 *                 thread's own check, later, decides.
 *   XT_UNSETTLED  all are marked, but another is still ready or running
 *                 (on another VP; or preempted between its check and its
 *                 park): it will park, or (woken) unmark.  Its check may
 *                 have come before the caller's mark and seen XT_NOT_ALL,
 *                 so the caller must look again once it has parked: the
 *                 waits do so at growing intervals (xt_poll_step).
 * The last check made always sees every mark (each thread marks before it
 * checks), so it answers XT_ALL_WAIT or XT_UNSETTLED: the end is never
 * missed, only seen up to one interval late. */
enum xt_verdict { XT_NOT_ALL, XT_ALL_WAIT, XT_UNSETTLED };
enum xt_verdict xt_verdict(unsigned long unmarked_self);
/* How long an XT_UNSETTLED wait waits before it looks again: *poll_ns
 * (start it at XT_POLL_FIRST_NS), which doubles up to 128 ms. */
long xt_poll_step(long *poll_ns);
#define XT_POLL_FIRST_NS 1000000L

/* Is the priority a valid Xinu priority (1..99)? */
static inline bool xt_prio_ok(int prio)
{
	return prio >= XTHREAD_MIN_PRIO && prio <= XTHREAD_MAX_PRIO;
}

#endif
