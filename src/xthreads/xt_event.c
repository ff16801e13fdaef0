/*
 * xt_event.c — Xthreads events: xthread_event, xthread_wait, xthread_set,
 * and the extension xthread_clear.
 *
 * An Xevent is a number, 1, 2, 3, ... in the order xthread_event() made
 * them (the paper: "an event e is declared to be of type Xevent and
 * initialized by the xthread_event() function"), naming a Weft event
 * (weft_event_t: a flag and a queue) in a table of chunks that are never
 * moved or freed.  An event has occurred once xthread_set has been called
 * for it, and stays so (until xthread_clear): a wait then returns at once.
 * Invariant: `set` mirrors the Weft event's own flag (only these calls
 * touch it), so a waiter knows, before it counts itself as waiting,
 * whether it will park at all.
 */
#include "xt.h"

#include <errno.h>
#include <stdlib.h>
#include <weft.h>

#define EV_CHUNK_SHIFT 8
#define EV_CHUNK (1L << EV_CHUNK_SHIFT)
#define EV_MAX_CHUNKS 4096L            /* 1,048,575 events */

struct xt_event {
	weft_event_t ev;
	unsigned set;
};

static struct xt_event *ev_chunks[EV_MAX_CHUNKS];
static long ev_next = 1;               /* the next event's number */

static struct xt_event *ev_lookup(Xevent e)
{
	if (e < 1 || e >= __atomic_load_n(&ev_next, __ATOMIC_ACQUIRE))
		return NULL;
	struct xt_event *c = __atomic_load_n(&ev_chunks[e >> EV_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	return c ? &c[e & (EV_CHUNK - 1)] : NULL;
}

XT_API XTCALL xthread_event(void)
{
	XTCALL r = XTERR;
	int old = xt_lock();
	long e = ev_next;
	long c = e >> EV_CHUNK_SHIFT;
	if (c < EV_MAX_CHUNKS) {
		if (!ev_chunks[c]) {
			/* all-zero is a valid weft_event_t that has not occurred */
			struct xt_event *chunk = calloc(EV_CHUNK, sizeof *chunk);
			if (chunk)
				__atomic_store_n(&ev_chunks[c], chunk, __ATOMIC_RELEASE);
		}
		if (ev_chunks[c]) {
			__atomic_store_n(&ev_next, e + 1, __ATOMIC_RELEASE);
			r = e;
		}
	}
	xt_unlock(old);
	return r;
}

XT_API XTCALL xthread_wait(Xevent e)
{
	struct xt_slot *me = xt_current();
	struct xt_event *ev = ev_lookup(e);
	if (!ev)
		return XTERR;
	if (!me)
		return weft_event_wait(&ev->ev) == 0 ? XTOK : XTERR;
	xt_wait_begin(me);
	int r = 0;
	long poll_ns = XT_POLL_FIRST_NS;
	while (!ev->set) {
		enum xt_verdict v = xt_verdict(0);
		if (v == XT_ALL_WAIT && !ev->set)
			exit(0);
		if (v == XT_NOT_ALL) {
			r = weft_event_wait(&ev->ev);
			break;
		}
		if (v == XT_UNSETTLED) {
			/* look again after a while (xt.h) */
			struct timespec at;
			clock_gettime(CLOCK_MONOTONIC, &at);
			at.tv_nsec += xt_poll_step(&poll_ns);
			at.tv_sec += at.tv_nsec / 1000000000L;
			at.tv_nsec %= 1000000000L;
			r = weft_event_timedwait(&ev->ev, CLOCK_MONOTONIC, &at);
			if (r != ETIMEDOUT)
				break;
			r = 0;
		}
	}
	xt_wait_end(me);
	return r == 0 ? XTOK : XTERR;
}

XT_API XTCALL xthread_set(Xevent e)
{
	struct xt_event *ev = ev_lookup(e);
	if (!ev || !xt_current())
		return XTERR;
	ev->set = 1;
	return weft_event_set(&ev->ev) == 0 ? XTOK : XTERR;
}

XT_API XTCALL xthread_clear(Xevent e)
{
	struct xt_event *ev = ev_lookup(e);
	if (!ev)
		return XTERR;
	ev->set = 0;
	return weft_event_clear(&ev->ev) == 0 ? XTOK : XTERR;
}
