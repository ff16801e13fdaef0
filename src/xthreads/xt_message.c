/*
 * xt_message.c — Xthreads message passing: xthread_send, xthread_receive.
 *
 * Each thread has a one-word mailbox (Weft's weft_send / weft_receive):
 * sending deposits a word and readies the receiver if it waits, and never
 * blocks; a thread whose mailbox already holds an unreceived word refuses
 * another (Xinu's send answers SYSERR: the first message wins).  Receiving
 * takes the caller's word, waiting until one arrives.  Invariant: a
 * receiver counts itself waiting (xt.h) only once it has found its mailbox
 * empty, and re-checks it before ending the program.
 */
#include "xt.h"

#include <stdlib.h>
#include <weft.h>

XT_API XTCALL (xthread_send)(xthread_t xptr, XTCALL msg)
{
	struct xt_slot *s = xt_lookup(xptr);
	if (!s || !xt_current())
		return XTERR;
	return weft_send(s->pt, (uintptr_t)msg) == 0 ? XTOK : XTERR;
}

XT_API XTCALL xthread_receive(void)
{
	struct xt_slot *me = xt_current();
	uintptr_t m;
	if (weft_recvclr(&m) == 0)
		return (XTCALL)m;
	if (!me) {
		weft_receive(&m);
		return (XTCALL)m;
	}
	xt_wait_begin(me);
	long poll_ns = XT_POLL_FIRST_NS;
	for (;;) {
		enum xt_verdict v = xt_verdict(0);
		if (v == XT_ALL_WAIT) {
			if (weft_recvclr(&m) != 0)
				exit(0);
			break;
		}
		if (v == XT_NOT_ALL) {
			weft_receive(&m);
			break;
		}
		/* unsettled: look again after a while (xt.h) */
		struct timespec rel = { 0, xt_poll_step(&poll_ns) };
		if (weft_recvtime(&m, &rel) == 0)
			break;
	}
	xt_wait_end(me);
	return (XTCALL)m;
}
