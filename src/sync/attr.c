/*
 * attr.c — the synchronisation attribute objects: pthread_mutexattr_*,
 * pthread_condattr_*, pthread_rwlockattr_*, pthread_barrierattr_*.
 *
 * Each lives in glibc's size (4 bytes; 8 for rwlockattr) and its all-zero
 * value is the default, so an init call only has to zero it.  Invariant:
 * a stored attribute only ever holds values Weft supports.  A mutex
 * attribute keeps the type, robust and protocol bits where the mutex kind
 * has them (sync.h) and the ceiling in bits of its own, so decoding it into
 * a kind is a mask and a shift.  PTHREAD_PROCESS_SHARED is stored as a
 * bit of each attribute and read back; an object initialised with it takes
 * glibc's own layout (pshared.h).  The one combination refused is a
 * process-shared PRIO_INHERIT or PRIO_PROTECT mutex (ENOTSUP, at
 * pthread_mutex_init, whatever order the attribute was set in).
 */
#include "pshared.h"

/* ---- mutexattr: one int ---- */
#define MA_TYPE_MASK 3
#define MA_ROBUST MK_ROBUST           /* the same bits as the mutex kind's */
#define MA_PI MK_PI
#define MA_PP MK_PP
#define MA_CEIL_SHIFT 8
#define MA_CEIL_MASK (0x7f << MA_CEIL_SHIFT)
#define MA_PSHARED (1 << 16)
#define MA_KNOWN (MA_TYPE_MASK | MA_ROBUST | MA_PI | MA_PP | MA_CEIL_MASK | MA_PSHARED)

static inline int *mattr(pthread_mutexattr_t *a) { return &a->__align; }

static inline bool pshared_ok(int v)
{
	return v == PTHREAD_PROCESS_PRIVATE || v == PTHREAD_PROCESS_SHARED;
}

/* An int attribute's pshared bit, set from PTHREAD_PROCESS_*. */
static int pshared_bit_set(int *word, int bit, int v)
{
	if (!pshared_ok(v))
		return EINVAL;
	*word = v == PTHREAD_PROCESS_SHARED ? (*word | bit) : (*word & ~bit);
	return 0;
}

static inline int pshared_of(int word, int bit)
{
	return (word & bit) ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
}

int __weft_mutexattr_kind(const pthread_mutexattr_t *a, int *kind) HIDDEN;
int __weft_mutexattr_kind(const pthread_mutexattr_t *a, int *kind)
{
	int v = a->__align;
	if ((v & ~MA_KNOWN) || (v & (MA_PI | MA_PP)) == (MA_PI | MA_PP))
		return EINVAL;
	if (v & MA_PSHARED) {
		/* glibc's layout and protocol; the priority protocols are not
		 * supported process-shared (docs/pshared.md) */
		if (v & (MA_PI | MA_PP))
			return ENOTSUP;
		*kind = (v & (MA_TYPE_MASK | MA_ROBUST)) | MK_PSHARED;
		return 0;
	}
	*kind = v & (MA_TYPE_MASK | MA_ROBUST | MA_PI | MA_PP);
	if (v & MA_PP) {
		/* glibc answers ENOTSUP for robust priority-protected mutexes */
		if (v & MA_ROBUST)
			return ENOTSUP;
		int c = (v & MA_CEIL_MASK) >> MA_CEIL_SHIFT;
		if (c > WEFT_PRIO_MAX)
			return EINVAL;
		if (!c)
			c = 1;                      /* unset: SCHED_FIFO's minimum, as glibc */
		*kind |= c << MK_CEIL_SHIFT;
	}
	return 0;
}

EXPORT int pthread_mutexattr_init(pthread_mutexattr_t *a)
{
	if (!a)
		return EINVAL;
	*mattr(a) = 0;
	return 0;
}

EXPORT int pthread_mutexattr_destroy(pthread_mutexattr_t *a)
{
	return a ? 0 : EINVAL;
}

