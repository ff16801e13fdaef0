/*
 * sync.h — the sync layer's view of glibc's object layouts.
 *
 * Every pthread_* object a program declares has glibc's size and, for the
 * fields that glibc's static initialisers write, glibc's offsets; Weft lays
 * its own state over the rest.  Invariants kept by every object here:
 *   - all-zero bytes are a valid, unlocked, waiter-free object (the
 *     PTHREAD_*_INITIALIZER macros are zeros apart from a kind field);
 *   - the kind fields the initialisers set stay where glibc puts them
 *     (mutex __kind at offset 16, rwlock __flags at offset 48);
 *   - a wait queue is one pointer, so each object holds its own waiters.
 * The preemption tick never interrupts Weft's own text (runtime/preempt.c),
 * so nothing here needs a lock or an atomic instruction in M:1: each
 * sequence between runtime calls runs to completion.
 */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H

#include "../runtime/rt.h"

#include <semaphore.h>

/* M:N (mn.c): may a call take an object's lock-free path, without
 * entering Weft (and so without the runtime lock)?  Its running UT if so:
 * on the VP (no takeover under way, on the running UT's stack) and nothing
 * due at the epilogue, which such a call would have run (a deferred tick
 * or signal, a debug scheduler's switch point, an armed cancel). */
static inline __attribute__((always_inline)) struct ut *__weft_mn_fast_self(void)
{
	struct vp *vp = __weft_vp();
	if (unlikely(vp->exit_hook) || __weft_where(vp) != WHERE_VP)
		return NULL;
	return vp->cur;
}

/* ---- mutex (pthread_mutex_t, 40 bytes) ---- */

/* Kind word: glibc's type values in the low bits, glibc's robust and
 * protocol bits (glibc 2.36 sysdeps/nptl/pthreadP.h), the ceiling at the
 * bits glibc's PTHREAD_MUTEX_PRIO_CEILING_SHIFT/MASK name, and Weft's
 * robust state in bits glibc never sets in __kind.  glibc itself keeps a
 * PRIO_PROTECT mutex's ceiling at those bits of __lock, which Weft's owner
 * pointer covers; no static initialiser sets either, so a mutex made by
 * pthread_mutex_init is the only way to get one, in both libraries. */
#define MK_TYPE_MASK 3                /* NORMAL(=TIMED)/RECURSIVE/ERRORCHECK/ADAPTIVE */
#define MK_ROBUST 16                  /* glibc's PTHREAD_MUTEX_ROBUST_NORMAL_NP bit */
#define MK_PI 32                      /* glibc's PTHREAD_MUTEX_PRIO_INHERIT_NP */
#define MK_PP 64                      /* glibc's PTHREAD_MUTEX_PRIO_PROTECT_NP */
#define MK_PROTOCOL (MK_PI | MK_PP)
#define MK_INCONSISTENT (1 << 10)     /* owner died; not yet made consistent */
#define MK_NOTRECOVERABLE (1 << 11)   /* unlocked while inconsistent */
#define MK_ORPHAN (1 << 12)           /* protocol mutex whose owner exited holding it */
#define MK_PSHARED 128                /* glibc's PTHREAD_MUTEX_PSHARED_BIT: the mutex is
				       * process-shared, in glibc's layout (pshared.h) */
#define MK_CEIL_SHIFT 19              /* PRIO_PROTECT: the ceiling, 1..99 */
#define MK_CEIL_MASK (0x7f << MK_CEIL_SHIFT)
/* Mutexes whose owner keeps them on its held list (robust.c). */
#define MK_HELD_LIST (MK_ROBUST | MK_PI | MK_PP)

struct wmutex {
	struct ut *owner;             /* 0: NULL iff unlocked */
	struct waitq waiters;         /* 8 */
	int kind;                     /* 16: glibc __kind */
	uint32_t count;               /* 20: recursive re-locks beyond the first */
	union {
		struct {
			struct wmutex *rnext, *rprev;   /* 24, 32: owner's held list (glibc __list) */
		};
		/* Under M:N a default mutex (kind 0, never on a held list) has
		 * its lock word here: 0 free, 1 held, 2 held and maybe waited
		 * for (mutex.c, "M:N").  0 in M:1, which never looks at it. */
		uint32_t lockw;
	};
};
_Static_assert(sizeof(struct wmutex) == sizeof(pthread_mutex_t), "mutex size");
_Static_assert(offsetof(struct wmutex, kind) == offsetof(pthread_mutex_t, __data.__kind),
	       "mutex kind offset");

static inline struct wmutex *wmutex_of(pthread_mutex_t *m) { return (struct wmutex *)m; }
static inline int wmutex_ceiling(const struct wmutex *w)
{
	return (w->kind & MK_CEIL_MASK) >> MK_CEIL_SHIFT;
}

