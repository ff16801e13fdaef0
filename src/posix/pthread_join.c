/*
 * pthread_join.c — join (plain, try, timed, clock) and detach.
 *
 * A joinable UT that exits becomes a ZOMBIE holding its return value; the
 * join that collects it frees the slot, which bumps the generation, so the
 * handle is dead from then on (ESRCH).  Only one UT may wait to join a given
 * UT (EINVAL for a second, as glibc), and two UTs joining each other is
 * EDEADLK for the second.
 */
#include "posix.h"

/* j is parked joining t.  A joiner woken by a timeout or a cancel is no
 * longer one, even before it runs again to clear t->joiner. */
static inline bool waits_to_join(const struct ut *j, const struct ut *t)
{
	return t->joiner == j && j->wq == &t->joinq;
}

WEFT_SHARED_BODY int join(pthread_t th, void **ret, int64_t deadline, bool try_only)
{
	struct ut *self = __weft_self();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	if (t == self || waits_to_join(t, self))
		return EDEADLK;
	if (t->detached)
		return EINVAL;
	if (t->joiner && t->joiner != self && (waits_to_join(t->joiner, t) || t->state == UT_ZOMBIE))
		return EINVAL;
	if (!try_only)
		__weft_testcancel();             /* a cancellation point */
	while (t->state != UT_ZOMBIE) {
		if (try_only)
			return EBUSY;
		t->joiner = self;
		/* not started yet: run it now rather than the head of the
		 * level, where POSIX leaves the order free (the fork-join
		 * hand-off, sched.c).  One that has run keeps its place: a
		 * sleeper woken before others stays behind them */
		if (t->fresh && t->state == UT_READY)
			__weft_hand_to(__weft_vp(), t);
		int r = __weft_park_cancellable(&t->joinq, deadline, WAIT_JOIN, t);
		__weft_hand_to(__weft_vp(), NULL);   /* a park that returned at once left it */
		if (r == ETIMEDOUT || r == ECANCELED) {
			if (t->joiner == self)
				t->joiner = NULL;    /* POSIX: still joinable */
			if (r == ECANCELED)
				__weft_cancel_act();
			return ETIMEDOUT;
		}
	}
	WEFT_HB_ACQUIRE(t);
	if (ret)
		*ret = t->retval;
	__weft_ut_reap(t);
	return 0;
}

EXPORT int pthread_join(pthread_t th, void **ret)
{
	/* M:1: the entry's tests once (rt.h, __weft_m1_enter) */
	WEFT_M1_FAST_RETURN(join(th, ret, -1, false));
	__weft_ensure();
	WEFT_CALL();
	return join(th, ret, -1, false);
}

EXPORT int pthread_tryjoin_np(pthread_t th, void **ret)
{
	__weft_ensure();
	WEFT_CALL();
	return join(th, ret, -1, true);
}

static int clockjoin(pthread_t th, void **ret, clockid_t clk, const struct timespec *abs)
{
	int64_t deadline;
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	__weft_ensure();
	/* glibc checks the handle before the time: a dead thread is ESRCH */
	if (!__weft_ut_lookup(th))
		return ESRCH;
	if (!abs)
		return join(th, ret, -1, false);  /* glibc: no timeout */
	int e = __weft_abs_deadline(clk, abs, &deadline);
	if (e)
		return e;
	return join(th, ret, deadline, false);
}

EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk, const struct timespec *abs)
{
	WEFT_CALL();
	return clockjoin(th, ret, clk, abs);
}

EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abs)
{
	WEFT_CALL();
	return clockjoin(th, ret, CLOCK_REALTIME, abs);
}

EXPORT int pthread_detach(pthread_t th)
{
	__weft_ensure();
	/* M:N: t may be ending on another VP meanwhile; its state and
	 * detached flag are the runtime lock's */
	WEFT_CALL();
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	/* a detached thread that has ended is gone, as weft_ping says, even
	 * while its slot waits for its VP's next switch to be released */
	if (t->detached && (t->state == UT_EXITING || t->state == UT_ZOMBIE))
		return ESRCH;
	if (t->detached || t->joiner)
		return EINVAL;
	if (t->state == UT_ZOMBIE) {
		__weft_ut_reap(t);
		return 0;
	}
	t->detached = 1;
	return 0;
}