EXPORT int pthread_mutexattr_gettype(const pthread_mutexattr_t *a, int *type)
{
	if (!a || !type)
		return EINVAL;
	*type = a->__align & MA_TYPE_MASK;
	return 0;
}

EXPORT int pthread_mutexattr_settype(pthread_mutexattr_t *a, int type)
{
	/* NORMAL (= DEFAULT), RECURSIVE, ERRORCHECK, and glibc's ADAPTIVE_NP */
	if (!a || type < PTHREAD_MUTEX_NORMAL || type > PTHREAD_MUTEX_ADAPTIVE_NP)
		return EINVAL;
	*mattr(a) = (*mattr(a) & ~MA_TYPE_MASK) | type;
	return 0;
}

EXPORT int pthread_mutexattr_getrobust(const pthread_mutexattr_t *a, int *robust)
{
	if (!a || !robust)
		return EINVAL;
	*robust = (a->__align & MA_ROBUST) ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED;
	return 0;
}

EXPORT int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (!a || (robust != PTHREAD_MUTEX_ROBUST && robust != PTHREAD_MUTEX_STALLED))
		return EINVAL;
	if (robust == PTHREAD_MUTEX_ROBUST)
		*mattr(a) |= MA_ROBUST;
	else
		*mattr(a) &= ~MA_ROBUST;
	return 0;
}

EXPORT int pthread_mutexattr_getpshared(const pthread_mutexattr_t *a, int *pshared)
{
	if (!a || !pshared)
		return EINVAL;
	*pshared = pshared_of(a->__align, MA_PSHARED);
	return 0;
}

EXPORT int pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int pshared)
{
	return a ? pshared_bit_set(mattr(a), MA_PSHARED, pshared) : EINVAL;
}

EXPORT int pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a, int *protocol)
{
	if (!a || !protocol)
		return EINVAL;
	int v = a->__align;
	*protocol = (v & MA_PI) ? PTHREAD_PRIO_INHERIT : (v & MA_PP) ? PTHREAD_PRIO_PROTECT
								: PTHREAD_PRIO_NONE;
	return 0;
}

EXPORT int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol)
{
	if (!a)
		return EINVAL;
	int bits;
	switch (protocol) {
	case PTHREAD_PRIO_NONE: bits = 0; break;
	case PTHREAD_PRIO_INHERIT: bits = MA_PI; break;
	case PTHREAD_PRIO_PROTECT: bits = MA_PP; break;
	default: return EINVAL;
	}
	*mattr(a) = (*mattr(a) & ~(MA_PI | MA_PP)) | bits;
	return 0;
}

/* Unset, the ceiling reads as SCHED_FIFO's minimum priority (glibc's). */
EXPORT int pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *a, int *ceiling)
{
	if (!a || !ceiling)
		return EINVAL;
	int c = (a->__align & MA_CEIL_MASK) >> MA_CEIL_SHIFT;
	*ceiling = c ? c : 1;
	return 0;
}

EXPORT int pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int ceiling)
{
	if (!a || ceiling < 1 || ceiling > WEFT_PRIO_MAX)
		return EINVAL;
	*mattr(a) = (*mattr(a) & ~MA_CEIL_MASK) | (ceiling << MA_CEIL_SHIFT);
	return 0;
}

/* ---- condattr: one int, the clock and the pshared bit ---- */
#define CA_CLOCK_MASK 0xff
#define CA_PSHARED (1 << 8)

/* cond.c decodes the attribute. */
void __weft_condattr_get(const pthread_condattr_t *a, clockid_t *clk, bool *pshared) HIDDEN;
void __weft_condattr_get(const pthread_condattr_t *a, clockid_t *clk, bool *pshared)
{
	*clk = a->__align & CA_CLOCK_MASK;
	*pshared = a->__align & CA_PSHARED;
}

EXPORT int pthread_condattr_init(pthread_condattr_t *a)
{
	if (!a)
		return EINVAL;
	a->__align = CLOCK_REALTIME;
	return 0;
}

