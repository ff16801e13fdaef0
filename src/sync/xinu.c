/*
 * xinu.c — Xthreads' thread calls: weft_ping and weft_yield_to, and the
 * handle check the Xinu primitives share.
 *
 * A thread is alive from pthread_create until it exits; a joinable UT that
 * has exited (ZOMBIE) still has a valid handle for pthread_join but is not
 * alive, so ping, send and yield_to answer ESRCH for it.
 */
#include "sync.h"

#include <weft.h>

struct ut *__weft_live_ut(pthread_t h)
{
	struct ut *t = __weft_ut_lookup(h);
	if (!t || t->state == UT_ZOMBIE || t->state == UT_EXITING)
		return NULL;
	return t;
}

EXPORT int weft_ping(pthread_t thread)
{
	__weft_ensure();
	return __weft_live_ut(thread) ? 0 : ESRCH;
}

EXPORT int weft_yield_to(pthread_t thread)
{
	__weft_ensure();
	WEFT_CALL();
	struct ut *t = __weft_live_ut(thread);
	if (!t)
		return ESRCH;
	return __weft_yield_to(t);
}
