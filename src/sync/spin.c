/*
 * spin.c — pthread_spin_*: spinlocks in glibc's 4-byte int.
 *
 * The int holds the holder's slot number + 2 (0: unlocked), which is enough
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
 *
 * Process-shared spinlocks are glibc's — on x86-64 its assembly ones, not
 * nptl/pthread_spin_lock.c (read from libc.so.6 2.36): 1 is free, 0 or
 * less is held; lock is `lock decl` and, if that did not reach 0, a wait
 * until the word is above 0 and another try; trylock a CAS from 1 to 0;
 * init and unlock store 1.  glibc's int carries no mark of being shared
 * (its pthread_spin_init ignores pshared), so this process keeps the list
 * of addresses it made shared (pthread_spin_init with
 * PTHREAD_PROCESS_SHARED; a forked child inherits it), and a lock found
 * holding 1 or less than 0 — values no UT of this process writes
 * privately, hence the "+ 2" — is added to the list as soon as a slow path
 * sees it: another process uses it.  (A held glibc lock reads 0, which
 * is "free" here: a process must make the lock shared itself before its
 * UTs contend for it with another process; docs/pshared.md.)  While the
 * list is empty the fast paths cost one more load of a global and a
 * branch.
 * A UT that finds a shared lock held spins with pauses, yields now and
 * then, and after a while sleeps briefly, so that the holder, if it is a
 * UT of this process of any priority, runs.  A relock by the holder waits
 * for another process to unlock it, as in glibc (tst-spin2 does that).
 */
#include "pshared.h"

#include <stdlib.h>

static struct waitq spin_waiters;

/* The spinlocks this process made shared. */
static struct {
	pthread_spinlock_t **v;
	uint32_t n, cap;
} shared;

static bool is_shared(pthread_spinlock_t *s)
{
	for (uint32_t i = 0; i < shared.n; i++)
		if (shared.v[i] == s)
			return true;
	return false;
}

static void spin_share(pthread_spinlock_t *s)
{
	if (is_shared(s))
		return;
	if (shared.n == shared.cap) {
		uint32_t cap = shared.cap ? shared.cap * 2 : 8;
		void *v = realloc(shared.v, cap * sizeof *shared.v);
		if (!v)
			return;         /* out of memory: stays private here */
		shared.v = v;
		shared.cap = cap;
	}
	shared.v[shared.n++] = s;
}

static void spin_unshare(pthread_spinlock_t *s)
{
	for (uint32_t i = 0; i < shared.n; i++)
		if (shared.v[i] == s) {
			shared.v[i] = shared.v[--shared.n];
			return;
		}
}

/* Is s in glibc's format, as only another process can have made it? */
static inline bool foreign(pthread_spinlock_t *s)
{
	int v = *s;
	return v == 1 || v < 0;
}

/* glibc's pthread_spin_lock, with waits another UT can run through. */
static int shared_lock(pthread_spinlock_t *s)
{
	unsigned spins = 0;
	for (;;) {
		if (__atomic_sub_fetch(s, 1, __ATOMIC_ACQUIRE) == 0)
			return 0;
		while (__atomic_load_n(s, __ATOMIC_RELAXED) <= 0) {
			__builtin_ia32_pause();
			if ((++spins & 1023) == 0)      /* let any UT of ours run */
				__weft_park(NULL, __weft_now() + 50000, WAIT_SPIN, (void *)s);
			else if ((spins & 63) == 0)
				__weft_yield();
		}
	}
}

EXPORT int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
	WEFT_CALL();
	if (!s)
		return EINVAL;
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	if (pshared == PTHREAD_PROCESS_SHARED) {
		spin_share(s);
		*s = 1;                 /* glibc's "free" */
		return 0;
	}
	if (shared.n)
		spin_unshare(s);
	*s = 0;
	return 0;
}

EXPORT int pthread_spin_destroy(pthread_spinlock_t *s)
{
	WEFT_CALL();
	if (!s)
		return EINVAL;
	if (shared.n && is_shared(s)) {
		spin_unshare(s);
		return 0;               /* glibc: nothing to check */
	}
	return *s ? EBUSY : 0;
}

