/*
 * pause.c — pause(): park the caller until the process catches a signal.
 *
 * glibc's pause() would block the kernel thread, so every UT would stop
 * with it; and the preemption tick (a caught signal) would end it early.
 * Instead the caller parks on `pausers`, other UTs run on, and when the VP
 * has nothing left to run it waits in the kernel; when that wait is cut
 * short by a signal the program handles, every paused UT returns -1/EINTR
 * (runtime/sched.c idle calls __weft_signal_caught).
 */
#include "../runtime/rt.h"

#include <unistd.h>

static struct waitq pausers;

EXPORT int pause(void)
{
	__weft_ensure();
	/* POSIX: pause is a cancellation point */
	if (__weft_park_cancellable(&pausers, -1, WAIT_PAUSE, NULL) == ECANCELED)
		__weft_cancel_act();
	errno = EINTR;
	return -1;
}

bool __weft_pausers(void)
{
	return pausers.head != NULL;
}

void __weft_signal_caught(void)
{
	__weft_wake_all_nopreempt(&pausers, EINTR);
}
