/*
 * spin.c — pthread_spin_*: spinlocks in glibc's 4-byte int.
 *
 * The int holds the holder's slot number + 1 (0: unlocked), which is enough
 * to answer EDEADLK to a holder that relocks and EPERM to a UT that unlocks
 * a lock it does not hold.  In M:1 spinning is useless — the holder cannot
 * run while the spinner does — and a plain yield is not enough: if the
 * holder has a lower priority than the spinner, or is itself blocked, a
 * yield comes straight back and the spinner would spin for ever.  So a UT
 * that finds the lock taken parks on one process-wide queue (the int has no
 * room for a queue of its own), which lets any other UT, the holder
 * included, run; unlock hands the lock to the first UT parked for that
 * lock.  Invariant: a UT parked here with wait_obj == lock is waiting for
 * exactly that lock, and no UT is parked for a lock that is free.
 */
#include "sync.h"

static struct waitq spin_waiters;

EXPORT int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
	if (!s)
		return EINVAL;
	if (pshared == PTHREAD_PROCESS_SHARED)
		return ENOTSUP;
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return EINVAL;
	*s = 0;
	return 0;
}

EXPORT int pthread_spin_destroy(pthread_spinlock_t *s)
{
	if (!s)
		return EINVAL;
	return *s ? EBUSY : 0;
}

static int lock_slow(pthread_spinlock_t *s)
{
	if (!s)
		return EINVAL;
	struct ut *self = __weft_self_ensure();
	int me = (int)(self->slot + 1);
	/* Relocking one's own spinlock spins forever on glibc, and programs
	 * (glibc's tst-spin3) rely on it never returning: park for good, where
	 * a deadlock report (WEFT_DEADLOCK=report) can see it. */
	while (*s == me)
		__weft_park(NULL, -1, WAIT_SPIN, (void *)s);
	if (*s == 0) {
		*s = me;
		return 0;
	}
	/* Woken only by unlock, which has made us the holder. */
	__weft_park(&spin_waiters, -1, WAIT_SPIN, (void *)s);
	return 0;
}

EXPORT int pthread_spin_lock(pthread_spinlock_t *s)
{
	WEFT_CALL();
	struct ut *self = __weft_self();
	if (likely(s && *s == 0 && self)) {
		*s = (int)(self->slot + 1);
		return 0;
	}
	return lock_slow(s);
}

EXPORT int pthread_spin_trylock(pthread_spinlock_t *s)
{
	WEFT_CALL();
	if (!s)
		return EINVAL;
	struct ut *self = __weft_self_ensure();
	if (*s)
		return EBUSY;
	*s = (int)(self->slot + 1);
	return 0;
}

/* The first UT parked for lock s, or NULL. */
static struct ut *first_waiter(pthread_spinlock_t *s)
{
	struct ut *head = spin_waiters.head, *t = head;
	if (!t)
		return NULL;
	do {
		if (t->wait_obj == (void *)s)
			return t;
		t = t->q_next;
	} while (t != head);
	return NULL;
}

EXPORT int pthread_spin_unlock(pthread_spinlock_t *s)
{
	WEFT_CALL();
	if (!s)
		return EINVAL;
	struct ut *self = __weft_self();
	if (!self || *s != (int)(self->slot + 1))
		return EPERM;
	if (likely(!spin_waiters.head)) {
		*s = 0;
		return 0;
	}
	struct ut *next = first_waiter(s);
	if (!next) {
		*s = 0;
		return 0;
	}
	*s = (int)(next->slot + 1);
	__weft_unpark(next, 0);
	return 0;
}