EXPORT int pthread_condattr_destroy(pthread_condattr_t *a)
{
	return a ? 0 : EINVAL;
}

EXPORT int pthread_condattr_getclock(const pthread_condattr_t *a, clockid_t *clk)
{
	if (!a || !clk)
		return EINVAL;
	*clk = a->__align & CA_CLOCK_MASK;
	return 0;
}

EXPORT int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clk)
{
	if (!a || (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC))
		return EINVAL;
	a->__align = (a->__align & ~CA_CLOCK_MASK) | clk;
	return 0;
}

EXPORT int pthread_condattr_getpshared(const pthread_condattr_t *a, int *pshared)
{
	if (!a || !pshared)
		return EINVAL;
	*pshared = pshared_of(a->__align, CA_PSHARED);
	return 0;
}

EXPORT int pthread_condattr_setpshared(pthread_condattr_t *a, int pshared)
{
	return a ? pshared_bit_set(&a->__align, CA_PSHARED, pshared) : EINVAL;
}

/* ---- rwlockattr: glibc's { int kind; int pshared; } ---- */

struct wrwattr {
	int kind;
	int pshared;
};
_Static_assert(sizeof(struct wrwattr) == sizeof(pthread_rwlockattr_t), "rwlockattr size");

static inline struct wrwattr *rwattr(pthread_rwlockattr_t *a) { return (struct wrwattr *)a; }

int __weft_rwlockattr_kind(const pthread_rwlockattr_t *a, uint32_t *kind, bool *pshared) HIDDEN;
int __weft_rwlockattr_kind(const pthread_rwlockattr_t *a, uint32_t *kind, bool *pshared)
{
	const struct wrwattr *w = (const struct wrwattr *)a;
	if (w->kind < PTHREAD_RWLOCK_PREFER_READER_NP ||
	    w->kind > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP || !pshared_ok(w->pshared))
		return EINVAL;
	*kind = (uint32_t)w->kind;
	*pshared = w->pshared == PTHREAD_PROCESS_SHARED;
	return 0;
}

EXPORT int pthread_rwlockattr_init(pthread_rwlockattr_t *a)
{
	if (!a)
		return EINVAL;
	rwattr(a)->kind = PTHREAD_RWLOCK_DEFAULT_NP;
	rwattr(a)->pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

EXPORT int pthread_rwlockattr_destroy(pthread_rwlockattr_t *a)
{
	return a ? 0 : EINVAL;
}

EXPORT int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a, int *kind)
{
	if (!a || !kind)
		return EINVAL;
	*kind = ((const struct wrwattr *)a)->kind;
	return 0;
}

EXPORT int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind)
{
	if (!a || kind < PTHREAD_RWLOCK_PREFER_READER_NP ||
	    kind > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return EINVAL;
	rwattr(a)->kind = kind;
	return 0;
}

EXPORT int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a, int *pshared)
{
	if (!a || !pshared)
		return EINVAL;
	*pshared = ((const struct wrwattr *)a)->pshared;
	return 0;
}

EXPORT int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int pshared)
{
	if (!a || !pshared_ok(pshared))
		return EINVAL;
	rwattr(a)->pshared = pshared;
	return 0;
}

/* ---- barrierattr: one int ---- */

EXPORT int pthread_barrierattr_init(pthread_barrierattr_t *a)
{
	if (!a)
		return EINVAL;
	a->__align = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

EXPORT int pthread_barrierattr_destroy(pthread_barrierattr_t *a)
{
	return a ? 0 : EINVAL;
}

EXPORT int pthread_barrierattr_getpshared(const pthread_barrierattr_t *a, int *pshared)
{
	if (!a || !pshared)
		return EINVAL;
	*pshared = a->__align;
	return 0;
}

EXPORT int pthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared)
{
	if (!a || !pshared_ok(pshared))
		return EINVAL;
	a->__align = pshared;
	return 0;
}
