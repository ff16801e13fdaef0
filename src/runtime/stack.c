/*
 * stack.c — UT stacks: guarded, lazily committed, pooled.
 *
 * Default-size stacks come from slabs: one mmap holds SLAB_STACKS stacks,
 * each preceded by its guard.  On Linux >= 6.13 the guards are installed with
 * MADV_GUARD_INSTALL, which marks page-table entries instead of splitting the
 * mapping, so a million guarded stacks cost a few thousand kernel mappings
 * instead of two million (vm.max_map_count is 65530 here).  Older kernels get
 * mprotect guards while the mapping budget lasts, then unguarded stacks with a
 * canary word checked at every switch (DESIGN.md, "Stacks").
 *
 * Invariants: a pooled stack is in exactly one of {slab tail not yet handed
 * out, pool array, in use}.  Pages are committed only when touched
 * (MAP_NORESERVE, no huge pages), so an idle UT costs the page or two it
 * used.  A stack that returns to a pool already holding POOL_WARM_MAX stacks
 * gives its pages back to the kernel first.
 */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A UT that exits leaves its last frames' ASan redzones poisoned on its
 * stack (they never return); the next UT to get the stack would trip on
 * them.  Sanitizer builds clean a stack's shadow when it is released. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON_STACK(s) ASAN_UNPOISON_MEMORY_REGION((s)->lo, (size_t)((s)->hi - (s)->lo))
#else
#define UNPOISON_STACK(s) ((void)(s))
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define DEFAULT_STACK_SIZE (256u * 1024u)
#define SLAB_STACKS 64u
#define POOL_WARM_MAX 1024u
#define MAP_RESERVE 4096u            /* mappings left for the program itself */
#define CANARY 0x57656674c0ffee11ull /* "Weft" */

enum guard_mode { GUARD_INSTALL, GUARD_MPROTECT, GUARD_NONE };

static size_t page_size;
static size_t default_size = DEFAULT_STACK_SIZE;
static enum guard_mode guard_mode = GUARD_INSTALL;
static long map_budget;               /* mappings we may still add (mprotect mode) */

static char *slab_next;               /* next never-used default stack in the current slab */
static uint32_t slab_left;
static size_t slab_stride;            /* guard + size of one default stack */
static size_t slab_size_used;         /* default_size when the slab was cut */

static char **pool;                   /* free default stacks (their `lo`) */
static uint32_t npool, pool_cap;

size_t __weft_page_size(void)
{
	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	return page_size;
}

size_t __weft_stack_default_size(void) { return default_size; }

void __weft_stack_set_default_size(size_t size)
{
	size_t ps = __weft_page_size();
	size = (size + ps - 1) & ~(ps - 1);
	if (size == default_size)
		return;
	/* Pooled stacks were cut at the old size and cannot serve the new one
	 * (pooled_get would give them the new size and overlap a neighbour).
	 * Their slabs stay mapped, so only their pages go back. */
	for (uint32_t i = 0; i < npool; i++)
		madvise((char *)((uintptr_t)pool[i] & ~(uintptr_t)1), default_size, MADV_DONTNEED);
	npool = 0;
	default_size = size;
}

static long read_max_map_count(void)
{
	long v = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 65530;
		fclose(f);
	}
	return v;
}

/* Guard [p, p+len).  Returns false when the stack must go unguarded. */
static bool install_guard(char *p, size_t len)
{
	if (guard_mode == GUARD_INSTALL) {
		if (madvise(p, len, MADV_GUARD_INSTALL) == 0)
			return true;
		guard_mode = GUARD_MPROTECT;
		map_budget = read_max_map_count() - MAP_RESERVE;
	}
	if (guard_mode == GUARD_MPROTECT) {
		if (map_budget >= 2 && mprotect(p, len, PROT_NONE) == 0) {
			map_budget -= 2;
			return true;
		}
		guard_mode = GUARD_NONE;
	}
	return false;
}

