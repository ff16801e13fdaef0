/*
 * stdio_lock.c — flockfile, ftrylockfile and funlockfile: a FILE a UT holds
 * is held against the other UTs.
 *
 * glibc's FILE lock is recursive, and it knows its owner by THREAD_SELF,
 * which every UT of a VP shares (the VP's kernel thread: runtime/tls.c).
 * By glibc's lock alone a second UT's flockfile of a FILE another UT of the
 * same VP held returned at once, as a recursive acquisition (glibc's
 * tst-stdio1; tests/stdio_flockfile_excludes_uts).  So Weft puts a lock of
 * its own in front: a recursive mutex per FILE, owned by the UT, taken
 * before glibc's lock and let go after it.  A UT that waits for it parks
 * (only the caller waits); glibc's lock still orders kernel threads, so a
 * UT of another VP, or the program's own kernel threads, wait there as
 * under NPTL.
 *
 * What this does not change: stdio calls that lock internally (printf,
 * fputs, getc...) take glibc's lock only, so on the VP of a UT that holds
 * flockfile(f) another UT's printf(f) is still let through, between the
 * holder's calls, never inside one (docs/dropin.md).
 *
 * M:N: the holder moves, and glibc's lock goes with it.  A UT that holds
 * f and parks may go on on another VP, under that VP's identity; glibc's
 * lock still named the first VP's, so the holder's next printf(f) waited
 * in the kernel for the lock it held (mn_flockfile_moves_with_ut).  Each
 * entry records its holder and depth, the UT counts the FILEs it holds
 * (ut->files_held), and when such a UT is about to run under another
 * identity the runtime calls rehomed() (the hook ut_rehomed), which makes
 * each lock it holds that names the old identity name the new one.
 *
 * Owns: the table of per-FILE locks.  Entries are found by the FILE's
 * address, made at a FILE's first flockfile and never freed (a FILE
 * closed and another opened at its address reuses the entry, free by
 * then).  Invariant: a chain only grows, at its head, by a release store
 * under table_lock; readers walk it with acquire loads and no lock, from
 * any UT or kernel thread.  An entry's holder and depth are written only
 * by the UT that holds its mutex (relaxed atomics: rehomed() reads every
 * entry's holder from another VP; it compares it with a UT that is
 * switched out, whose own writes the switch has published, so another
 * UT's concurrent write can never look like a match).
 */
#include "posix.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* glibc's own, under its other names (Weft does not define these) */
extern void _IO_flockfile(FILE *f);
extern void _IO_funlockfile(FILE *f);
extern int _IO_ftrylockfile(FILE *f);

enum { FILE_LOCK_BUCKETS = 1024 };

struct file_lock {
	FILE *f;
	pthread_mutex_t m;                /* recursive, owned by the UT */
	struct file_lock *next;
	struct ut *holder;                /* the UT that holds m, or NULL */
	uint32_t depth;                   /* its flockfile calls not yet undone */
};

/* glibc 2.36's _IO_lock_t (sysdeps/nptl/stdio-lock.h), what FILE's _lock
 * points at: a futex word, the recursion count, and the owner, compared
 * with THREAD_SELF by _IO_lock_lock.  The owner is written by glibc
 * without atomics; rehomed() writes it only for a lock its UT holds. */
struct glibc_io_lock {
	int lock;
	int cnt;
	void *owner;
};

static struct file_lock *buckets[FILE_LOCK_BUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket_of(const FILE *f)
{
	uintptr_t a = (uintptr_t)f;
	return (unsigned)((a >> 4) ^ (a >> 14)) & (FILE_LOCK_BUCKETS - 1);
}

static struct file_lock *find(struct file_lock *head, const FILE *f)
{
	for (struct file_lock *e = head; e; e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE))
		if (e->f == f)
			return e;
	return NULL;
}

/* f's lock, made at its first use; NULL when memory ran out (the caller
 * then has glibc's lock alone, as before). */
static struct file_lock *lock_of(FILE *f)
{
	struct file_lock **b = &buckets[bucket_of(f)];
	struct file_lock *e = find(__atomic_load_n(b, __ATOMIC_ACQUIRE), f);
	if (e)
		return e;
	pthread_mutex_lock(&table_lock);
	e = find(*b, f);
	if (!e) {
		e = malloc(sizeof *e);
		if (e) {
			pthread_mutexattr_t a;
			pthread_mutexattr_init(&a);
			pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
			pthread_mutex_init(&e->m, &a);
			pthread_mutexattr_destroy(&a);
			e->f = f;
			e->holder = NULL;
			e->depth = 0;
			e->next = *b;
			__atomic_store_n(b, e, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&table_lock);
	return e;
}

/* The caller holds e->m and glibc's lock once more. */
static void held_once_more(struct file_lock *e)
{
	struct ut *self = __weft_self();
	if (!self)
		return;                       /* a kernel thread Weft did not make */
	if (e->depth++ == 0) {
		__atomic_store_n(&e->holder, self, __ATOMIC_RELAXED);
		if (self->files_held < UINT8_MAX)
			self->files_held++;
	}
}

/* The caller is about to let go of e->m and glibc's lock once. */
static void held_once_less(struct file_lock *e)
{
	struct ut *self = __weft_self();
	if (!self || __atomic_load_n(&e->holder, __ATOMIC_RELAXED) != self)
		return;                       /* not the holder: the unlock fails */
	if (--e->depth == 0) {
		__atomic_store_n(&e->holder, NULL, __ATOMIC_RELAXED);
		if (self->files_held < UINT8_MAX)   /* saturated: stays, the walk only costs */
			self->files_held--;
	}
}

/* The hook ut_rehomed (rt.h): t, switched out, is about to run under
 * new_self.  Every lock of a FILE it holds that names old_self names
 * new_self.  A lock that names someone else was not taken under old_self
 * (a FILE whose locking the program turned off, _IO_USER_LOCK, names no
 * one) and is left as it is. */
void __weft_stdio_rehomed(struct ut *t, void *old_self, void *new_self)
{
	for (unsigned i = 0; i < FILE_LOCK_BUCKETS; i++)
		for (struct file_lock *e = __atomic_load_n(&buckets[i], __ATOMIC_ACQUIRE); e;
		     e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&e->holder, __ATOMIC_RELAXED) != t)
				continue;
			struct glibc_io_lock *l = (struct glibc_io_lock *)e->f->_lock;
			if (l && __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == old_self)
				__atomic_store_n(&l->owner, new_self, __ATOMIC_RELAXED);
		}
}

EXPORT void flockfile(FILE *f)
{
	struct file_lock *e = lock_of(f);
	int saved = errno;
	if (e)
		pthread_mutex_lock(&e->m);
	_IO_flockfile(f);
	if (e)
		held_once_more(e);
	errno = saved;
}

EXPORT int ftrylockfile(FILE *f)
{
	struct file_lock *e = lock_of(f);
	int saved = errno;
	if (e && pthread_mutex_trylock(&e->m) != 0) {
		errno = saved;
		return -1;
	}
	int r = _IO_ftrylockfile(f);
	if (r != 0 && e)
		pthread_mutex_unlock(&e->m);
	else if (e)
		held_once_more(e);
	errno = saved;
	return r;
}

EXPORT void funlockfile(FILE *f)
{
	struct file_lock **b = &buckets[bucket_of(f)];
	struct file_lock *e = find(__atomic_load_n(b, __ATOMIC_ACQUIRE), f);
	int saved = errno;
	if (e)
		held_once_less(e);
	_IO_funlockfile(f);
	if (e)
		pthread_mutex_unlock(&e->m);
	errno = saved;
}
