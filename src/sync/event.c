/*
 * event.c — Xthreads events: weft_event_{init,destroy,wait,timedwait,set,clear}.
 *
 * An event is a flag and a queue.  Waiting while the flag is clear parks the
 * caller; set raises the flag and readies every waiter at once (Xthreads'
 * xthread_set: "all waiting for e are reactivated simultaneously"); clear
 * lowers it.  Invariant: while the flag is set, no UT is parked on it.
 * A woken waiter returns 0 even if the event was cleared again before it
 * ran: it did occur.
 */
#include "sync.h"

#include <weft.h>

struct wevent {
	struct waitq waiters;
	uint32_t set;
	uint32_t reserved;
};
_Static_assert(sizeof(struct wevent) == sizeof(weft_event_t), "event size");

static inline struct wevent *wev_of(weft_event_t *e) { return (struct wevent *)e; }

EXPORT int weft_event_init(weft_event_t *e)
{
	if (!e)
		return EINVAL;
	*wev_of(e) = (struct wevent){ 0 };
	return 0;
}

EXPORT int weft_event_destroy(weft_event_t *e)
{
	if (!e)
		return EINVAL;
	return wev_of(e)->waiters.head ? EBUSY : 0;
}

static int event_wait(struct wevent *ev, int64_t deadline)
{
	if (ev->set)
		return 0;
	__weft_ensure();
	return __weft_park(&ev->waiters, deadline, WAIT_EVENT, ev);
}

EXPORT int weft_event_wait(weft_event_t *e)
{
	WEFT_CALL();
	return e ? event_wait(wev_of(e), -1) : EINVAL;
}

EXPORT int weft_event_timedwait(weft_event_t *e, clockid_t clk, const struct timespec *abstime)
{
	WEFT_CALL();
	if (!e)
		return EINVAL;
	int64_t deadline;
	int r = __weft_sync_deadline(clk, abstime, &deadline);
	return r ? r : event_wait(wev_of(e), deadline);
}

EXPORT int weft_event_set(weft_event_t *e)
{
	WEFT_CALL();
	if (!e)
		return EINVAL;
	struct wevent *ev = wev_of(e);
	ev->set = 1;
	if (ev->waiters.head)
		__weft_wake_all(&ev->waiters, 0);
	return 0;
}

EXPORT int weft_event_clear(weft_event_t *e)
{
	if (!e)
		return EINVAL;
	wev_of(e)->set = 0;
	return 0;
}
