/*
 * key.c — thread-specific data: pthread_key_* and get/setspecific.
 *
 * Keys are indexes into a table of PTHREAD_KEYS_MAX entries, each with a
 * sequence number that is odd while the key exists.  A UT's value for a key
 * is tagged with the sequence it was stored under, so a value stored before
 * a key was deleted (and maybe re-created) reads as NULL without any sweep
 * over threads: delete is O(1).
 *
 * A UT's values live in blocks of 32, found through a directory; both are
 * allocated on the first setspecific that needs them and stay with the UT's
 * slot for the next UT that gets it, so steady-state create/exit does not
 * allocate.  Invariant: when a slot is released every value in it is NULL.
 *
 * Sanitizer builds only: AddressSanitizer keeps its "current thread" in a
 * key it creates before any constructor runs.  Its threads are kernel
 * threads, so a key created before the runtime starts holds one value per
 * kernel thread, not one per UT; otherwise every UT but main is an unknown
 * thread to ASan and its stack bookkeeping (no-return calls, fiber
 * switches) works on garbage bounds.  The values are kept by kernel thread
 * id (kt_values): with one value for all, a spare kernel thread's start
 * made every kernel thread ASan's one "thread", whose running stack, fake
 * stack and switch-in-progress flag two kernel threads then shared.  A
 * fork's child takes over the forking kernel thread's values (kt_forked);
 * a kernel thread Weft is making reads NULL until it sets its own (ASan
 * checks that of a new thread: the spares are made through its
 * interceptor, runtime/kthread.c); any other kernel thread with no value
 * of its own — a thread made by glibc's pthread_create behind ASan's
 * interceptor, a raw clone — reads NULL: a thread ASan does not know, as
 * it would be without Weft.  (It used to read the last value any kernel
 * thread set, a relic of one value per process: such a foreign thread
 * then ran on another kernel thread's ASan record, fake stack included,
 * and hung or was reported for uses after return it did not make.)  A
 * kernel thread's id comes from the word every switch
 * carries for it (tp.h, WEFT_ARCH_KT_WORD), not from a gettid system call
 * (1.2 us each on a machine with slow system calls: most of an ASan test's
 * time), except on a thread Weft does not know and under M:1 once a spare
 * has carried the VP (rt.h, __weft_kt_word_shared).  A task that shares
 * its parent's thread block (a vfork child, posix_spawn's) reads the
 * parent's word, and so the parent's values, as it reads its TLS.
 * Readers and writers: any kernel thread (from inside malloc, signal
 * handlers, the monitor); an entry is claimed by a CAS on its tag and
 * written only by its own kernel thread afterwards.
 */
#include "sync.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 32
#define NBLOCKS (PTHREAD_KEYS_MAX / BLOCK)

struct key_slot {
	uintptr_t seq;               /* odd: key in use */
	void (*dtor)(void *);
	bool kthread;                /* value per kernel thread (sanitizers) */
};

#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
#define KTHREAD_KEYS 1
#else
#define KTHREAD_KEYS 0
#endif

struct tsd_entry {
	void *value;
	uintptr_t seq;
};

struct tsd {
	struct tsd_entry *block[NBLOCKS];
	bool used;                   /* some value may be non-NULL */
};

static struct key_slot keys[PTHREAD_KEYS_MAX];

#if KTHREAD_KEYS
#include <sys/syscall.h>
#include <unistd.h>

#define KT_VALUES 1024u                /* (kernel thread, key) pairs, open addressing */

/* ASan asks for its current thread from its fake-stack allocator: code on
 * this path must not ask for a fake frame itself (endless recursion). */
#define KT_PATH __attribute__((no_sanitize_address))

struct kt_value {
	uint64_t tag;                /* tid << 32 | (key + 1); 0: free */
	void *value;
};

static struct kt_value kt_values[KT_VALUES];

static inline uint64_t kt_tag(pid_t tid, pthread_key_t key)
{
	return (uint64_t)(uint32_t)tid << 32 | (uint64_t)(key + 1);
}

/* The caller's entry for key, claimed if `claim` (NULL: none, or the
 * table is full). */
