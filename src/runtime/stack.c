/*
 * stack.c — UT stacks: their sizes, their guards, and the pool that gives
 * address space back.
 *
 * Geometry.  A stack is `guard` bytes of guard below `size` bytes of stack,
 * both rounded up to whole pages.  stack_geom() is the one place where that
 * arithmetic is done: a size or guard whose rounding, or whose sum, does not
 * fit in size_t is EINVAL, as it is for glibc's pthread_create; a span that
 * fits size_t but not the address space fails to map, EAGAIN, as with glibc.
 * Nothing else here adds or rounds a caller's size.
 *
 * Guards.  A guard is what Weft puts below a stack it owns:
 *   - up to GUARD_MARK_MAX, MADV_GUARD_INSTALL markers (Linux 6.13+): they
 *     live in the page tables and do not split the mapping, so a million
 *     guarded stacks cost a few thousand kernel mappings, not two million
 *     (vm.max_map_count is 65530 here);
 *   - above it, the guard part of the mapping is mapped PROT_NONE from the
 *     start and only the stack part made writable: no page table is touched
 *     whatever the guard's size (markers over a terabyte would take seconds
 *     and gigabytes of page tables), at the cost of one more mapping;
 *   - older kernels get mprotect guards while the mapping budget lasts, then
 *     a canary word at `lo`, checked at every switch (a read that cannot
 *     fault: the program may have protected that page since).
 * A stack with guardsize 0, or one the program supplied
 * (pthread_attr_setstack), belongs to the program below its top: no guard,
 * no canary and no overflow report.  Programs such as the JVM put guard zones
 * of their own at the low end of their threads' stacks and handle the faults
 * there themselves.
 *
 * The pool.  Stacks are pooled by size class: a class is one geometry
 * (size and guard), and pools[0] is the default attributes'.  A program
 * that sets a stack size of its own (64 KiB for a million small threads,
 * 8 MiB for deep recursion) gets its stacks from a class of that geometry,
 * made at the first such create: POOL_CLASSES classes at once, the least
 * recently used one retired to make room for another.  Not pooled, each a
 * mapping of its own unmapped when its UT is gone: stacks with no guard
 * (the program owns their low end; it may have remapped or protected pages
 * there, which the next UT must not inherit), guards above GUARD_MARK_MAX,
 * and spans above POOL_SPAN_MAX but for the default's.
 *
 * A class's stacks are cut from slabs: one mapping of up to SLAB_STACKS
 * stacks, each with its guard below it.  A slab knows which of its stacks
 * are free (a bitmap) and which were never handed out (their guards are
 * installed at first use).  A class's slabs with a free stack are on its
 * list, the slab a stack last came back to first, so the create after a
 * join takes the very stack the join freed: no system call, no allocation.
 * A slab whose stacks have all come back is unmapped — the process gives
 * its address space back — except for `warm` of them per class
 * (WARM_EMPTY_SLABS for the default's, WARM_EMPTY_OTHER for the others)
 * kept for the next burst.  Free stacks beyond POOL_WARM_BYTES give their
 * pages back (MADV_DONTNEED) as they return, so a parked pool does not
 * hold memory either.
 *
 * Invariants: a pooled stack is in exactly one of {free in its slab, in use};
 * a slab is on its class's list iff it is live, not retired and has a free
 * stack; a class's `empty_slabs` counts its listed slabs whose stacks are
 * all free; `pool_free_bytes` counts the bytes of the free stacks of listed
 * slabs that have been used (their pages may be resident).  A retired slab
 * (its class was retired: the default changed, or the class made room for
 * another) belongs to no class: it serves no new UT and is unmapped when
 * its last stack comes back.  Pages are committed only when touched
 * (MAP_NORESERVE, no huge pages), so an idle UT costs the page or two it
 * used.
 *
 * Valgrind.  Under Valgrind every stack Weft hands out, and every stack a
 * program gives a UT, is registered with it while it is a UT's (vg_id), so
 * memcheck takes a switch between two of them for a switch and not for a
 * giant frame (it would mark everything between the two stack pointers
 * unaddressable, or undefined).  A stack handed out is undefined (a new
 * UT's stale contents from the last one are not initialised data) and its
 * guard unaddressable (an overflow is reported before it faults); a stack
 * given back is unaddressable (a dangling pointer into a dead UT's frames
 * is reported).  Each marks at most the VG_MARK_MAX bytes nearest the top
 * or, for a guard, nearest the stack: memcheck walks a range 64 KiB at a
 * time, and stacks may be terabytes.
 */
