/*
 * pshared.h — process-shared synchronisation objects: glibc 2.36's own
 * layouts and futex protocols (x86-64), so that a Weft process and a
 * process on NPTL can share one object in shared memory.
 *
 * Owns the sync layer's view of glibc's layouts for the objects a program
 * makes PTHREAD_PROCESS_SHARED, the shared futex helpers, the process's
 * identity towards the kernel and other processes (a TID and the kernel's
 * robust list), and the holder table (which UT of this process holds what).
 *
 * Invariant: an object is process-shared exactly when the bit glibc itself
 * tests says so, and Weft's private layouts keep that bit clear:
 *   mutex    __kind & PTHREAD_MUTEX_PSHARED_BIT (128)
 *   cond     __wrefs & 1                        (offset 36)
 *   rwlock   __shared != 0                      (offset 28)
 *   barrier  shared != 0 (glibc's FUTEX_SHARED) (offset 12)
 *   sem_t    private != 0 (glibc's FUTEX_SHARED)(offset 8; named ones too)
 * Spinlocks have no such bit (glibc's pthread_spin_init ignores pshared):
 * spin.c keeps a list of the addresses this process made shared.
 *
 * Every wait that must sleep in the kernel is a shared futex wait (no
 * FUTEX_PRIVATE_FLAG) made inside the blocking bracket (runtime/handoff.c),
 * so only the caller waits while the other UTs run; every other step of a
 * protocol (CAS on the futex word, the robust list, the owner fields) runs
 * on the VP, where Weft's text is never preempted: the steps a UT takes
 * between two waits are atomic with respect to the other UTs.
 */
#ifndef WEFT_SYNC_PSHARED_H
#define WEFT_SYNC_PSHARED_H

#include "sync.h"

#include <linux/futex.h>
#include <time.h>

/* ---- glibc's kinds and constants (sysdeps/nptl/pthreadP.h) ---- */
#define GM_PSHARED 128                  /* PTHREAD_MUTEX_PSHARED_BIT */
#define GM_ROBUST 16
#define GM_PI 32
#define GM_PP 64
#define GM_TYPE(k) ((k) & 127)          /* PTHREAD_MUTEX_TYPE */
#define GM_INCONSISTENT 0x7fffffff      /* __owner after the owner died */
#define GM_NOTRECOVERABLE 0x7ffffffe
#define GM_CEIL_SHIFT 19                /* PRIO_PROTECT ceiling, in __lock */

#define GC_SHARED 1u                    /* __wrefs: __PTHREAD_COND_SHARED_MASK */
#define GC_MONOTONIC 2u                 /* __PTHREAD_COND_CLOCK_MONOTONIC_MASK */

#define GFUTEX_SHARED 128               /* glibc's FUTEX_SHARED (LLL_SHARED) */

static inline bool pmutex_is(const pthread_mutex_t *m) { return m->__data.__kind & GM_PSHARED; }
static inline bool pcond_is(const pthread_cond_t *c) { return c->__data.__wrefs & GC_SHARED; }
static inline bool prwlock_is(const pthread_rwlock_t *l) { return l->__data.__shared != 0; }

/* glibc's struct pthread_barrier (sysdeps/nptl/internaltypes.h). */
struct gbarrier {
	unsigned in, current_round, count;
	int shared;                     /* 0 (FUTEX_PRIVATE) or 128 (FUTEX_SHARED) */
	unsigned out;
};
_Static_assert(sizeof(struct gbarrier) <= sizeof(pthread_barrier_t), "barrier size");
static inline struct gbarrier *gbar_of(pthread_barrier_t *b) { return (struct gbarrier *)b; }
static inline bool pbarrier_is(pthread_barrier_t *b) { return gbar_of(b)->shared != 0; }

/* glibc's struct new_sem (64-bit atomics): the value in the low half of
 * `data`, the number of waiters in the high half. */
struct gsem {
	uint64_t data;
	int private;                    /* 0 (FUTEX_PRIVATE) or 128 (FUTEX_SHARED) */
	int pad;
};
_Static_assert(sizeof(struct gsem) <= sizeof(sem_t), "sem size");
static inline struct gsem *gsem_of(sem_t *s) { return (struct gsem *)s; }
static inline bool psem_is(sem_t *s) { return gsem_of(s)->private != 0; }

/* ---- shared futexes (pfutex.c) ---- */
/* Sleep in the kernel while *w == val, until `abs` on `clk` (abs NULL: no
 * limit), inside the blocking bracket.  0 when woken, when the word had
 * changed, or spuriously; ETIMEDOUT; EINTR for a program signal (only
 * when the VP could not be handed on); ECANCELED, when `cancellable`, for a
 * cancellation request due (checked before and after the sleep, and
 * pthread_cancel wakes the sleeper: __weft_pfutex_cancel_kick).  When the
 * VP cannot be handed on and other UTs exist, the UT parks on the process's
 * local table instead (woken by __weft_pfutex_wake here at once, and looking
 * at the word every poll for another process's wake), so a waker of this
 * process still runs. */
int __weft_pfutex_wait(const volatile void *w, uint32_t val, clockid_t clk,
		       const struct timespec *abs, bool cancellable) HIDDEN;
/* Wake up to n sleepers on w: UTs parked on the local table, and the
 * kernel's (a raw system call); never blocks. */
void __weft_pfutex_wake(const volatile void *w, int n) HIDDEN;
/* A timed call's time, as glibc checks it before it waits: EINVAL for a
 * clock other than REALTIME and MONOTONIC or a tv_nsec out of range. */
int __weft_ptime_check(clockid_t clk, const struct timespec *abs) HIDDEN;

