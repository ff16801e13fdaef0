/*
 * prwlock.c — process-shared reader-writer locks: glibc 2.36's layout and
 * algorithm (nptl/pthread_rwlock_common.c), kept step for step so that
 * readers and writers of this process and of an NPTL process share one
 * lock: __readers (R << 3 | RWAITING | WRLOCKED | WRPHASE), __writers
 * (waiting writers | WRHANDOVER), __wrphase_futex and __writers_futex
 * (each 0/1 | FUTEX_USED), __cur_writer (the writer's TID), __shared,
 * __flags (the kind).  glibc's file explains the state machine; the
 * comments here say only where Weft differs:
 *   - every futex wait is a shared futex wait inside the blocking bracket
 *     (pfutex.c): readers and writers of this process that must wait sleep
 *     in the kernel off the VP, so the holder — here or elsewhere — runs;
 *   - __cur_writer holds the process's TID, the same for every UT, so the
 *     holder table records which UT write-holds the lock: EDEADLK is for
 *     that UT only, and an unlock by another UT while a UT of this process
 *     write-holds it is EPERM (it cannot be one of the readers);
 *   - glibc's bare spin-waits (on an explicit hand-over another thread is
 *     about to finish) yield now and then: a UT of this process never
 *     stops between the two stores of a hand-over (Weft's text is not
 *     preempted and makes no wait there), so the wait is for another
 *     process and is short.
 * POSIX lets rwlock waits be cancellation points; glibc's are not, and
 * neither are these.
 */
#include "pshared.h"

#include <limits.h>

#define WRPHASE 1u
#define WRLOCKED 2u
#define RWAITING 4u
#define READER_SHIFT 3
#define READER_OVERFLOW (1u << 31)
#define WRHANDOVER (1u << 31)
#define FUTEX_USED 2u

#define D(l) ((l)->__data)