#include "rt.h"
#include "../arch/arch.h"
#include "../arch/valgrind_req.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* A UT that exits leaves its last frames' ASan redzones poisoned on its
 * stack (they never return); the next UT to get the stack would trip on
 * them.  Sanitizer builds clean a stack's shadow when it is released: the
 * top 64 MiB of it, where frames are (cleaning the shadow of a 64 TiB stack
 * would take minutes). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SAN_UNPOISON_MAX ((size_t)64 << 20)
#define UNPOISON_STACK(s)                                                              \
	do {                                                                           \
		size_t n_ = (size_t)((s)->hi - (s)->lo);                                \
		n_ = n_ < SAN_UNPOISON_MAX ? n_ : SAN_UNPOISON_MAX;                     \
		ASAN_UNPOISON_MEMORY_REGION((s)->hi - n_, n_);                          \
	} while (0)
#else
#define UNPOISON_STACK(s) ((void)(s))
#endif

#define VG_MARK_MAX ((size_t)64 << 20)
#define VG_TOP_SLACK 1024

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define DEFAULT_STACK_SIZE (256u * 1024u)
#define SLAB_STACKS 64u                 /* stacks per slab at most (one bitmap word) */
#define SLAB_BYTES (32u << 20)          /* fewer stacks per slab for large defaults */
#define WARM_EMPTY_SLABS 2u             /* empty slabs of the default's kept for the next burst */
#define WARM_EMPTY_OTHER 1u             /* and of each other size class */
#define POOL_WARM_BYTES ((size_t)256 << 20) /* free stacks' bytes that keep their pages */
#define POOL_CLASSES 8u                 /* size classes pooled at once (the default's: 0) */
#define POOL_SPAN_MAX ((size_t)64 << 20) /* larger stacks (but the default's) are mapped each */
#define GUARD_MARK_MAX (1u << 20)       /* larger guards are PROT_NONE mappings */
#define MAP_RESERVE 4096u               /* mappings left for the program itself */
#define SLABS_MAX (1u << 24)            /* slab table entries */
#define CANARY 0x57656674c0ffee11ull    /* "Weft" */

enum guard_mode { GUARD_INSTALL, GUARD_MPROTECT, GUARD_NONE };

struct stack_geom {
	size_t size, guard, span;       /* page multiples; span = guard + size */
};

struct slab {
	uint64_t free;                  /* bit i: stack i is not in use */
	uint64_t all;                   /* bit i: stack i exists */
	uint64_t fresh;                 /* bit i: stack i was never handed out */
	char *base;                     /* the mapping; NULL: this entry is unused */
	size_t stride;                  /* one stack with its guard page */
	size_t size;                    /* its stacks' size */
	uint32_t prev, next;            /* the list (slab numbers, 0 ends it); next also
					 * links unused entries */
	bool listed, retired;
	uint64_t bare;                  /* bit i: stack i could not be guarded */
	uint64_t zeroed;                /* bit i: stack i's pages read as zero (never
					 * used, or given back with MADV_DONTNEED) */
	uint32_t nstacks;
	uint32_t mprotected;            /* mprotect guards: mappings owed to the budget */
	uint8_t pool;                   /* its size class (pools[]) while not retired */
};

/* A size class: the slabs of one geometry.  pools[0] is the default
 * attributes' (the fast path's); the others are made as programs ask for
 * other sizes, and the least recently used one is retired to make room. */
struct pool {
	struct stack_geom g;
	uint32_t avail;                 /* head of the list of its slabs with a free stack */
	uint32_t empty_slabs;           /* its listed slabs with every stack free */
	uint32_t warm;                  /* how many of those it keeps mapped */
	uint64_t used;                  /* pool_clock at its last use (LRU) */
	bool live;
};

static size_t page_size;
static size_t default_size = DEFAULT_STACK_SIZE;   /* as set: maybe absurd */
static struct stack_geom default_geom;
static int default_err = -1;                       /* -1: default_geom not yet made */
static enum guard_mode guard_mode = GUARD_INSTALL;
static long map_budget;                 /* mappings we may still add (mprotect mode) */

