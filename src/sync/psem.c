/*
 * psem.c — process-shared semaphores, unnamed (sem_init with pshared) and
 * named (glibc's sem_open): glibc 2.36's struct new_sem and algorithm
 * (nptl/sem_{waitcommon,post,init,getvalue}.c, 64-bit atomics).
 *
 * `data` holds the value in its low 32 bits and the number of sleepers
 * in the high 32; post adds a token with a CAS and wakes one sleeper if
 * any is counted; wait takes a token with a CAS, or registers as a
 * sleeper and sleeps on the value word while it is 0.  `private` is
 * glibc's FUTEX_SHARED (128) for every semaphore here; sem_open's
 * semaphores are made that way by glibc, so sem_open, sem_close and
 * sem_unlink stay glibc's and Weft needs no part in them: the layout
 * tells sem_wait and sem_post what they hold (sem.c).
 *
 * Weft differs in how it sleeps (a shared futex wait in the blocking
 * bracket: only the caller waits) and in cancellation: sem_wait and the
 * timed forms are cancellation points before they try (as for Weft's own
 * semaphores) and while they sleep (pthread_cancel wakes the sleeper,
 * which unregisters and acts).  An EINTR reaches the caller only when a
 * program signal interrupted a sleep the VP could not hand on; a sleep
 * made off the VP has every signal blocked and is never interrupted.
 */
#include "pshared.h"

#include <limits.h>

#define VALUE_MASK 0xffffffffull
#define NWAITERS_SHIFT 32
#define ONE_WAITER (1ull << NWAITERS_SHIFT)

int __weft_psem_init(sem_t *s, unsigned value)
{
	struct gsem *g = gsem_of(s);
	g->data = value;
	g->private = GFUTEX_SHARED;
	g->pad = 0;
	return 0;
}

/* Take a token if there is one (a definitive answer: retried while the
 * CAS fails spuriously). */
static bool take_fast(struct gsem *g)
{
	uint64_t d = __atomic_load_n(&g->data, __ATOMIC_RELAXED);
	while (d & VALUE_MASK)
		if (__atomic_compare_exchange_n(&g->data, &d, d - 1, true, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

int __weft_psem_wait(sem_t *s, bool try, clockid_t clk, const struct timespec *abs)
{
	__weft_self_ensure();
	struct gsem *g = gsem_of(s);
	if (abs) {
		int e = __weft_ptime_check(clk, abs);
		if (e)
			return e;
	}
	if (!try)
		__weft_testcancel();
	if (take_fast(g))
		return 0;
	if (try)
		return EAGAIN;
	uint64_t d = __atomic_fetch_add(&g->data, ONE_WAITER, __ATOMIC_RELAXED);
	for (;;) {
		if ((d & VALUE_MASK) == 0) {
			int e = __weft_pfutex_wait(&g->data, 0, clk, abs, true);
			if (e == ETIMEDOUT || e == EINTR || e == EINVAL || e == ECANCELED) {
				__atomic_fetch_add(&g->data, -ONE_WAITER, __ATOMIC_RELAXED);
				if (e == ECANCELED)
					__weft_hooks.cancel_act();
				return e;
			}
			d = __atomic_load_n(&g->data, __ATOMIC_RELAXED);
		} else if (__atomic_compare_exchange_n(&g->data, &d, d - 1 - ONE_WAITER, true,
						       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			return 0;
		}
	}
}

int __weft_psem_post(sem_t *s)
{
	struct gsem *g = gsem_of(s);
	uint64_t d = __atomic_load_n(&g->data, __ATOMIC_RELAXED);
	do {
		if ((d & VALUE_MASK) == SEM_VALUE_MAX)
			return EOVERFLOW;
	} while (!__atomic_compare_exchange_n(&g->data, &d, d + 1, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if ((d >> NWAITERS_SHIFT) > 0)
		__weft_pfutex_wake(&g->data, 1);
	return 0;
}

int __weft_psem_getvalue(sem_t *s, int *value)
{
	*value = (int)(__atomic_load_n(&gsem_of(s)->data, __ATOMIC_RELAXED) & VALUE_MASK);
	return 0;
}
