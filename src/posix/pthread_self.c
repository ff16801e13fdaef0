/*
 * pthread_self.c — identity: self, equal, and the concurrency hint.
 *
 * glibc's header inlines pthread_equal as ==, which is right for Weft too:
 * a UT's handle is one value for its whole life.
 */
#include "../runtime/rt.h"

WEFT_SLOW_PART pthread_t self_slow(void)
{
	__weft_ensure();
	/* a kernel thread Weft did not make has a guest UT (runtime/guest.c) */
	enum weft_where w = __weft_where(__weft_vp());
	if (unlikely(w == WHERE_FOREIGN))
		return __weft_guest_self();
	/* the child of a fork by such a thread: that thread's handle, not
	 * the UT its VP ran in the parent (runtime/vp.c, fork_foreign) */
	pthread_t h;
	if (unlikely(w == WHERE_NONE) && __weft_foreign_child_self(&h))
		return h;
	return __weft_handle(__weft_self());
}

/* The M:1 answer makes no frame: everything else is self_slow's, reached
 * by a tail call (inlined, its calls made gcc align the stack on entry). */
EXPORT WEFT_HOT_ENTRY pthread_t pthread_self(void)
{
	struct ut *t = __weft_m1_fast_self();
	if (likely(t))
		return __weft_handle(t);
	return self_slow();
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
