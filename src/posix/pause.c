/*
 * pause.c — pause(): park the caller until the process catches a signal.
 *
 * glibc's pause() would block the kernel thread, so every UT would stop
 * with it; and the preemption tick (a caught signal) would end it early.
 * Instead the caller parks (runtime/signal.c keeps the queue), other UTs
 * run on, and when the VP has nothing left to run it waits in the kernel;
 * when that wait is cut short by a signal the program handles, every
 * paused UT returns -1/EINTR.  A cancellation point.
 */
#include "posix.h"

#include <unistd.h>

EXPORT int pause(void)
{
	__weft_ensure();
	WEFT_CALL();
	if (__weft_sig_suspend(NULL) == ECANCELED)
		__weft_cancel_act();
	errno = EINTR;
	return -1;
}