static struct slab *slabs;              /* slab number n is slabs[n - 1] */
static uint32_t nslabs, unused_slab;    /* entries made; first unused entry's number */
static struct pool pools[POOL_CLASSES];
static uint64_t pool_clock;             /* counts other-class lookups (LRU) */
static size_t pool_free_bytes;          /* bytes of used free stacks in listed slabs */

size_t __weft_page_size(void)
{
	if (unlikely(!page_size))
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	return page_size;
}

/* The page-rounded size and guard of a stack and their sum: EINVAL when any
 * of them does not fit in size_t. */
static int stack_geom(size_t size, size_t guard, struct stack_geom *g)
{
	size_t pm = __weft_page_size() - 1;
	if (__builtin_add_overflow(size, pm, &g->size) || __builtin_add_overflow(guard, pm, &g->guard))
		return EINVAL;
	g->size &= ~pm;
	g->guard &= ~pm;
	if (__builtin_add_overflow(g->size, g->guard, &g->span))
		return EINVAL;
	return 0;
}

/* The default attributes' geometry, and its class pools[0] (its slabs, if
 * it had some, were retired when the default changed). */
static __attribute__((noinline)) int default_pool_init(void)
{
	int e = stack_geom(default_size, __weft_page_size(), &default_geom);
	if (e == 0)
		pools[0] = (struct pool){ .g = default_geom, .warm = WARM_EMPTY_SLABS, .live = true };
	return e;
}

static inline const struct stack_geom *default_geometry(int *err)
{
	if (unlikely(default_err < 0))
		default_err = default_pool_init();
	*err = default_err;
	return &default_geom;
}

size_t __weft_stack_default_size(void) { return default_size; }

/* The geometry of a stack of `size` (0: the default) and `guard`: 0 or
 * EINVAL (*d: the default's, and whether it is usable, for the caller). */
static int requested_geom(size_t size, size_t guard, struct stack_geom *g, const struct stack_geom **d,
			  int *derr)
{
	*d = default_geometry(derr);
	if (size == 0) {
		if (*derr)
			return *derr;
		size = (*d)->size;
	}
	return stack_geom(size, guard, g) != 0 ? EINVAL : 0;
}

int __weft_stack_check(size_t size, size_t guard)
{
	struct stack_geom g;
	const struct stack_geom *d;
	int derr;
	return requested_geom(size, guard, &g, &d, &derr);
}

/* By raw read and close: fclose is the io layer's (rt.h, the runtime's own
 * file I/O). */
static long read_max_map_count(void)
{
	long v = 65530;
	char buf[32];
	int fd = (int)__weft_kopen("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0) {
		long n = __weft_kread(fd, buf, sizeof buf - 1);
		__weft_kclose(fd);
		if (n > 0) {
			buf[n] = 0;
			char *end;
			long r = strtol(buf, &end, 10);
			if (end != buf)
				v = r;
		}
	}
	return v;
}

/* Guard [p, p+len) with markers, or with mprotect (*mprotected set) while
 * the mapping budget lasts.  False when the stack must go unguarded. */
static bool install_guard(char *p, size_t len, bool *mprotected)
{
	*mprotected = false;
	if (guard_mode == GUARD_INSTALL) {
		if (madvise(p, len, MADV_GUARD_INSTALL) == 0)
			return true;
		guard_mode = GUARD_MPROTECT;
		map_budget = read_max_map_count() - MAP_RESERVE;
	}
	if (guard_mode == GUARD_MPROTECT) {
		if (map_budget >= 2 && mprotect(p, len, PROT_NONE) == 0) {
			map_budget -= 2;
			*mprotected = true;
			return true;
		}
		guard_mode = GUARD_NONE;
	}
	return false;
}