/* Spin-wait step for the few places glibc's protocols spin on a store
 * another party is about to make: let the other UTs run now and then. */
void __weft_pshared_relax(unsigned *spins) HIDDEN;

/* ---- the process towards the kernel and the other processes ---- */
/* The TID this process's UTs all write into a futex word or an __owner
 * field: the process's own (the thread group leader's, = getpid()), whose
 * kernel robust list (glibc's, registered at start-up and again in a
 * forked child) holds the robust mutexes they own. */
pid_t __weft_pshared_tid(void) HIDDEN;
/* That robust list's head (the kernel's struct robust_list_head, which
 * glibc keeps in the leader's TCB), or NULL when none is registered. */
struct robust_list_head *__weft_pshared_robust_head(void) HIDDEN;

/* ---- the holder table (pfutex.c) ----
 * Which UT of this process holds a process-shared mutex or write-holds a
 * process-shared rwlock, and which UTs of this process wait for a mutex a
 * UT of this process holds.  glibc's layouts have no spare word for a
 * UT, and the futex word and __owner hold the one TID of the process.
 * Keyed by address; a record exists while `owner` is set or UTs wait on it.
 * A forked child starts with an empty table (it holds nothing). */
#define PH_GONE ((struct ut *)1)        /* the holder exited holding it */
enum { PH_MUTEX, PH_RWLOCK };
struct pholder {
	const void *obj;
	int kind;                       /* PH_MUTEX or PH_RWLOCK (its writer) */
	struct ut *owner;               /* the holding UT, PH_GONE, or NULL */
	struct waitq waiters;           /* UTs parked until the owner lets go */
	struct pholder *next;
};
struct pholder *__weft_pholder_find(const void *obj) HIDDEN;
/* The same without the fork check, for reports (no system call, no free). */
struct pholder *__weft_pholder_peek(const void *obj) HIDDEN;
/* The record for obj, made if needed: NULL only if memory ran out. */
struct pholder *__weft_pholder_get(const void *obj, int kind) HIDDEN;
/* Drop the record if it holds nothing any more. */
void __weft_pholder_tidy(struct pholder *h) HIDDEN;
/* Call fn on every record t owns (UT exit). */
void __weft_pholder_each_owned(struct ut *t, void (*fn)(struct pholder *, struct ut *)) HIDDEN;
static inline struct ut *pholder_owner(const void *obj)
{
	struct pholder *h = __weft_pholder_find(obj);
	return h ? h->owner : NULL;
}

/* ---- the objects (pmutex.c, pcond.c, prwlock.c, pbarrier.c, psem.c) ---- */
int __weft_pmutex_init(pthread_mutex_t *m, int kind) HIDDEN;
/* Lock: `try` never waits; `cond` is the relock of a condition wait
 * (glibc's __pthread_mutex_cond_lock: no user count, waiters assumed);
 * abs NULL: no limit. */
int __weft_pmutex_lock(pthread_mutex_t *m, bool try, bool cond, clockid_t clk,
		       const struct timespec *abs) HIDDEN;
/* Unlock; `decr` false for a condition wait's release (no user count). */
int __weft_pmutex_unlock(pthread_mutex_t *m, bool decr) HIDDEN;
int __weft_pmutex_consistent(pthread_mutex_t *m) HIDDEN;
int __weft_pmutex_destroy(pthread_mutex_t *m) HIDDEN;
bool __weft_pmutex_owned(pthread_mutex_t *m, struct ut *self) HIDDEN;
/* A UT of this process exits holding these (robust.c). */
void __weft_pmutex_owner_died(struct ut *t) HIDDEN;

/* A condition wait's release and relock of either kind of mutex: the
 * caller must hold it (EPERM otherwise); a recursive mutex is released
 * fully and its depth restored. */
int __weft_cond_mutex_release(pthread_mutex_t *m, uint32_t *depth) HIDDEN;
int __weft_cond_mutex_relock(pthread_mutex_t *m, uint32_t depth) HIDDEN;

int __weft_pcond_init(pthread_cond_t *c, bool pshared, clockid_t clk) HIDDEN;
int __weft_pcond_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
		      const struct timespec *abs) HIDDEN;
int __weft_pcond_signal(pthread_cond_t *c) HIDDEN;
int __weft_pcond_broadcast(pthread_cond_t *c) HIDDEN;
int __weft_pcond_destroy(pthread_cond_t *c) HIDDEN;

int __weft_prwlock_rdlock(pthread_rwlock_t *l, bool try, clockid_t clk,
			  const struct timespec *abs) HIDDEN;
int __weft_prwlock_wrlock(pthread_rwlock_t *l, bool try, clockid_t clk,
			  const struct timespec *abs) HIDDEN;
int __weft_prwlock_unlock(pthread_rwlock_t *l) HIDDEN;
int __weft_prwlock_destroy(pthread_rwlock_t *l) HIDDEN;

int __weft_pbarrier_init(pthread_barrier_t *b, unsigned count) HIDDEN;
int __weft_pbarrier_wait(pthread_barrier_t *b) HIDDEN;
int __weft_pbarrier_destroy(pthread_barrier_t *b) HIDDEN;

/* The semaphore calls return 0 or an errno value (sem.c sets errno). */
int __weft_psem_init(sem_t *s, unsigned value) HIDDEN;
int __weft_psem_wait(sem_t *s, bool try, clockid_t clk, const struct timespec *abs) HIDDEN;
int __weft_psem_post(sem_t *s) HIDDEN;
int __weft_psem_getvalue(sem_t *s, int *value) HIDDEN;

#endif