static int lock_slow(pthread_spinlock_t *s)
{
	if (!s)
		return EINVAL;
	struct ut *self = __weft_self_ensure();
	if ((shared.n && is_shared(s)) || foreign(s)) {
		spin_share(s);
		return shared_lock(s);
	}
	int me = (int)(self->slot + 2);
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

/* pthread_spin_lock beyond M:1's free lock: the whole entry. */
WEFT_SLOW_PART int spin_lock_entry(pthread_spinlock_t *s)
{
	WEFT_CALL();
	struct ut *self = __weft_self();
	if (likely(s && *s == 0 && self && !shared.n)) {
		*s = (int)(self->slot + 2);
		WEFT_HB_ACQUIRE(s);
		return 0;
	}
	return __weft_hb_got((const void *)s, lock_slow(s));
}

/* M:1, a free private lock: taken with M:1's fast entry
 * (__weft_m1_fast_self), as a default mutex is.  An uncontended
 * lock+unlock pair went through WEFT_CALL's entry and end: 9.3 ns on the
 * AMD EPYC guest, pinned; now 5.7, against glibc's lock-prefixed 5.2. */
static inline __attribute__((always_inline)) bool m1_spin_take(pthread_spinlock_t *s)
{
	struct ut *self;
	if (likely(s && !shared.n && (self = __weft_m1_fast_self()) && *s == 0)) {
		*s = (int)(self->slot + 2);
		WEFT_HB_ACQUIRE(s);
		WEFT_FAST_EPILOGUE(EXIT_OTHER);
		return true;
	}
	return false;
}

EXPORT WEFT_HOT_ENTRY int pthread_spin_lock(pthread_spinlock_t *s)
{
	if (likely(m1_spin_take(s)))
		return 0;
	return WEFT_SLOW_CALL(spin_lock_entry(s));
}

EXPORT WEFT_HOT_ENTRY int pthread_spin_trylock(pthread_spinlock_t *s)
{
	if (likely(m1_spin_take(s)))
		return 0;
	WEFT_CALL();
	if (!s)
		return EINVAL;
	struct ut *self = __weft_self_ensure();
	if ((shared.n && is_shared(s)) || foreign(s)) {
		spin_share(s);
		int one = 1;
		return __weft_hb_got((const void *)s, __atomic_compare_exchange_n(s, &one, 0, false, __ATOMIC_ACQUIRE,
								     __ATOMIC_RELAXED) ? 0 : EBUSY);
	}
	if (*s)
		return EBUSY;
	*s = (int)(self->slot + 2);
	WEFT_HB_ACQUIRE(s);
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

/* pthread_spin_unlock beyond M:1's lock nobody waits for. */
WEFT_SLOW_PART int spin_unlock_entry(pthread_spinlock_t *s)
{
	WEFT_CALL();
	if (!s)
		return EINVAL;
	WEFT_HB_RELEASE(s);
	struct ut *self = __weft_self();
	if (!self || *s != (int)(self->slot + 2)) {
		if (shared.n && is_shared(s)) {
			__atomic_store_n(s, 1, __ATOMIC_RELEASE);
			return 0;
		}
		return EPERM;
	}
	if (likely(!spin_waiters.head)) {
		*s = 0;
		return 0;
	}
	struct ut *next = first_waiter(s);
	if (!next) {
		*s = 0;
		return 0;
	}
	*s = (int)(next->slot + 2);
	__weft_unpark(next, 0);
	return 0;
}

EXPORT WEFT_HOT_ENTRY int pthread_spin_unlock(pthread_spinlock_t *s)
{
	struct ut *self;
	if (likely(s && !spin_waiters.head && (self = __weft_m1_fast_self()) && *s == (int)(self->slot + 2))) {
		WEFT_HB_RELEASE(s);
		*s = 0;
		WEFT_FAST_EPILOGUE(EXIT_OTHER);
		return 0;
	}
	return WEFT_SLOW_CALL(spin_unlock_entry(s));
}
