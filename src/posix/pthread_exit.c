/*
 * pthread_exit.c — pthread_exit: unwind the caller's stack first, so
 * cleanup handlers and C++ destructors run (cleanup.c), as with NPTL; the
 * runtime then ends the UT (runtime/lifecycle.c).
 */
#include "posix.h"

EXPORT void pthread_exit(void *retval)
{
	__weft_ensure();
	__weft_unwind_exit(retval);
}
