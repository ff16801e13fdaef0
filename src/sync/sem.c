/*
 * sem.c — unnamed POSIX semaphores (sem_init ... sem_getvalue) in glibc's
 * 32-byte sem_t.
 *
 * `value` is the count of free units; waiters park on the semaphore's queue,
 * highest priority first.  Post hands its unit straight to the first waiter
 * instead of raising the count, so a woken waiter never finds the unit gone
 * and value stays 0 while anyone waits.  Invariant: value > 0 implies no
 * waiters.  These calls return -1 with errno set, as POSIX says.
 *
 * Process-shared semaphores — sem_init(s, 1, v), and the named ones that
 * glibc's sem_open makes (sem_open, sem_close and sem_unlink stay glibc's)
 * — are glibc's struct new_sem, recognised by its `private` word (offset 8,
 * never set in Weft's layout) at every call and handed to psem.c.
 */
#include "pshared.h"

#include <limits.h>
#include <string.h>

static inline struct wsem *wsem_of(sem_t *s) { return (struct wsem *)s; }

static inline int fail(int e)
{
	errno = e;
	return -1;
}

EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
	if (!s || value > SEM_VALUE_MAX)
		return fail(EINVAL);
	if (pshared)
		return __weft_psem_init(s, value);
	memset(s, 0, sizeof *s);
	wsem_of(s)->value = value;
	return 0;
}

EXPORT int sem_destroy(sem_t *s)
{
	if (!s)
		return fail(EINVAL);
	if (psem_is(s))
		return 0;                 /* glibc: nothing to do */
	if (wsem_of(s)->waiters.head)
		return fail(EBUSY);
	return 0;
}

/* Take a unit, waiting until abs on clk (abs NULL: no deadline). */
static int sem_take(struct wsem *w, clockid_t clk, const struct timespec *abs, bool try_only)
{
	if (!w)
		return fail(EINVAL);
	if (unlikely(w->private)) {
		int r = __weft_psem_wait((sem_t *)w, try_only, clk, abs);
		return r ? fail(r) : 0;
	}
	if (!try_only) {
		/* POSIX: sem_wait is a cancellation point even when it does not
		 * block (glibc tests here too). */
		__weft_ensure();
		__weft_testcancel();
	}
	if (likely(w->value)) {
		w->value--;
		return 0;
	}
	if (try_only)
		return fail(EAGAIN);
	int64_t deadline = -1;
	if (abs) {
		int r = __weft_sync_deadline(clk, abs, &deadline);
		if (r)
			return fail(r);
	}
	__weft_ensure();
	for (;;) {
		int r = __weft_park_cancellable(&w->waiters, deadline, WAIT_SEM, w);
		if (r == ECANCELED)
			__weft_hooks.cancel_act();  /* post hands units only to those it wakes */
		/* a handler ran for this UT: EINTR, or (SA_RESTART) wait on, as
		 * Linux restarts sem_wait; a unit posted meanwhile is there */
		if (r == EINTR && __weft_sig_restartable()) {
			if (w->value) {
				w->value--;
				return 0;
			}
			continue;
		}
		return r ? fail(r) : 0;
	}
}

static const struct timespec bad_time = { 0, -1 };

EXPORT int sem_wait(sem_t *s)
{
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), 0, NULL, false));
}

EXPORT int sem_trywait(sem_t *s)
{
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), 0, NULL, true));
}

EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs)
{
	WEFT_CALL();
	return __weft_hb_got(s, sem_take(wsem_of(s), CLOCK_REALTIME, abs ? abs : &bad_time, false));
}

EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abs)
{
	WEFT_CALL();
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return fail(EINVAL);
	return __weft_hb_got(s, sem_take(wsem_of(s), clk, abs ? abs : &bad_time, false));
}

EXPORT int sem_post(sem_t *s)
{
	WEFT_CALL();
	WEFT_HB_RELEASE(s);
	struct wsem *w = wsem_of(s);
	if (!w)
		return fail(EINVAL);
	if (unlikely(w->private)) {
		int r = __weft_psem_post(s);
		return r ? fail(r) : 0;
	}
	if (unlikely(w->waiters.head)) {
		__weft_unpark(w->waiters.head, 0);
		return 0;
	}
	if (w->value >= SEM_VALUE_MAX)
		return fail(EOVERFLOW);
	w->value++;
	return 0;
}

EXPORT int sem_getvalue(sem_t *s, int *value)
{
	if (!s || !value)
		return fail(EINVAL);
	if (psem_is(s))
		return __weft_psem_getvalue(s, value);
	*value = (int)wsem_of(s)->value;
	return 0;
}