/* Acquire for `self`, blocking until `deadline` (-1: forever).  0,
 * EOWNERDEAD, ENOTRECOVERABLE, EDEADLK, EAGAIN or ETIMEDOUT. */
int __weft_mutex_acquire(struct wmutex *w, struct ut *self, int64_t deadline) HIDDEN;
/* Release fully (recursion count ignored) by its owner; wakes the next
 * owner without switching to it when `preempt` is false. */
void __weft_mutex_release(struct wmutex *w, bool preempt) HIDDEN;
/* Is w held?  If so, mark it waited for (M:N's lock word, mutex.c), so
 * that waiters moved onto it (cond.c) are handed it.  Runtime lock. */
bool __weft_mutex_mark_waited(struct wmutex *w) HIDDEN;

/* The owner's held list — its robust and protocol mutexes (robust.c says
 * what it is for), threaded through the mutexes' rnext/rprev words. */
static inline void __weft_held_link(struct wmutex *w, struct ut *owner)
{
	struct wmutex *head = owner->robust_head;
	w->rprev = NULL;
	w->rnext = head;
	if (head)
		head->rprev = w;
	owner->robust_head = w;
}

static inline void __weft_held_unlink(struct wmutex *w, struct ut *owner)
{
	if (w->rprev)
		w->rprev->rnext = w->rnext;
	else
		owner->robust_head = w->rnext;
	if (w->rnext)
		w->rnext->rprev = w->rprev;
	w->rnext = w->rprev = NULL;
}

/* prio.c: PRIO_INHERIT and PRIO_PROTECT.  The protocols' state is each
 * UT's held list and base priority and each mutex's kind and
 * priority-ordered queue; nothing else.  None of these switches: callers
 * end with __weft_preempt_check(). */
/* What protocol mutex w lends its owner: its ceiling, or the priority of
 * its top waiter (0 with none). */
static inline int wmutex_lends(const struct wmutex *w)
{
	if (w->kind & MK_PP)
		return wmutex_ceiling(w);
	return w->waiters.head ? w->waiters.head->prio : 0;
}
/* t's boosts may have changed: recompute its priority and carry a change
 * along the chain of PRIO_INHERIT owners it waits on. */
void __weft_prio_recompute(struct ut *t) HIDDEN;
/* t (running or ready, so waiting on nothing) has just become w's owner:
 * it rises to what w lends, if that is more. */
static inline void __weft_prio_take(struct wmutex *w, struct ut *t)
{
	int p = wmutex_lends(w);
	if (p > t->prio)
		__weft_set_effective_prio(t, p, false);
}
/* t has just stopped owning a mutex that lent it `lent`: if that may have
 * been what it ran at, search again (else nothing changed). */
void __weft_prio_give_back(struct ut *t, int lent) HIDDEN;
/* t (parked, or about to park, on w's queue) waits for PRIO_INHERIT mutex
 * w: w's owner, and the owners that one waits on, inherit t's priority. */
void __weft_prio_inherit(struct wmutex *w, struct ut *t) HIDDEN;
/* A waiter left w's queue without getting w (timed out, cancelled): the
 * priority w's owner inherited may fall. */
void __weft_prio_waiter_left(struct wmutex *w) HIDDEN;
/* t's own priority changed while it may wait for a PRIO_INHERIT mutex:
 * that mutex's owner (and its chain) follows. */
void __weft_prio_waiting_changed(struct ut *t) HIDDEN;
/* Does t hold a PRIO_INHERIT or PRIO_PROTECT mutex? */
bool __weft_prio_holds(const struct ut *t) HIDDEN;
/* Wake t with `result` as __weft_unpark does, first taking its share of
 * inheritance off the owner of the mutex it waited for (pthread_cancel). */
void __weft_sync_unpark(struct ut *t, int result) HIDDEN;

/* ---- condition (pthread_cond_t, 48 bytes) ----
 * pad[4] (offset 36) is glibc's __wrefs, never set here: a condition
 * whose __wrefs has bit 0 set is a process-shared one in glibc's layout
 * (pshared.h). */
struct wcond {
	struct waitq waiters;         /* 0 */
	struct wmutex *mutex;         /* 8: the waiters' mutex, while any wait */
	int clock;                    /* 16: CLOCK_REALTIME (0) or CLOCK_MONOTONIC */
	/* absent and absent_wakes (cond.c, "Signals"): written by the
	 * condition's calls and by the runtime's wait_interrupted hook as a
	 * signal wakes a waiter (sigdeliver.c's routing: on the mainline, or
	 * in the dispatcher over the program's code holding the runtime
	 * lock); every access is in Weft's text, so under M:N under the
	 * runtime lock, and no signal handler of Weft's reads them. */
	uint32_t absent;              /* 20: waiters a signal's handler took off the queue */
	uint32_t absent_wakes;        /* 24: signals and broadcasts owed to them (<= absent) */
	uint32_t pad[5];
};
_Static_assert(sizeof(struct wcond) == sizeof(pthread_cond_t), "cond size");

