/*
 * mailbox.c — Xinu mailboxes: weft_send, weft_receive, weft_recvtime,
 * weft_recvclr.
 *
 * Each UT has a one-word mailbox in its descriptor (mbox_msg, mbox_full).
 * Send never blocks: it fails if the slot is full, as Xinu's send does, so a
 * receiver's first message wins.  A receiver with an empty slot parks on no
 * queue (WAIT_MAILBOX); a send to it readies it.  Invariant: a UT parked
 * with WAIT_MAILBOX has an empty mailbox.  A new UT starts with an empty
 * mailbox (the descriptor is zeroed when a slot is reused).
 */
#include "sync.h"

#include <weft.h>

EXPORT int weft_send(pthread_t thread, uintptr_t msg)
{
	WEFT_CALL();
	__weft_ensure();
	struct ut *t = __weft_live_ut(thread);
	if (!t)
		return ESRCH;
	if (t->mbox_full)
		return EAGAIN;
	t->mbox_msg = msg;
	t->mbox_full = 1;
	if (t->state == UT_BLOCKED && t->wait_kind == WAIT_MAILBOX)
		__weft_unpark(t, 0);
	return 0;
}

static uintptr_t take(struct ut *self)
{
	self->mbox_full = 0;
	return self->mbox_msg;
}

static int receive(uintptr_t *msg, int64_t deadline)
{
	struct ut *self = __weft_self();
	while (!self->mbox_full) {
		if (__weft_park(NULL, deadline, WAIT_MAILBOX, self) == ETIMEDOUT)
			return ETIMEDOUT;
	}
	*msg = take(self);
	return 0;
}

EXPORT int weft_receive(uintptr_t *msg)
{
	WEFT_CALL();
	if (!msg)
		return EINVAL;
	__weft_ensure();
	return receive(msg, -1);
}

EXPORT int weft_recvtime(uintptr_t *msg, const struct timespec *reltime)
{
	WEFT_CALL();
	if (!msg)
		return EINVAL;
	int64_t deadline;
	int r = __weft_rel_deadline(reltime, &deadline);
	if (r)
		return r;
	__weft_ensure();
	return receive(msg, deadline);
}

EXPORT int weft_recvclr(uintptr_t *msg)
{
	if (!msg)
		return EINVAL;
	struct ut *self = __weft_self_ensure();
	if (!self->mbox_full)
		return EAGAIN;
	*msg = take(self);
	return 0;
}