static inline unsigned ld(const unsigned *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline bool cas_acq(unsigned *p, unsigned *exp, unsigned nv)
{
	return __atomic_compare_exchange_n(p, exp, nv, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static inline bool cas_rel(unsigned *p, unsigned *exp, unsigned nv)
{
	return __atomic_compare_exchange_n(p, exp, nv, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
static inline bool cas_rlx(unsigned *p, unsigned *exp, unsigned nv)
{
	return __atomic_compare_exchange_n(p, exp, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
static inline int fwait(unsigned *w, unsigned val, clockid_t clk, const struct timespec *abs)
{
	return __weft_pfutex_wait(w, val, clk, abs, false);
}
static inline bool prefer_reader(pthread_rwlock_t *l)
{
	return D(l).__flags == PTHREAD_RWLOCK_PREFER_READER_NP;
}

/* Does a UT of this process other than self write-hold it? */
static struct ut *writer_here(pthread_rwlock_t *l, pid_t tid)
{
	if (__atomic_load_n(&D(l).__cur_writer, __ATOMIC_RELAXED) != tid)
		return NULL;
	return pholder_owner(l);
}

/* ---- read ---- */

static void rdunlock(pthread_rwlock_t *l)
{
	unsigned r = ld(&D(l).__readers), rnew;
	for (;;) {
		rnew = r - (1u << READER_SHIFT);
		if ((rnew >> READER_SHIFT) == 0) {
			if (rnew & WRLOCKED)
				rnew |= WRPHASE;
			rnew &= ~RWAITING;
		}
		if (cas_rel(&D(l).__readers, &r, rnew))
			break;
	}
	if (rnew & WRPHASE) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_exchange_n(&D(l).__wrphase_futex, 1, __ATOMIC_RELAXED) & FUTEX_USED)
			__weft_pfutex_wake(&D(l).__wrphase_futex, INT_MAX);
	}
	if ((r & RWAITING) != (rnew & RWAITING))
		__weft_pfutex_wake(&D(l).__readers, INT_MAX);
}

/* What every lock call checks first: the time (glibc checks it before it
 * tries), then a relock by the UT that write-holds it. */
static int enter(pthread_rwlock_t *l, bool try, clockid_t clk, const struct timespec *abs,
		 struct ut **self, pid_t *tid)
{
	*self = __weft_self_ensure();
	if (abs) {
		int e = __weft_ptime_check(clk, abs);
		if (e)
			return e;
	}
	*tid = __weft_pshared_tid();
	if (writer_here(l, *tid) == *self)
		return try ? EBUSY : EDEADLK;
	return 0;
}

int __weft_prwlock_rdlock(pthread_rwlock_t *l, bool try, clockid_t clk, const struct timespec *abs)
{
	struct ut *self;
	pid_t tid;
	int bad = enter(l, try, clk, abs, &self, &tid);
	if (bad)
		return bad;
	unsigned r;
	if (try) {
		/* glibc's tryrdlock: join a read phase, or start one from a
		 * write phase nobody holds */
		r = ld(&D(l).__readers);
		unsigned rnew;
		do {
			if ((r & WRPHASE) == 0) {
				if ((r & WRLOCKED) &&
				    D(l).__flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
					return EBUSY;
				rnew = r + (1u << READER_SHIFT);
			} else {
				if (r & WRLOCKED)
					return EBUSY;
				rnew = (r + (1u << READER_SHIFT)) ^ WRPHASE;
			}
			if (rnew >= READER_OVERFLOW)
				return EAGAIN;
		} while (!cas_acq(&D(l).__readers, &r, rnew));
		if ((r & WRPHASE) &&
		    (__atomic_exchange_n(&D(l).__wrphase_futex, 0, __ATOMIC_RELAXED) & FUTEX_USED))
			__weft_pfutex_wake(&D(l).__wrphase_futex, INT_MAX);
		return 0;
	}
	if (D(l).__flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) {
		r = ld(&D(l).__readers);
		while ((r & WRPHASE) == 0 && (r & WRLOCKED) && (r >> READER_SHIFT) > 0) {
			if (cas_rlx(&D(l).__readers, &r, r | RWAITING)) {
				while ((r = ld(&D(l).__readers)) & RWAITING) {
					int e = fwait(&D(l).__readers, r, clk, abs);
					if (e == ETIMEDOUT || e == EINVAL)
						return e;
				}
			}
		}
	}
	r = __atomic_add_fetch(&D(l).__readers, 1u << READER_SHIFT, __ATOMIC_ACQUIRE);
	while (r >= READER_OVERFLOW)
		if (cas_rlx(&D(l).__readers, &r, r - (1u << READER_SHIFT)))
			return EAGAIN;
	if ((r & WRPHASE) == 0)
		return 0;
	while ((r & WRPHASE) && !(r & WRLOCKED)) {
		if (cas_acq(&D(l).__readers, &r, r ^ WRPHASE)) {
			if (__atomic_exchange_n(&D(l).__wrphase_futex, 0, __ATOMIC_RELAXED) & FUTEX_USED)
				__weft_pfutex_wake(&D(l).__wrphase_futex, INT_MAX);
			return 0;
		}
	}
	/* wait for the explicit hand-over of the read phase */
	unsigned wpf;
	bool ready = false;
	for (;;) {
		while (((wpf = ld(&D(l).__wrphase_futex)) | FUTEX_USED) == (1 | FUTEX_USED)) {
			if (!(wpf & FUTEX_USED) && !cas_rlx(&D(l).__wrphase_futex, &wpf, wpf | FUTEX_USED))
				continue;
			int e = fwait(&D(l).__wrphase_futex, 1 | FUTEX_USED, clk, abs);
			if (e == ETIMEDOUT || e == EINVAL) {
				r = ld(&D(l).__readers);
				while (r & WRPHASE)
					if (cas_rlx(&D(l).__readers, &r, r - (1u << READER_SHIFT)))
						return e;
				__atomic_thread_fence(__ATOMIC_ACQUIRE);
				unsigned spins = 0;
				while ((ld(&D(l).__wrphase_futex) | FUTEX_USED) == (1 | FUTEX_USED))
					__weft_pshared_relax(&spins);
				ready = true;
				break;
			}
		}
		if (ready)
			break;
		if ((__atomic_load_n(&D(l).__readers, __ATOMIC_ACQUIRE) & WRPHASE) == 0)
			ready = true;
	}
	return 0;
}

/* ---- write ---- */

static void wrunlock(pthread_rwlock_t *l)
{
	__atomic_store_n(&D(l).__cur_writer, 0, __ATOMIC_RELAXED);
	struct pholder *h = __weft_pholder_find(l);
	if (h) {
		h->owner = NULL;
		__weft_pholder_tidy(h);
	}
	bool wake_writers = __atomic_exchange_n(&D(l).__writers_futex, 0, __ATOMIC_RELAXED) & FUTEX_USED;
	if (!prefer_reader(l)) {
		unsigned w = ld(&D(l).__writers);
		while (w != 0)
			if (cas_rel(&D(l).__writers, &w, w | WRHANDOVER))
				goto done;
	}
	unsigned r = ld(&D(l).__readers);
	while (!cas_rel(&D(l).__readers, &r,
			(r ^ WRLOCKED) ^ ((r >> READER_SHIFT) == 0 ? 0 : WRPHASE)))
		;
	if ((r >> READER_SHIFT) != 0 &&
	    (__atomic_exchange_n(&D(l).__wrphase_futex, 0, __ATOMIC_RELAXED) & FUTEX_USED))
		__weft_pfutex_wake(&D(l).__wrphase_futex, INT_MAX);
done:
	if (wake_writers)
		__weft_pfutex_wake(&D(l).__writers_futex, 1);
}

static int became_writer(pthread_rwlock_t *l, struct ut *self, pid_t tid)
{
	__atomic_store_n(&D(l).__cur_writer, tid, __ATOMIC_RELAXED);
	struct pholder *h = __weft_pholder_get(l, PH_RWLOCK);
	if (h)
		h->owner = self;
	return 0;
}

static int trywrlock(pthread_rwlock_t *l, struct ut *self, pid_t tid)
{
	/* glibc's trywrlock: only from an idle lock, or by taking over a
	 * write phase nobody holds */
	bool prefer_writer = !prefer_reader(l);
	unsigned r = ld(&D(l).__readers);
	while (((r & WRLOCKED) == 0) &&
	       (((r >> READER_SHIFT) == 0) || (prefer_writer && (r & WRPHASE)))) {
		if (cas_acq(&D(l).__readers, &r, r | WRPHASE | WRLOCKED)) {
			__atomic_store_n(&D(l).__writers_futex, 1, __ATOMIC_RELAXED);
			if ((r & WRPHASE) == 0)
				__atomic_store_n(&D(l).__wrphase_futex, 1, __ATOMIC_RELAXED);
			return became_writer(l, self, tid);
		}
	}
	return EBUSY;
}

int __weft_prwlock_wrlock(pthread_rwlock_t *l, bool try, clockid_t clk, const struct timespec *abs)
{
	struct ut *self;
	pid_t tid;
	int bad = enter(l, try, clk, abs, &self, &tid);
	if (bad)
		return bad;
	if (try)
		return trywrlock(l, self, tid);
	bool may_share_futex_used = false;
	unsigned r = __atomic_fetch_or(&D(l).__readers, WRLOCKED, __ATOMIC_ACQUIRE);
	if (r & WRLOCKED) {
		bool prefer_writer = !prefer_reader(l);
		if (prefer_writer)
			__atomic_fetch_add(&D(l).__writers, 1, __ATOMIC_RELAXED);
		for (;;) {
			if ((r & WRLOCKED) == 0) {
				if (cas_acq(&D(l).__readers, &r, r | WRLOCKED)) {
					if (prefer_writer)
						__atomic_fetch_add(&D(l).__writers, -1, __ATOMIC_RELAXED);
					break;
				}
				continue;
			}
			if (prefer_writer) {
				unsigned w = ld(&D(l).__writers);
				if (w & WRHANDOVER) {
					if (cas_acq(&D(l).__writers, &w, w - WRHANDOVER - 1)) {
						r = ld(&D(l).__readers);
						break;
					}
					continue;
				}
			}
			unsigned wf = ld(&D(l).__writers_futex);
			if ((wf & ~FUTEX_USED) != 1 ||
			    (wf != (1 | FUTEX_USED) &&
			     !cas_rlx(&D(l).__writers_futex, &wf, 1 | FUTEX_USED))) {
				r = ld(&D(l).__readers);
				continue;
			}
			may_share_futex_used = true;
			int e = fwait(&D(l).__writers_futex, 1 | FUTEX_USED, clk, abs);
			if (e == ETIMEDOUT || e == EINVAL) {
				if (prefer_writer) {
					unsigned w = ld(&D(l).__writers);
					while (!__atomic_compare_exchange_n(&D(l).__writers, &w,
									    w == WRHANDOVER + 1 ? 0 : w - 1,
									    true, __ATOMIC_ACQUIRE,
									    __ATOMIC_RELAXED))
						;
					if (w == WRHANDOVER + 1) {
						r = ld(&D(l).__readers);
						break;   /* handed WRLOCKED: we are the writer */
					}
				}
				return e;
			}
			r = ld(&D(l).__readers);
		}
		r |= WRLOCKED;
	}
	__atomic_store_n(&D(l).__writers_futex, 1 | (may_share_futex_used ? FUTEX_USED : 0),
			 __ATOMIC_RELAXED);
	if (r & WRPHASE)
		return became_writer(l, self, tid);
	while ((r & WRPHASE) == 0 && (r >> READER_SHIFT) == 0) {
		if (cas_acq(&D(l).__readers, &r, r | WRPHASE)) {
			__atomic_store_n(&D(l).__wrphase_futex, 1, __ATOMIC_RELAXED);
			return became_writer(l, self, tid);
		}
	}
	/* wait for the readers' explicit hand-over of the write phase */
	unsigned wpf;
	bool ready = false;
	for (;;) {
		while (((wpf = ld(&D(l).__wrphase_futex)) | FUTEX_USED) == FUTEX_USED) {
			if (!(wpf & FUTEX_USED) && !cas_rlx(&D(l).__wrphase_futex, &wpf, FUTEX_USED))
				continue;
			int e = fwait(&D(l).__wrphase_futex, FUTEX_USED, clk, abs);
			if (e == ETIMEDOUT || e == EINVAL) {
				if (!prefer_reader(l)) {
					unsigned w = ld(&D(l).__writers);
					if (w != 0) {
						unsigned wf = __atomic_exchange_n(&D(l).__writers_futex, 0,
										  __ATOMIC_RELAXED);
						while (w != 0) {
							if (cas_rel(&D(l).__writers, &w, w | WRHANDOVER)) {
								if (wf & FUTEX_USED)
									__weft_pfutex_wake(&D(l).__writers_futex, 1);
								return e;
							}
						}
						__atomic_store_n(&D(l).__writers_futex, wf, __ATOMIC_RELAXED);
					}
				}
				r = ld(&D(l).__readers);
				if ((r & WRPHASE) == 0) {
					unsigned wf = __atomic_exchange_n(&D(l).__writers_futex, 0, __ATOMIC_RELAXED);
					while ((r & WRPHASE) == 0) {
						if (cas_rel(&D(l).__readers, &r, (r ^ WRLOCKED) & ~RWAITING)) {
							if (wf & FUTEX_USED)
								__weft_pfutex_wake(&D(l).__writers_futex, 1);
							if (r & RWAITING)
								__weft_pfutex_wake(&D(l).__readers, INT_MAX);
							return ETIMEDOUT;
						}
					}
					__atomic_store_n(&D(l).__writers_futex, wf, __ATOMIC_RELAXED);
				}
				__atomic_thread_fence(__ATOMIC_ACQUIRE);
				unsigned spins = 0;
				while ((ld(&D(l).__wrphase_futex) | FUTEX_USED) == FUTEX_USED)
					__weft_pshared_relax(&spins);
				ready = true;
				break;
			}
		}
		if (ready)
			break;
		if (__atomic_load_n(&D(l).__readers, __ATOMIC_ACQUIRE) & WRPHASE)
			ready = true;
	}
	return became_writer(l, self, tid);
}

/* ---- unlock, destroy ---- */

int __weft_prwlock_unlock(pthread_rwlock_t *l)
{
	struct ut *self = __weft_self_ensure();
	pid_t tid = __weft_pshared_tid();
	if (__atomic_load_n(&D(l).__cur_writer, __ATOMIC_RELAXED) == tid) {
		struct ut *w = pholder_owner(l);
		if (w == self || !w) {
			wrunlock(l);
			return 0;
		}
		return EPERM;           /* another UT of this process writes */
	}
	if ((ld(&D(l).__readers) >> READER_SHIFT) == 0)
		return EPERM;           /* held by nobody as a reader */
	rdunlock(l);
	return 0;
}

int __weft_prwlock_destroy(pthread_rwlock_t *l)
{
	(void)l;                        /* glibc: nothing to be done */
	return 0;
}