/* ---- rwlock (pthread_rwlock_t, 56 bytes) ---- */
struct wrwlock {
	struct waitq readers_q;       /* 0 */
	struct waitq writers_q;       /* 8 */
	struct ut *writer;            /* 16: holder of the write lock, or NULL */
	uint32_t nreaders;            /* 24: read locks held (recursive ones count) */
	uint32_t pad0;                /* 28: glibc's __shared, 0: private (pshared.h) */
	uint64_t pad1[2];             /* 32 */
	uint32_t flags;               /* 48: glibc __flags, the rwlock kind */
	uint32_t pad2;
};
_Static_assert(sizeof(struct wrwlock) == sizeof(pthread_rwlock_t), "rwlock size");
_Static_assert(offsetof(struct wrwlock, flags) == offsetof(pthread_rwlock_t, __data.__flags),
	       "rwlock flags offset");

/* ---- barrier (pthread_barrier_t, 32 bytes) ----
 * Offset 12 is glibc's `shared` field, never set here: a barrier whose
 * word there is not 0 is a process-shared one in glibc's layout
 * (pshared.h). */
struct wbarrier {
	struct waitq waiters;
	uint32_t count;               /* 8: UTs per round; 0: not initialised */
	int shared;                   /* 12: glibc's `shared`, 0: private */
	uint32_t arrived;             /* 16: UTs waiting in this round */
	uint32_t round;               /* 20: rounds completed (a waiter woken by a signal
				       * tells whether its round ended meanwhile) */
	uint64_t pad;
};
_Static_assert(sizeof(struct wbarrier) == sizeof(pthread_barrier_t), "barrier size");

/* ---- semaphore (sem_t, 32 bytes) ----
 * Offset 8 is glibc's `private` field, never set here: a semaphore whose
 * word there is not 0 is a process-shared one in glibc's layout, made by
 * sem_init(s, 1, v) or by glibc's sem_open (pshared.h). */
struct wsem {
	struct waitq waiters;
	int private;                  /* 8: glibc's `private`, 0: private */
	uint32_t value;               /* 12 */
	uint64_t pad[2];
};
_Static_assert(sizeof(struct wsem) == sizeof(sem_t), "sem size");

/* ---- what the runtime's hooks call (posix/hooks.c) ---- */
void __weft_tsd_run_destructors(struct ut *t) HIDDEN;     /* key.c */
void __weft_tsd_release(struct ut *t) HIDDEN;             /* key.c */
void __weft_once_abandon(struct ut *t) HIDDEN;            /* once.c */
void __weft_robust_owner_died(struct ut *t) HIDDEN;       /* robust.c */
extern uint32_t __weft_pholder_records HIDDEN;            /* pfutex.c */
/* The exit's inline test: may t hold a mutex whose owner's death must be
 * marked (one on its held list, or a process-shared one: any record in
 * pfutex.c's table)?  Most exits hold none, and skip the calls. */
static inline bool __weft_robust_may_hold(const struct ut *t)
{
	return t->robust_head != NULL || __weft_pholder_records != 0;
}
struct ut *__weft_wait_holder(const struct ut *t) HIDDEN; /* describe.c */
void __weft_wait_interrupted(enum wait_kind kind, void *obj) HIDDEN;  /* cond.c */
/* pthread_cancel's side of a process-shared wait (pfutex.c): t, blocked in
 * a system call, may sleep on a shared futex at a cancellation point (a
 * condition or semaphore wait): wake it so that it sees the request. */
void __weft_pfutex_cancel_kick(struct ut *t) HIDDEN;

/* The UT behind handle h if it has not exited, else NULL (xinu.c). */
struct ut *__weft_live_ut(pthread_t h) HIDDEN;

/* The caller's UT, starting the runtime if this is the first Weft call. */
static inline struct ut *__weft_self_ensure(void)
{
	__weft_ensure();
	return __weft_self();
}

/* A timed call's deadline: EINVAL for a NULL or malformed time or a clock
 * other than REALTIME and MONOTONIC. */
static inline int __weft_sync_deadline(clockid_t clk, const struct timespec *abs, int64_t *out)
{
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	return __weft_abs_deadline(clk, abs, out);
}

#endif
