/*
 * pthread_self.c — identity: self, equal, and the concurrency hint.
 *
 * glibc's header inlines pthread_equal as ==, which is right for Weft too:
 * a UT's handle is one value for its whole life.
 */
#include "../runtime/rt.h"

EXPORT pthread_t pthread_self(void)
{
	__weft_ensure();
	return __weft_handle(__weft_self());
}

EXPORT int pthread_equal(pthread_t a, pthread_t b)
{
	return a == b;
}

static int concurrency;

/* A hint only; M:1 has one level of concurrency whatever is asked. */
EXPORT int pthread_setconcurrency(int level)
{
	if (level < 0)
		return EINVAL;
	concurrency = level;
	return 0;
}

EXPORT int pthread_getconcurrency(void)
{
	return concurrency;
}
