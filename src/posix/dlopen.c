/*
 * dlopen.c — dlopen, dlmopen and dlclose, so the runtime learns of modules
 * loaded while the program runs, and so a UT inside the loader is the
 * loader's one owner.
 *
 * Modules: glibc loads the module; afterwards the runtime looks again at
 * the modules with thread-local storage (a module with TLS turns per-UT TLS
 * on, and one with static TLS may need more room below each new UT's thread
 * pointer: runtime/tls.c), and at the code the tick must not preempt
 * (runtime/preempt.c; outside every Weft lock, as its lock order asks).
 *
 * The loader's lock.  glibc's dlopen and dlclose hold its recursive
 * dl_load_lock while they run the module's constructors or destructors,
 * and that code may park (a mutex, a sleep, a join).  glibc knows the
 * lock's owner by tid, and every UT of a VP shows its VP's tid:
 *  - another UT of the same VP that called dlopen meanwhile was let in, as
 *    a recursive acquisition, in the middle of the first one's load.  So a
 *    recursive mutex of Weft's, owned by the UT, comes first (loader_mutex;
 *    only the caller waits for it);
 *  - under M:N a UT that parked in a constructor may go on on another VP,
 *    under that VP's tid; its next dlsym (or dlopen) then waited in the
 *    kernel for the lock it held, and the VP stopped for good
 *    (mn_dlopen_constructor_moves).  A UT inside the loader is counted
 *    (ut->in_loader), and when it is about to run under another VP's tid
 *    the runtime calls __weft_loader_rehomed (the hook ut_rehomed), which
 *    makes the lock name the new tid if it named the old one.
 * dl_load_lock is not exported: it is a field of ld.so's _rtld_global
 * (GLIBC_PRIVATE), found once by its shape (find_load_lock).  Not found,
 * nothing is rewritten, as before.
 *
 * What stays: dlsym, dladdr and dl_iterate_phdr of another UT of the
 * loading UT's VP are still let through while that UT is parked inside
 * the loader (they take glibc's lock only).
 *
 * Owns: loader_mutex, load_lock.  load_lock is written once (the same
 * value by any racing finder) and read by the hook on any VP.
 */
#include "posix.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <link.h>
#include <pthread.h>

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef int (*dlclose_fn)(void *);

static pthread_mutex_t loader_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* glibc's dl_load_lock, or NULL; (pthread_mutex_t *)1 until looked for. */
static pthread_mutex_t *load_lock = (pthread_mutex_t *)1;

/* One of glibc's rtld locks, as _RTLD_LOCK_RECURSIVE_INITIALIZER leaves
 * it apart from its use: a recursive mutex, no robust list, no spins. */
static bool rtld_lock_shape(const pthread_mutex_t *m)
{
	return m->__data.__kind == PTHREAD_MUTEX_RECURSIVE_NP && !m->__data.__spins &&
	       !m->__data.__elision && !m->__data.__list.__prev && !m->__data.__list.__next;
}

/* glibc 2.36's struct rtld_global (sysdeps/generic/ldsodefs.h) has
 * _dl_nns (a size_t, 1 to DL_NNS = 16) followed by its three loader locks
 * in a row: _dl_load_lock, _dl_load_write_lock, _dl_load_tls_lock, each a
 * pthread_mutex_t.  No other three locks of that shape lie in a row there
 * (the namespaces' unique-symbol locks are apart), so a single match is
 * dl_load_lock; none, or more than one, and nothing is rewritten. */
static pthread_mutex_t *find_load_lock(void)
{
	char *g = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!g || !dladdr1(g, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return NULL;
	const size_t m = sizeof(pthread_mutex_t);
	pthread_mutex_t *found = NULL;
	for (size_t o = sizeof(size_t); o + 3 * m <= sym->st_size; o += sizeof(size_t)) {
		size_t nns;
		memcpy(&nns, g + o - sizeof nns, sizeof nns);
		if (nns < 1 || nns > 16)
			continue;
		bool three = true;
		for (size_t k = 0; k < 3 && three; k++)
			three = rtld_lock_shape((const pthread_mutex_t *)(g + o + k * m));
		if (!three)
			continue;
		if (found)
			return NULL;              /* not the layout described above */
		found = (pthread_mutex_t *)(g + o);
	}
	return found;
}

void __weft_loader_rehomed(pid_t old_tid, pid_t new_tid)
{
	pthread_mutex_t *l = __atomic_load_n(&load_lock, __ATOMIC_RELAXED);
	if (l == NULL || l == (pthread_mutex_t *)1)
		return;
	if (__atomic_load_n(&l->__data.__owner, __ATOMIC_RELAXED) == old_tid)
		__atomic_store_n(&l->__data.__owner, new_tid, __ATOMIC_RELAXED);
}

/* Before the loader runs: true when the caller is now counted (Weft runs,
 * and the caller is one of its threads). */
static bool loader_enter(void)
{
	if (!__weft_started)
		return false;                 /* one thread, nothing to keep apart */
	if (__atomic_load_n(&load_lock, __ATOMIC_RELAXED) == (pthread_mutex_t *)1)
		__atomic_store_n(&load_lock, find_load_lock(), __ATOMIC_RELAXED);
	int saved = errno;
	pthread_mutex_lock(&loader_mutex);
	errno = saved;
	struct ut *self = __weft_self();
	if (self && self->in_loader < UINT8_MAX)
		self->in_loader++;
	return true;
}

static void loader_leave(bool entered)
{
	if (!entered)
		return;
	struct ut *self = __weft_self();
	if (self && self->in_loader && self->in_loader < UINT8_MAX)
		self->in_loader--;            /* saturated: stays, the hook only costs */
	int saved = errno;
	pthread_mutex_unlock(&loader_mutex);
	errno = saved;
}

EXPORT void *dlopen(const char *file, int mode)
{
	static dlopen_fn real;
	if (!real)
		real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	if (!real)
		return NULL;
	bool entered = loader_enter();
	void *h = real(file, mode);
	loader_leave(entered);
	if (h && __weft_started) {
		__weft_tls_modules_changed();
		__weft_preempt_modules_changed();
	}
	return h;
}

EXPORT void *dlmopen(Lmid_t ns, const char *file, int mode)
{
	static dlmopen_fn real;
	if (!real)
		real = (dlmopen_fn)dlsym(RTLD_NEXT, "dlmopen");
	if (!real)
		return NULL;
	bool entered = loader_enter();
	void *h = real(ns, file, mode);
	loader_leave(entered);
	if (h && __weft_started) {
		__weft_tls_modules_changed();
		__weft_preempt_modules_changed();
	}
	return h;
}

/* dlclose runs the module's destructors under the same lock. */
EXPORT int dlclose(void *h)
{
	static dlclose_fn real;
	if (!real)
		real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
	if (!real)
		return -1;
	bool entered = loader_enter();
	int r = real(h);
	loader_leave(entered);
	return r;
}