static KT_PATH struct kt_value *kt_entry(pthread_key_t key, bool claim)
{
	/* the kernel thread's id without a system call where Weft knows it */
	pid_t tid = __weft_arch_kt_word();
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/* a kernel thread in its birth has not claimed its word yet: its
	 * block may come from glibc's cache with a word no fork's child
	 * cleared (mn_fork_child_restarts_vps under ASan: a grandchild's new
	 * thread read the word of a thread of its parent's, and that thread's
	 * record; the word's likely writer was a carrier that loaded a
	 * reclaimed block as its VP's identity, tp0, which a fork's child no
	 * longer keeps since the twenty-fourth stop: mn.c, mn_after_fork;
	 * the test stays, as any block from glibc's cache may hold a word) */
	if (!tid || __atomic_load_n(&__weft_kt_word_shared, __ATOMIC_RELAXED) || __weft_kt_in_birth())
		tid = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	uint64_t tag = kt_tag(tid, key);
	uint32_t h = (uint32_t)((tag * 0x9e3779b97f4a7c15ull) >> 40) % KT_VALUES;
	for (uint32_t n = 0; n < KT_VALUES; n++, h = (h + 1) % KT_VALUES) {
		struct kt_value *e = &kt_values[h];
		uint64_t t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
		if (t == tag)
			return e;
		if (t == 0) {
			if (!claim)
				return NULL;
			if (__atomic_compare_exchange_n(&e->tag, &t, tag, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return e;
			if (t == tag)
				return e;
		}
	}
	return NULL;
}

/* A fork's child: its first kernel thread (its tid is the child's pid)
 * takes over the forking one's value (the other kernel threads are not in
 * the child).  So does the child of a fork by a kernel thread Weft did not
 * make (runtime/vp.c, fork_foreign), which is not the runtime's process
 * (its pid is not __weft_proc.pid): the child handler names it and its
 * forking thread apart (foreign_fork_*).  Before, ASan found no record of
 * such a child's thread at its _exit (a no-return call), asked
 * pthread_getattr_np for its stack instead and died (its CHECK, or SIGSEGV
 * on the bounds it got): guest_fork, whenever the forking thread's word
 * was clear or a kernel thread was being born at the fork.  Any other
 * kernel thread of the child is new: it reads NULL until it sets its own,
 * as in any process.  Asking the tid says which,
 * where "in its birth" (the one other test) names only one thread being
 * born at a time (kts.birth), and a child may make two at once (its VPs
 * again, its monitor). */
static KT_PATH struct kt_value *kt_forked(pthread_key_t key)
{
	if (!__weft_proc.fork_parent_tid && !__weft_proc.foreign_fork_parent_tid)
		return NULL;                  /* no fork's child: no system call */
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	pid_t parent;
	if (__weft_proc.fork_parent_tid && me == __weft_proc.pid)
		parent = __weft_proc.fork_parent_tid;
	else if (__weft_proc.foreign_fork_parent_tid && me == __weft_proc.foreign_fork_child)
		parent = __weft_proc.foreign_fork_parent_tid;
	else
		return NULL;
	uint64_t old = kt_tag(parent, key);
	for (uint32_t i = 0; i < KT_VALUES; i++)
		if (__atomic_load_n(&kt_values[i].tag, __ATOMIC_ACQUIRE) == old) {
			void *v = kt_values[i].value;
			struct kt_value *e = kt_entry(key, true);
			if (e)
				e->value = v;
			return e;
		}
	return NULL;
}

static KT_PATH void *kt_get(pthread_key_t key)
{
	struct kt_value *e = kt_entry(key, false);
	if (e)
		return e->value;
	if (__weft_kt_in_birth())
		return NULL;            /* a new thread: its own value comes next */
	e = kt_forked(key);
	return e ? e->value : NULL;
}

/* value as an integer: glibc declares pthread_setspecific's pointer
 * access(none), and passing it on as a pointer is taken for a read */
static KT_PATH void kt_set(pthread_key_t key, uintptr_t value)
{
	struct kt_value *e = kt_entry(key, true);
	if (e)
		e->value = (void *)value;
}

#endif

EXPORT int pthread_key_create(pthread_key_t *key, void (*dtor)(void *))
{
	if (!key)
		return EINVAL;
	for (unsigned i = 0; i < PTHREAD_KEYS_MAX; i++) {
		if (!(keys[i].seq & 1) && keys[i].seq + 1 != 0) {
			keys[i].seq++;
			keys[i].dtor = dtor;
			keys[i].kthread = KTHREAD_KEYS && !__weft_started;
			*key = i;
			return 0;
		}
	}
	return EAGAIN;
}

EXPORT int pthread_key_delete(pthread_key_t key)
{
	if (key >= PTHREAD_KEYS_MAX || !(keys[key].seq & 1))
		return EINVAL;
	keys[key].seq++;
	keys[key].dtor = NULL;
	return 0;
}

/*
 * Whose values the caller reads and writes, off the entries' fast path:
 * the running UT's on the carrier (a signal stack, before start-up); the
 * UT of a kernel thread back from a takeover, once it is on the VP again;
 * and for a kernel thread Weft did not make, its guest UT's, which only
 * that kernel thread touches (guest.c), so without the VP.  A guest UT is
 * made at the first value stored (two handoffs, once per thread); before
 * that every value reads NULL, as for any new thread.  The monitor has
 * none.
 */
static struct ut *values_owner(bool make)
{
	switch (__weft_where_slow()) {
	case WHERE_AWAY:
		__weft_settle_slow();
		return __weft_self();
	case WHERE_FOREIGN:
		return __weft_guest_ut(make);
	case WHERE_VP:
	case WHERE_NONE:
		break;
	}
	return __weft_self();
}

static inline void *tsd_value(const struct ut *self, pthread_key_t key)
{
	struct tsd *d = self->tsd;
	if (!d)
		return NULL;
	struct tsd_entry *b = d->block[key / BLOCK];
	if (!b)
		return NULL;
	struct tsd_entry *e = &b[key % BLOCK];
	return e->seq == keys[key].seq ? e->value : NULL;
}

/* Apart from the M:1 fast path, so that it saves no register (a tail
 * call): M:N, a takeover under way, or a thread Weft does not run. */
static __attribute__((noinline)) void *getspecific_slow(pthread_key_t key)
{
	struct ut *self = __weft_on_vp_thread(__weft_vp()) ? __weft_self() : values_owner(false);
	return self ? tsd_value(self, key) : NULL;
}

EXPORT WEFT_HOT_ENTRY void *pthread_getspecific(pthread_key_t key)
{
	/* Sanitizer runtimes call this from inside malloc, possibly while the
	 * runtime is still starting: no UT yet means no value yet.  Their
	 * keys are per kernel thread and touch no runtime state, so they are
	 * answered first, on any thread (the monitor's too, while it decides).
	 * A kernel thread back from a takeover rejoins before anything else
	 * (monitor.c). */
	if (key >= PTHREAD_KEYS_MAX)
		return NULL;
#if KTHREAD_KEYS
	if (keys[key].kthread)
		return kt_get(key);
#endif
	struct ut *self = __weft_m1_fast_self();
	if (unlikely(!self))
		return getspecific_slow(key);
	return tsd_value(self, key);
}

EXPORT WEFT_HOT_ENTRY int pthread_setspecific(pthread_key_t key, const void *value)
{
	if (key >= PTHREAD_KEYS_MAX || !(keys[key].seq & 1))
		return EINVAL;
#if KTHREAD_KEYS
	if (keys[key].kthread) {
		kt_set(key, (uintptr_t)value);
		return 0;
	}
#endif
	if (unlikely(!__weft_started))
		__weft_init();
	struct ut *self = likely(__weft_on_vp_thread(__weft_vp())) ? __weft_self() : values_owner(true);
	if (!self)
		return ENOMEM;          /* called back while the runtime starts */
	struct tsd *d = self->tsd;
	if (!d) {
		if (!value)
			return 0;
		d = self->tsd = calloc(1, sizeof *d);
		if (!d)
			return ENOMEM;
	}
	struct tsd_entry **b = &d->block[key / BLOCK];
	if (!*b) {
		if (!value)
			return 0;
		*b = calloc(BLOCK, sizeof **b);
		if (!*b)
			return ENOMEM;
	}
	struct tsd_entry *e = &(*b)[key % BLOCK];
	e->value = (void *)value;
	e->seq = keys[key].seq;
	d->used = true;
	return 0;
}

/* One destructor round: returns whether any destructor ran. */
static bool destructor_round(struct tsd *d)
{
	bool ran = false;
	for (unsigned bi = 0; bi < NBLOCKS; bi++) {
		struct tsd_entry *b = d->block[bi];
		if (!b)
			continue;
		for (unsigned i = 0; i < BLOCK; i++) {
			struct tsd_entry *e = &b[i];
			unsigned k = bi * BLOCK + i;
			if (!e->value)
				continue;
			void *v = e->value;
			void (*dtor)(void *) = keys[k].dtor;
			e->value = NULL;
			if (e->seq == keys[k].seq && dtor) {
				__weft_outcall_begin(__weft_vp());
				dtor(v);
				__weft_outcall_end();
				ran = true;
				b = d->block[bi];   /* dtor may have allocated blocks */
			}
		}
	}
	return ran;
}

void __weft_tsd_run_destructors(struct ut *t)
{
	struct tsd *d = t->tsd;
	if (!d || !d->used)
		return;
	for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++)
		if (!destructor_round(d))
			break;
}

void __weft_tsd_release(struct ut *t)
{
	struct tsd *d = t->tsd;
	if (!d || !d->used)
		return;
	for (unsigned bi = 0; bi < NBLOCKS; bi++)
		if (d->block[bi])
			memset(d->block[bi], 0, BLOCK * sizeof(struct tsd_entry));
	d->used = false;
}
