/*
 * ut_table.c — the UT table: descriptors, slots and handles.
 *
 * A pthread_t is (generation << 32 | slot).  Descriptors live in chunks that
 * are allocated on demand and never freed, so looking up any 64-bit value is
 * safe: an out-of-range slot, a missing chunk, a FREE slot or a generation
 * mismatch all read as "no such thread" (Marovich's descriptor zone).
 * Invariant: a slot's generation changes exactly when the slot is freed, so a
 * handle names one thread for that thread's whole life and never another.
 * Generation 0 is never issued, so no valid handle is 0.
 */
#include "rt.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_SHIFT 12
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define MAX_CHUNKS 4096u                  /* 16,777,216 UTs */

static struct ut *chunks[MAX_CHUNKS];
static uint32_t nslots;                  /* slots that exist */
static uint32_t used_end;                /* one past the highest slot ever handed out:
					  * a walk of the table stops there */
static uint32_t free_head = UINT32_MAX;  /* freed slots, linked through q_next slot numbers */
static uint32_t fresh;                   /* slots from here to nslots were never handed
					  * out: untouched zero pages (state UT_FREE,
					  * generation 0, which no handle carries) */
static uint32_t nfree;

static inline struct ut *slot_ut(uint32_t slot)
{
	return &chunks[slot >> CHUNK_SHIFT][slot & (CHUNK_SLOTS - 1)];
}

static int grow(void)
{
	uint32_t c = nslots >> CHUNK_SHIFT;
	if (c >= MAX_CHUNKS)
		return EAGAIN;
	/* mmap, not malloc: descriptors must stay valid for lookups forever and
	 * their zero pages cost nothing until used. */
	void *p = mmap(NULL, CHUNK_SLOTS * sizeof(struct ut), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return EAGAIN;
	/* a slot keeps its UT's key values for the next (lsan_roots.c) */
	__weft_lsan_root(p, CHUNK_SLOTS * sizeof(struct ut));
	chunks[c] = p;
	/* Its slots are handed out in order from `fresh`, each written only
	 * then: until the twenty-ninth stop a free list was threaded through
	 * all 4,096 at once, which made the whole 1.5 MiB resident in every
	 * process at start-up, and every fork copied and write-protected its
	 * page table entries. */
	fresh = nslots;
	nslots += CHUNK_SLOTS;
	nfree += CHUNK_SLOTS;
	return 0;
}

/* memset(t, 0, sizeof *t), as 16-byte stores: gcc makes a memset of this
 * size a `rep stos`, whose start-up took 8 ns of a 125 ns create+join. */
typedef uint64_t zero16 __attribute__((vector_size(16), aligned(8), may_alias));
static inline __attribute__((always_inline, optimize("no-tree-loop-distribute-patterns"))) void
zero_ut(struct ut *t)
{
	_Static_assert(sizeof *t % 8 == 0, "struct ut is a whole number of words");
	char *p = (char *)t;
	size_t i = 0;
#pragma GCC unroll 32
	for (; i + 16 <= sizeof *t; i += 16)
		*(zero16 *)(p + i) = (zero16){ 0, 0 };
	if (i < sizeof *t)
		*(uint64_t *)(p + i) = 0;
}

struct ut *__weft_ut_alloc(void)
{
	struct ut *t;
	if (free_head != UINT32_MAX) {
		t = slot_ut(free_head);
		free_head = (uint32_t)(uintptr_t)t->q_next;
	} else {
		if (fresh == nslots && grow() != 0)
			return NULL;
		t = slot_ut(fresh);
		t->slot = fresh++;
		t->gen = 1;
	}
	nfree--;
	if (t->slot >= used_end)
		used_end = t->slot + 1;
	uint32_t slot = t->slot, gen = t->gen;
	struct tsd *tsd = t->tsd;      /* kept with the slot for reuse */
	zero_ut(t);
	t->slot = slot;
	t->gen = gen;
	t->tsd = tsd;
	return t;
}

void __weft_ut_free(struct ut *t)
{
	t->state = UT_FREE;
	if (++t->gen == 0)
		t->gen = 1;
	t->q_next = (struct ut *)(uintptr_t)free_head;
	free_head = t->slot;
	nfree++;
}

struct ut *__weft_ut_by_slot(uint32_t slot)
{
	if (slot >= nslots)
		return NULL;
	struct ut *t = slot_ut(slot);
	return t->state == UT_FREE ? NULL : t;
}

struct ut *__weft_ut_lookup(pthread_t h)
{
	uint64_t v = (uint64_t)h;
	uint32_t slot = (uint32_t)v, gen = (uint32_t)(v >> 32);
	if (slot >= nslots || gen == 0)
		return NULL;
	struct ut *t = slot_ut(slot);
	if (t->gen != gen || t->state == UT_FREE)
		return NULL;
	return t;
}

void __weft_ut_foreach(void (*fn)(struct ut *, void *), void *ctx)
{
	for (uint32_t s = 0; s < used_end; s++) {
		struct ut *t = slot_ut(s);
		if (t->state != UT_FREE)
			fn(t, ctx);
	}
}

uint32_t __weft_ut_slots(void) { return nslots; }