/* A mapping of len bytes: writable, or PROT_NONE to be opened piecewise. */
static char *map_region(size_t len, bool writable)
{
	char *p = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* THP "always" would otherwise commit 2 MiB for a stack's first touch. */
static void no_huge_pages(char *p, size_t len)
{
	madvise(p, len, MADV_NOHUGEPAGE);
}

/* Weft wanted a guard below s and could not have one: the guard's room
 * stays reserved (s->guard), unprotected, and a canary marks the bottom. */
static void set_canary(struct ut_stack *s)
{
	s->canary = true;
	*(volatile uint64_t *)s->lo = CANARY;
}

/*
 * Read with process_vm_readv, which answers EFAULT instead of faulting: a
 * program may since have protected the page the canary is on (guard zones
 * of its own), and a plain load would then kill it, or reach the program's
 * own SIGSEGV handler from inside Weft.  An unreadable canary page is the
 * program's business, not an overflow.  Only stacks Weft could not guard
 * (old kernels, mapping budget spent) have a canary, so the system call is
 * paid only there.
 */
bool __weft_stack_canary_ok(const struct ut_stack *s)
{
	uint64_t v = 0;
	struct iovec here = { &v, sizeof v }, there = { s->lo, sizeof v };
	/* the raw call: syscall() is Weft's own entry point, which may switch */
	long n = __weft_raw_syscall6(SYS_process_vm_readv, (long)getpid(), (long)&here, 1, (long)&there, 1, 0);
	if (n != (long)sizeof v)
		return true;
	return v == CANARY;
}

/* ---- the slab list ---- */

static inline struct slab *slab_at(uint32_t n) { return &slabs[n - 1]; }

static inline void list_remove(uint32_t n)
{
	struct slab *b = slab_at(n);
	if (!b->listed)
		return;
	if (b->prev)
		slab_at(b->prev)->next = b->next;
	else
		pools[b->pool].avail = b->next;
	if (b->next)
		slab_at(b->next)->prev = b->prev;
	b->listed = false;
}

static inline void list_push(uint32_t n)
{
	struct slab *b = slab_at(n);
	struct pool *p = &pools[b->pool];
	b->prev = 0;
	b->next = p->avail;
	if (p->avail)
		slab_at(p->avail)->prev = n;
	p->avail = n;
	b->listed = true;
}

/* Free stacks of b that have been used (their pages may be resident). */
static inline uint32_t used_free(const struct slab *b)
{
	return (uint32_t)__builtin_popcountll(b->free & ~b->fresh);
}

/* Take b out of the pool's accounts: off the list and the counters. */
static void slab_forget(uint32_t n)
{
	struct slab *b = slab_at(n);
	if (!b->listed)
		return;
	list_remove(n);
	if (b->free == b->all)
		pools[b->pool].empty_slabs--;
	pool_free_bytes -= used_free(b) * b->size;
}

/* Unmap a slab (all its stacks free, already forgotten). */
static void slab_release(uint32_t n)
{
	struct slab *b = slab_at(n);
	for (uint32_t i = 0; i < b->nstacks; i++)
		__weft_lsan_unroot(b->base + (size_t)i * b->stride + (b->stride - b->size), b->size);
	munmap(b->base, b->stride * b->nstacks);
	if (guard_mode == GUARD_MPROTECT)
		map_budget += 2 * (long)b->mprotected;
	b->base = NULL;
	b->next = unused_slab;
	unused_slab = n;
}

/* Retire class k: its slabs serve no new UT; those with no stack in use
 * are unmapped now, the others when their last stack comes back. */
static void pool_retire(uint32_t k)
{
	for (uint32_t n = 1; n <= nslabs; n++) {
		struct slab *b = slab_at(n);
		if (!b->base || b->retired || b->pool != k)
			continue;
		slab_forget(n);
		b->retired = true;
		if (b->free == b->all)
			slab_release(n);
	}
	pools[k].live = false;
	pools[k].avail = 0;
	pools[k].empty_slabs = 0;
}

/*
 * The class of a geometry other than the default's: its number, made if
 * need be (retiring the least recently used class when all are taken), or
 * 0 when such stacks are not pooled: unguarded ones (the program owns their
 * low end and may have protected or remapped pages there, which the next
 * UT must not inherit), guards too large for markers, and spans above
 * POOL_SPAN_MAX (address space a pool would hold on to).
 */
static uint32_t pool_for(const struct stack_geom *g)
{
	if (g->guard == 0 || g->guard > GUARD_MARK_MAX || g->span > POOL_SPAN_MAX)
		return 0;
	uint32_t victim = 1;
	for (uint32_t k = 1; k < POOL_CLASSES; k++) {
		struct pool *p = &pools[k];
		if (p->live && p->g.size == g->size && p->g.guard == g->guard) {
			p->used = ++pool_clock;
			return k;
		}
		if (pools[victim].live && (!p->live || p->used < pools[victim].used))
			victim = k;
	}
	if (pools[victim].live)
		pool_retire(victim);
	pools[victim] = (struct pool){ .g = *g, .warm = WARM_EMPTY_OTHER, .used = ++pool_clock, .live = true };
	return victim;
}

/* A table entry for a new slab: its number, or 0 out of memory. */
static uint32_t slab_entry(void)
{
	if (unused_slab) {
		uint32_t n = unused_slab;
		unused_slab = slab_at(n)->next;
		return n;
	}
	uint32_t old = nslabs;
	if (old >= SLABS_MAX)
		return 0;
	uint32_t cap = old ? old * 2 : 16;
	struct slab *v = realloc(slabs, (size_t)cap * sizeof *v);
	if (!v)
		return 0;
	slabs = v;
	for (uint32_t i = cap; i > old + 1; i--) {
		slabs[i - 1].base = NULL;
		slabs[i - 1].next = unused_slab;
		unused_slab = i;
	}
	nslabs = cap;
	return old + 1;
}

/* Map a slab of class k's stacks and put it at the head of its list.
 * Near the end of the address space, fewer stacks, down to one. */
static __attribute__((noinline)) int new_slab(uint32_t k)
{
	const struct stack_geom *g = &pools[k].g;
	uint32_t count = SLAB_STACKS;
	if (g->span > SLAB_BYTES / SLAB_STACKS)
		count = g->span >= SLAB_BYTES ? 1 : (uint32_t)(SLAB_BYTES / g->span);
	char *p;
	while (!(p = map_region(g->span * count, true)))
		if ((count /= 2) == 0)
			return EAGAIN;
	uint32_t n = slab_entry();
	if (!n) {
		munmap(p, g->span * count);
		return EAGAIN;
	}
	no_huge_pages(p, g->span * count);
	/* UTs' locals (lsan_roots.c): each stack, not its guard, which
	 * LeakSanitizer's scan would read */
	for (uint32_t i = 0; i < count; i++)
		__weft_lsan_root(p + (size_t)i * g->span + g->guard, g->size);
	struct slab *b = slab_at(n);
	uint64_t all = count == 64 ? ~0ull : (1ull << count) - 1;
	*b = (struct slab){ .base = p, .stride = g->span, .size = g->size, .free = all,
			    .all = all, .fresh = all, .zeroed = all, .nstacks = count, .pool = (uint8_t)k };
	list_push(n);
	pools[k].empty_slabs++;
	__weft_vp()->stat.stacks_mapped += count;
	return 0;
}

/* A stack handed out for the first time, one whose pages were given back,
 * or one that has a canary. */
static __attribute__((noinline)) void pooled_first_use(struct ut_stack *s, struct slab *b, uint64_t bit)
{
	if (b->zeroed & bit) {
		b->zeroed &= ~bit;
		s->zeroed = true;
	}
	if (b->fresh & bit) {
		bool mp;
		b->fresh &= ~bit;
		if (!install_guard(s->lo - s->guard, s->guard, &mp))
			b->bare |= bit;
		b->mprotected += mp;
		pool_free_bytes += b->size;    /* it was not counted */
		__weft_vp()->stat.stacks_reused--;
	}
	if (b->bare & bit)
		set_canary(s);
}

static inline __attribute__((always_inline)) int pooled_get(struct ut_stack *s, uint32_t k)
{
	struct pool *p = &pools[k];
	if (unlikely(!p->avail)) {
		int e = new_slab(k);
		if (e)
			return e;
	}
	uint32_t n = p->avail;
	struct slab *b = slab_at(n);
	uint64_t f = b->free;
	unsigned i = (unsigned)__builtin_ctzll(f);
	uint64_t bit = f & -f;
	if (unlikely(f == b->all))
		p->empty_slabs--;
	b->free = f ^ bit;
	if (unlikely(f == bit))
		list_remove(n);
	size_t guard = b->stride - b->size;
	char *lo = b->base + (size_t)i * b->stride + guard;
	*s = (struct ut_stack){ .lo = lo, .hi = lo + b->size, .guard = guard, .kind = STACK_POOLED,
			       .index = (uint8_t)i, .slab = n };
	pool_free_bytes -= b->size;
	__weft_vp()->stat.stacks_reused++;
	if (unlikely((b->fresh | b->bare | b->zeroed) & bit))
		pooled_first_use(s, b, bit);
	return 0;
}

/* A stack back in a retired slab, or the last one back in its slab. */
static __attribute__((noinline)) void pooled_put_last(struct ut_stack *s, uint32_t n, uint64_t f)
{
	struct slab *b = slab_at(n);
	if (b->retired) {
		b->free = f;
		if (f == b->all)
			slab_release(n);
		else
			madvise(s->lo, (size_t)(s->hi - s->lo), MADV_DONTNEED);
		return;
	}
	/* Enough empty slabs are kept: give the address space back. */
	slab_forget(n);
	b->free = f;
	slab_release(n);
}

static __attribute__((noinline)) void pool_trim(struct ut_stack *s, struct slab *b)
{
	if (madvise(s->lo, (size_t)(s->hi - s->lo), MADV_DONTNEED) == 0)
		b->zeroed |= 1ull << s->index;
}

/* Every case of a stack's return but the common ones: its slab retired,
 * emptied with enough empty slabs kept already, not at the head of its
 * class's list, or the pool holding enough warm pages. */
static __attribute__((noinline)) void pooled_put_slow(struct ut_stack *s, uint32_t n, uint64_t f)
{
	struct slab *b = slab_at(n);
	if (b->retired) {
		pooled_put_last(s, n, f);
		return;
	}
	struct pool *p = &pools[b->pool];
	if (f == b->all) {
		if (p->empty_slabs >= p->warm) {
			pooled_put_last(s, n, f);
			return;
		}
		p->empty_slabs++;
	}
	b->free = f;
	if (pool_free_bytes >= POOL_WARM_BYTES)
		pool_trim(s, b);
	pool_free_bytes += b->size;
	if (p->avail != n) {
		list_remove(n);
		list_push(n);
	}
}

/* The common returns: a stack back to the slab at the head of its class's
 * list, which keeps other stacks in use or becomes an empty slab the pool
 * keeps (a program that makes one thread at a time and joins it empties
 * its slab at every join). */
static inline void pooled_put(struct ut_stack *s)
{
	uint32_t n = s->slab;
	struct slab *b = slab_at(n);
	struct pool *p = &pools[b->pool];
	uint64_t f = b->free | 1ull << s->index;
	bool emptied = f == b->all;
	if (unlikely(b->retired | (pool_free_bytes >= POOL_WARM_BYTES) | (p->avail != n) |
		     (emptied & (p->empty_slabs >= p->warm)))) {
		pooled_put_slow(s, n, f);
		return;
	}
	p->empty_slabs += emptied;
	b->free = f;
	pool_free_bytes += b->size;
}

void __weft_stack_set_default_size(size_t size)
{
	int err;
	const struct stack_geom *old = default_geometry(&err);
	struct stack_geom g;
	if (!err && stack_geom(size, __weft_page_size(), &g) == 0 && g.size == old->size) {
		default_size = size;           /* the same stacks: pools[0] serves on */
		return;
	}
	/* Slabs cut at the old size cannot serve the new one: retire them
	 * before pools[0] is made again for the new size, and any other class
	 * of the new default's geometry (pools[0] serves it now). */
	if (!err)
		pool_retire(0);
	default_size = size;
	default_err = -1;
	const struct stack_geom *d = default_geometry(&err);
	for (uint32_t k = 1; !err && k < POOL_CLASSES; k++)
		if (pools[k].live && pools[k].g.size == d->size && pools[k].g.guard == d->guard)
			pool_retire(k);
}

static int mapped_get(struct ut_stack *s, const struct stack_geom *g)
{
	bool marked = g->guard <= GUARD_MARK_MAX;
	char *p = map_region(g->span, marked);
	if (!p)
		return EAGAIN;
	char *lo = p + g->guard;
	if (!marked && mprotect(lo, g->size, PROT_READ | PROT_WRITE) != 0) {
		munmap(p, g->span);
		return EAGAIN;
	}
	/* the whole mapping, or the writable one: advice on part of a
	 * mapping would split it */
	if (marked)
		no_huge_pages(p, g->span);
	else
		no_huge_pages(lo, g->size);
	s->kind = STACK_MAPPED;
	s->zeroed = true;
	s->lo = lo;
	s->hi = lo + g->size;
	s->guard = g->guard;
	__weft_lsan_root(lo, g->size);          /* its UT's locals, not the guard (lsan_roots.c) */
	if (g->guard && marked) {
		bool mp;
		if (!install_guard(p, g->guard, &mp))
			set_canary(s);
		s->mprotected = mp;
	}
	__weft_vp()->stat.stacks_mapped++;
	return 0;
}

static __attribute__((noinline)) int stack_get_slow(struct ut_stack *s, size_t size, size_t guard)
{
	struct stack_geom g;
	const struct stack_geom *d;
	int err;
	int e = requested_geom(size, guard, &g, &d, &err);
	if (e)
		return e;
	if (!err && g.size == d->size && g.guard == d->guard)
		return pooled_get(s, 0);
	uint32_t k = pool_for(&g);
	if (k)
		return pooled_get(s, k);
	return mapped_get(s, &g);
}

/* ---- Valgrind ---- */

static size_t vg_cap(size_t n) { return n < VG_MARK_MAX ? n : VG_MARK_MAX; }

void __weft_stack_vg_register(struct ut_stack *s)
{
	size_t n = vg_cap((size_t)(s->hi - s->lo));
	/* VG_TOP_SLACK past the top: Valgrind's unwinder gives up after one
	 * frame when the stack pointer is within 512 bytes of its stack's
	 * end, and a UT's first frames are there.  What lies above a stack
	 * is the next one's guard, or memory a stack pointer never reaches
	 * but in an overflow. */
	s->vg_id = (uint32_t)VALGRIND_STACK_REGISTER(s->lo, s->hi + VG_TOP_SLACK - 1);
	if (s->kind == STACK_USER)
		return;                /* the program's memory: its contents too */
	VALGRIND_MAKE_MEM_UNDEFINED(s->hi - n, n);
	size_t g = vg_cap(s->guard);
	VALGRIND_MAKE_MEM_NOACCESS(s->lo - g, g);
}

static __attribute__((noinline)) void vg_deregister(struct ut_stack *s)
{
	VALGRIND_STACK_DEREGISTER(s->vg_id);
	s->vg_id = 0;
	if (s->kind == STACK_POOLED || s->kind == STACK_MAPPED) {
		size_t n = vg_cap((size_t)(s->hi - s->lo));
		VALGRIND_MAKE_MEM_NOACCESS(s->hi - n, n);
	}
}

static __attribute__((noinline)) int stack_get_valgrind(struct ut_stack *s, size_t size, size_t guard)
{
	memset(s, 0, sizeof *s);
	int e = stack_get_slow(s, size, guard);
	if (e == 0)
		__weft_stack_vg_register(s);
	return e;
}

int __weft_stack_get(struct ut_stack *s, size_t size, size_t guard)
{
	if (unlikely(__weft_arch_valgrind))
		return stack_get_valgrind(s, size, guard);
	/* What the default attributes ask (default_err is 0 only once the
	 * default geometry, and so page_size, are known). */
	if (likely(default_err == 0 && (size == default_size || size == 0) && guard == page_size))
		return pooled_get(s, 0);
	memset(s, 0, sizeof *s);
	return stack_get_slow(s, size, guard);
}

int __weft_stack_map(struct ut_stack *s, size_t size, size_t guard)
{
	struct stack_geom g;
	const struct stack_geom *d;
	int derr;
	memset(s, 0, sizeof *s);
	int e = requested_geom(size, guard, &g, &d, &derr);
	if (e == 0)
		e = mapped_get(s, &g);
	if (e == 0 && unlikely(__weft_arch_valgrind))
		__weft_stack_vg_register(s);
	return e;
}

static __attribute__((noinline)) void mapped_put(struct ut_stack *s)
{
	__weft_lsan_unroot(s->lo, (size_t)(s->hi - s->lo));
	munmap(s->lo - s->guard, s->guard + (size_t)(s->hi - s->lo));
	if (s->mprotected && guard_mode == GUARD_MPROTECT)
		map_budget += 2;
}

void __weft_stack_put(struct ut_stack *s)
{
	if (unlikely(s->kind == STACK_COPY))
		return;                         /* a run stack's: copystack.c releases it */
	if (s->kind != STACK_PROCESS && s->kind != STACK_NONE)
		UNPOISON_STACK(s);
	if (unlikely(s->vg_id))
		vg_deregister(s);
	if (likely(s->kind == STACK_POOLED))
		pooled_put(s);
	else if (s->kind == STACK_MAPPED)
		mapped_put(s);
	s->kind = STACK_NONE;
}