static char *map_region(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* THP "always" would otherwise commit 2 MiB for a stack's first touch. */
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

static void set_canary(struct ut_stack *s)
{
	s->canary = true;
	*(volatile uint64_t *)s->lo = CANARY;
}

bool __weft_stack_canary_ok(const struct ut_stack *s)
{
	return *(const volatile uint64_t *)s->lo == CANARY;
}

static int new_slab(void)
{
	size_t ps = __weft_page_size();
	slab_stride = ps + default_size;
	slab_size_used = default_size;
	char *p = map_region(slab_stride * SLAB_STACKS);
	if (!p)
		return EAGAIN;
	slab_next = p;
	slab_left = SLAB_STACKS;
	__weft_vp()->stat.stacks_mapped += SLAB_STACKS;
	return 0;
}

static int pooled_get(struct ut_stack *s)
{
	size_t ps = __weft_page_size();
	s->kind = STACK_POOLED;
	s->guard = ps;
	if (npool) {
		/* Stacks are page aligned: bit 0 of an entry means "unguarded". */
		uintptr_t e = (uintptr_t)pool[--npool];
		s->lo = (char *)(e & ~(uintptr_t)1);
		s->hi = s->lo + default_size;
		if (e & 1) {
			s->guard = 0;
			set_canary(s);
		}
		__weft_vp()->stat.stacks_reused++;
		return 0;
	}
	if (!slab_left || slab_size_used != default_size) {
		int e = new_slab();
		if (e)
			return e;
	}
	char *base = slab_next;
	slab_next += slab_stride;
	slab_left--;
	s->lo = base + ps;
	s->hi = s->lo + default_size;
	if (!install_guard(base, ps)) {
		s->guard = 0;
		set_canary(s);
	}
	return 0;
}

static int mapped_get(struct ut_stack *s, size_t size, size_t guard)
{
	char *p = map_region(guard + size);
	if (!p)
		return EAGAIN;
	s->kind = STACK_MAPPED;
	s->lo = p + guard;
	s->hi = s->lo + size;
	s->guard = guard;
	if (guard && !install_guard(p, guard)) {
		s->guard = 0;
		set_canary(s);
	}
	if (!guard)
		set_canary(s);
	__weft_vp()->stat.stacks_mapped++;
	return 0;
}

int __weft_stack_get(struct ut_stack *s, size_t size, size_t guard)
{
	size_t ps = __weft_page_size();
	memset(s, 0, sizeof *s);
	if (size == 0)
		size = default_size;
	size = (size + ps - 1) & ~(ps - 1);
	guard = (guard + ps - 1) & ~(ps - 1);
	if (size == default_size && guard == ps)
		return pooled_get(s);
	return mapped_get(s, size, guard);
}

void __weft_stack_put(struct ut_stack *s)
{
	if (s->kind != STACK_PROCESS && s->kind != STACK_NONE)
		UNPOISON_STACK(s);
	switch (s->kind) {
	case STACK_POOLED:
		if (s->hi - s->lo != (ptrdiff_t)default_size) {
			/* The default changed since this stack was cut: it can't be
			 * reused, but its slab lives on, so just drop its pages. */
			madvise(s->lo, (size_t)(s->hi - s->lo), MADV_DONTNEED);
			break;
		}
		if (npool == pool_cap) {
			uint32_t cap = pool_cap ? pool_cap * 2 : 256;
			char **v = realloc(pool, cap * sizeof *v);
			if (!v) {
				madvise(s->lo, default_size, MADV_DONTNEED);
				break;     /* leak the address range, not memory */
			}
			pool = v;
			pool_cap = cap;
		}
		if (npool >= POOL_WARM_MAX)
			madvise(s->lo, default_size, MADV_DONTNEED);
		pool[npool++] = (char *)((uintptr_t)s->lo | (s->guard ? 0 : 1));
		break;
	case STACK_MAPPED:
		munmap(s->lo - s->guard, s->guard + (size_t)(s->hi - s->lo));
		if (guard_mode == GUARD_MPROTECT && s->guard)
			map_budget += 2;
		break;
	default:
		break;
	}
	s->kind = STACK_NONE;
}
