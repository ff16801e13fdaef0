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
 * Owns: the table of per-FILE locks.  Entries are found by the FILE's
 * address, made at a FILE's first flockfile and never freed (a FILE
 * closed and another opened at its address reuses the entry, free by
 * then).  Invariant: a chain only grows, at its head, by a release store
 * under table_lock; readers walk it with acquire loads and no lock, from
 * any UT or kernel thread.
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
			e->next = *b;
			__atomic_store_n(b, e, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&table_lock);
	return e;
}

EXPORT void flockfile(FILE *f)
{
	struct file_lock *e = lock_of(f);
	int saved = errno;
	if (e)
		pthread_mutex_lock(&e->m);
	_IO_flockfile(f);
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
	errno = saved;
	return r;
}

EXPORT void funlockfile(FILE *f)
{
	struct file_lock **b = &buckets[bucket_of(f)];
	struct file_lock *e = find(__atomic_load_n(b, __ATOMIC_ACQUIRE), f);
	int saved = errno;
	_IO_funlockfile(f);
	if (e)
		pthread_mutex_unlock(&e->m);
	errno = saved;
}
