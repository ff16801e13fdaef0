/*
 * copystack.c — copy-stack UTs: Marovich's second variant.
 *
 * Owns: the run stacks, the save areas and their pool, and the copying of a
 * copy-stack UT's live frames out of and back into its run stack.
 *
 * The model.  A copy-stack UT has no stack of its own.  It runs on a run
 * stack shared with other copy-stack UTs (one per VP, a UT assigned to one
 * when it is made), and while it does not run, its frames — the live part
 * [sp, top) of the run stack, a few hundred bytes for a thread parked in a
 * call — may be kept in a save area sized to them.  So an idle UT costs its
 * descriptor and the bytes its stack really holds, not a page or more, at
 * the price of a copy when it leaves the run stack to another and one when
 * it comes back (Marovich, Table 3).
 *
 * Lazily: a run stack's `occupant` is the UT whose frames are on it now.
 * They stay there when it stops running, and are saved only when another
 * copy-stack UT needs the run stack; a UT that runs again before that costs
 * nothing, so switching between a copy-stack UT and separate-stack ones
 * copies nothing.  Invariants: a copy-stack UT's frames are either on its
 * run stack (it is the occupant; cs.len 0) or in its save area (cs.len > 0:
 * the bytes of [top - len, top), then, in ASan builds, their shadow), never
 * both relied on; a UT made but never run has its first frame in its save
 * area.  A run stack is *busy* while its occupant runs (on some VP) or is
 * away in the kernel (a blocking call handed the VP on, or the monitor took
 * it: WAIT_SYSCALL): then no other UT's frames may be copied onto it, and a
 * UT chosen for it waits on its `waiters` list (UT_DEFERRED) until it is
 * free.  Everything here runs on a VP's mainline (M:N: under the runtime
 * lock); the dump's inspection runs in a signal handler with the same
 * state whole (the lock held, or the interrupted code not Weft's), or on
 * the mainline, and holds every signal off while it lends a parked UT's
 * frames to a run stack (no switch may see them there).
 *
 * The switch (sched.c's switch_to calls __weft_cs_prepare):
 *   - next's frames on its run stack already: an ordinary switch;
 *   - prev stands on the run stack next needs (prev is its occupant):
 *     neither may copy there, so the switch goes through the VP's mover,
 *     a context on a stack of its own, which saves prev's frames, restores
 *     next's and switches to next;
 *   - otherwise (prev on another stack): the occupant's frames are saved
 *     and next's restored before an ordinary switch.
 * The save area is found before the switch, where allocating is safe: the
 * mover only copies.
 *
 * Pointers into a copy-stack UT's stack (docs/runtime.md, "Copy-stack
 * threads"): while the UT does not run, the bytes at those addresses are
 * another UT's, so an object on its stack that another UT uses (a mutex, a
 * pollfd, an argument passed to pthread_create) does not work.  Weft's own
 * records that other UTs reach while a UT waits (the I/O waits, the futex
 * emulation, sigwait) are kept off a copy-stack UT's stack; pthread_create
 * from a copy-stack UT refuses an argument that points into its stack.
 */
#include "rt.h"
#include "../arch/arch.h"
#include "../arch/valgrind_req.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/* x86-64 Linux's AddressSanitizer shadow: one byte per eight, at this
 * offset (checked once at start: asan_shadow_ok). */
#define ASAN_SHADOW_OFFSET 0x7fff8000ul
#define NO_ASAN __attribute__((no_sanitize_address))
static inline char *shadow_of(const char *p) { return (char *)(((uintptr_t)p >> 3) + ASAN_SHADOW_OFFSET); }
static inline size_t shadow_len(size_t n) { return n >> 3; }
#else
#define NO_ASAN
static inline size_t shadow_len(size_t n) { (void)n; return 0; }
#endif

/* Debug builds poison the bytes a copy-stack UT leaves on its run stack
 * (__weft_cs_prepare). */
#if defined(__SANITIZE_ADDRESS__) || defined(WEFT_DEBUG)
#define CS_POISON 1
#else
#define CS_POISON 0
#endif
#define POISON_BYTE 0xdb

#define RUN_STACK_MIN ((size_t)64 << 20)    /* a run stack is at least this big (address
					     * space: only the pages its deepest UT
					     * touched are memory) */
#define MOVER_STACK_SIZE (16u << 10)
/* Bytes the switch frame may lie below the stack pointer where the mover's
 * save area is sized (__weft_cs_prepare and __weft_cs_switch_moved are
 * both called from switch_to: their frames differ by a few words; an ASan
 * build's by their redzones).  An area found too large is trimmed at the
 * VP's next copy-stack switch (trim). */
#if defined(__SANITIZE_ADDRESS__)
#define SAVE_SLACK 1024
#else
#define SAVE_SLACK 256
#endif
#define SMALL_STEP 64u                       /* classes 1..16: 64, 128, ... 1024 bytes */
#define SMALL_CLASSES 16u
#define NCLASSES 40u
#define CHUNK_BYTES ((size_t)1 << 20)        /* small areas are cut from chunks of this */
#define CHUNKED_MAX ((size_t)64 << 10)       /* areas up to this are cut from chunks */
#define LARGE_KEEP 2u                        /* free large areas kept per class */

struct run_stack {
	struct ut_stack stack;
	struct ut *occupant;          /* the UT whose frames are on it, or NULL */
	struct waitq waiters;         /* UT_DEFERRED: chosen while it was busy */
	char *poisoned_lo;            /* debug builds: [poisoned_lo, top) poisoned since
				       * its last occupant left; NULL: nothing is */
};

static struct run_stack run_stacks[WEFT_VPS_MAX];
static unsigned next_rs;              /* M:N: run stacks given out in turn */
uint32_t __weft_cs_deferred;

/* ---- save areas ----------------------------------------------------------- */

struct free_area {
	struct free_area *next;
};

static struct {
	struct free_area *free[NCLASSES];
	uint32_t nfree[NCLASSES];
	char *chunk[NCLASSES];        /* where the next small area of a class is cut */
	size_t chunk_left[NCLASSES];
} pool;

static inline size_t class_size(unsigned c)
{
	return c <= SMALL_CLASSES ? (size_t)SMALL_STEP * c : (size_t)2048 << (c - SMALL_CLASSES - 1);
}

static unsigned class_of(size_t n)
{
	if (n <= (size_t)SMALL_STEP * SMALL_CLASSES)
		return n ? (unsigned)((n + SMALL_STEP - 1) / SMALL_STEP) : 1;
	unsigned c = SMALL_CLASSES + 1;
	while (c < NCLASSES - 1 && class_size(c) < n)
		c++;
	return c;
}

static char *area_get(unsigned c)
{
	struct free_area *f = pool.free[c];
	if (f) {
		pool.free[c] = f->next;
		pool.nfree[c]--;
		return (char *)f;
	}
	size_t sz = class_size(c);
	if (sz > CHUNKED_MAX) {
		void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		__weft_lsan_root(p, sz);          /* saved frames (lsan_roots.c) */
		return p;
	}
	if (pool.chunk_left[c] < sz) {
		void *p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		__weft_lsan_root(p, CHUNK_BYTES);
		pool.chunk[c] = p;
		pool.chunk_left[c] = CHUNK_BYTES - CHUNK_BYTES % sz;
	}
	char *a = pool.chunk[c];
	pool.chunk[c] += sz;
	pool.chunk_left[c] -= sz;
	return a;
}

static void area_put(char *a, unsigned c)
{
	if (class_size(c) > CHUNKED_MAX && pool.nfree[c] >= LARGE_KEEP) {
		__weft_lsan_unroot(a, class_size(c));
		munmap(a, class_size(c));
		return;
	}
	struct free_area *f = (struct free_area *)(void *)a;
	f->next = pool.free[c];
	pool.free[c] = f;
	pool.nfree[c]++;
}

/* Give t a save area for `need` bytes (and their shadow): keep the one it
 * has if it fits and is not much larger.  0 or ENOMEM. */
static int area_fit(struct ut *t, size_t need)
{
	size_t bytes = need + shadow_len(need);
	unsigned c = class_of(bytes);
	if (t->cs->save && t->cs->cls >= c && t->cs->cls <= c + 2)
		return 0;
	char *a = area_get(c);
	if (!a)
		return ENOMEM;
	if (t->cs->save)
		area_put(t->cs->save, t->cs->cls);
	t->cs->save = a;
	t->cs->cls = (uint8_t)c;
	return 0;
}

/* ---- run stacks ----------------------------------------------------------- */

static inline struct run_stack *rs_of(const struct ut *t) { return &run_stacks[t->stack.index]; }
static inline char *rs_top(const struct run_stack *rs) { return rs->stack.hi; }

/* As deep as a separate stack of the default size, and no less than
 * RUN_STACK_MIN: one run stack serves every copy-stack UT of a VP, so it
 * is made once, deep, and costs only the pages its deepest UT touches. */
static size_t run_stack_size(void)
{
	size_t d = __weft_stack_default_size();
	return d > RUN_STACK_MIN ? d : RUN_STACK_MIN;
}

#if defined(__SANITIZE_ADDRESS__)
/* The shadow offset above is what this ASan uses: poison a probe, read
 * its shadow byte there. */
static NO_ASAN bool asan_shadow_ok(void)
{
	static char probe[32] __attribute__((aligned(32)));
	ASAN_POISON_MEMORY_REGION(probe, sizeof probe);
	bool poisoned = *(volatile char *)shadow_of(probe) != 0;
	ASAN_UNPOISON_MEMORY_REGION(probe, sizeof probe);
	return poisoned && *(volatile char *)shadow_of(probe) == 0;
}
#endif

/* The run stack a new copy-stack UT is given, made on first use; with
 * several VPs they are given out in turn, so copy-stack UTs made by one
 * VP can run on all.  NULL when there is no memory for one. */
static struct run_stack *rs_for(struct vp *vp)
{
	unsigned n = __weft_proc.nvps > 1 ? __weft_proc.nvps : 1;
	unsigned i = n > 1 ? next_rs++ % n : 0;
	(void)vp;
	struct run_stack *rs = &run_stacks[i];
	if (rs->stack.hi)
		return rs;
#if defined(__SANITIZE_ADDRESS__)
	if (!asan_shadow_ok())
		__weft_die("copy-stack threads: this AddressSanitizer's shadow is not where Weft looks for it");
#endif
	if (__weft_stack_map(&rs->stack, run_stack_size(), __weft_page_size()) != 0)
		return NULL;
	rs->stack.index = (uint8_t)i;
	return rs;
}

int __weft_cs_spawn(struct ut *t, struct vp *vp, size_t stacksize, size_t guardsize)
{
	/* sizes a separate stack would refuse are refused alike */
	int e = __weft_stack_check(stacksize, guardsize);
	if (e)
		return e;
	struct run_stack *rs = rs_for(vp);
	if (!rs)
		return EAGAIN;
	if (stacksize > (size_t)(rs->stack.hi - rs->stack.lo))
		return EAGAIN;             /* deeper than the run stack: no such stack to be had */
	/* every VP may run it: each needs its mover */
	unsigned nvps = __weft_proc.nvps ? __weft_proc.nvps : 1;
	for (unsigned i = 0; i < nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (!v->cs_mover.hi && __weft_stack_map(&v->cs_mover, MOVER_STACK_SIZE, __weft_page_size()) != 0)
			return EAGAIN;
	}
	/* its first frame, made where it will run, kept in its save area
	 * (the frame holds no address of its own stack: it may be made
	 * anywhere and copied) */
	uint64_t first[WEFT_ARCH_FRESH_FRAME_BYTES / 8 + 2] __attribute__((aligned(16)));
	char *ftop = (char *)first + sizeof first;
	char *f = __weft_arch_frame(ftop, __weft_ut_main, t);
	size_t len = (size_t)(ftop - f);
	/* its own state, from the pool's smallest class */
	t->cs = (struct ut_copy *)(void *)area_get(class_of(sizeof *t->cs));
	if (!t->cs)
		return EAGAIN;
	memset(t->cs, 0, sizeof *t->cs);
	if (area_fit(t, len) != 0) {
		area_put((char *)t->cs, class_of(sizeof *t->cs));
		t->cs = NULL;
		return EAGAIN;
	}
	__weft_arch_stack_copy(t->cs->save, f, len);
	__weft_arch_stack_zero(t->cs->save + len, shadow_len(len));   /* a fresh frame: unpoisoned */
	t->cs->len = (uint32_t)len;
	t->cs->offstack = 0;
	t->stack.lo = rs->stack.lo;
	t->stack.hi = rs->stack.hi;
	t->stack.guard = rs->stack.guard;
	t->stack.canary = rs->stack.canary;
	t->stack.kind = STACK_COPY;
	t->stack.index = rs->stack.index;
	t->sp = rs_top(rs) - len;
	if (unlikely(!vp->cs_on))
		for (unsigned i = 0; i < WEFT_VPS_MAX; i++)
			__weft_vps[i].cs_on = 1;
	return 0;
}

/* ---- saving and restoring ------------------------------------------------- */

/* The lowest byte of t's frames on its run stack: its stack pointer, or,
 * while a handler runs on it on another stack, the mark set for that. */
static char *frames_lo(const struct ut *t, const struct run_stack *rs)
{
	uintptr_t sp = (uintptr_t)t->sp;
	if (sp >= (uintptr_t)rs->stack.lo && sp < (uintptr_t)rs->stack.hi)
		return (char *)sp;
	if (t->cs->offstack)
		return (char *)t->cs->offstack;
	__weft_die("copy-stack thread %llu (%s) gave up the processor on a stack that is not its own "
		   "(makecontext or a stack of the program's): such a thread needs a stack of its own "
		   "(WEFT_STACK_MODE=separate, or weft_attr_setstackmode)",
		   (unsigned long long)t->id, t->name);
}

/* Copy t's frames out: [lo, top) into its save area, which fits. */
static NO_ASAN void save_frames(struct ut *t, const struct run_stack *rs)
{
	char *lo = frames_lo(t, rs), *top = rs_top(rs);
	size_t len = (size_t)(top - lo);
	if (len + shadow_len(len) > class_size(t->cs->cls) || !t->cs->save)
		__weft_die("copy-stack thread %llu: its save area is too small for its %zu bytes of stack",
			   (unsigned long long)t->id, len);
	__weft_arch_stack_copy(t->cs->save, lo, len);
#if defined(__SANITIZE_ADDRESS__)
	__weft_arch_stack_copy(t->cs->save + len, shadow_of(lo), shadow_len(len));
#endif
	t->cs->len = (uint32_t)len;
	struct vp *vp = __weft_vp();
	vp->stat.cs_saves++;
	vp->stat.cs_bytes += len;
}

/* Copy t's frames back in.  `below` is the lowest byte the run stack's
 * last occupant used: under ASan the shadow of the bytes between it and
 * t's frames still describes that occupant's frames, and is cleared. */
static NO_ASAN void restore_frames(struct ut *t, const struct run_stack *rs, const char *below)
{
	size_t len = t->cs->len;
	char *top = rs_top(rs), *lo = top - len;
	if (unlikely(__weft_arch_valgrind))
		VALGRIND_MAKE_MEM_UNDEFINED(lo, len);   /* below a stack pointer Valgrind let go */
	__weft_arch_stack_copy(lo, t->cs->save, len);
#if defined(__SANITIZE_ADDRESS__)
	__weft_arch_stack_copy(shadow_of(lo), t->cs->save + len, shadow_len(len));
	if (below && below < lo)
		__weft_arch_stack_zero(shadow_of(below), shadow_len((size_t)(lo - below)));
#else
	(void)below;
#endif
	t->cs->len = 0;
	struct vp *vp = __weft_vp();
	vp->stat.cs_restores++;
	vp->stat.cs_bytes += len;
}

/* [lo, top) of a run stack no UT's frames use now: poisoned in ASan's
 * shadow (an access is reported), filled with POISON_BYTE in WEFT_DEBUG
 * builds (a pointer read there is garbage at once). */
static NO_ASAN void poison(char *lo, char *top)
{
#if defined(__SANITIZE_ADDRESS__)
	ASAN_POISON_MEMORY_REGION(lo, (size_t)(top - lo));
#elif defined(WEFT_DEBUG)
	memset(lo, POISON_BYTE, (size_t)(top - lo));
#else
	(void)lo;
	(void)top;
#endif
}

/* Make room for t's frames in its save area, before a switch saves them
 * (allocation is not safe in the mover).  `here`: for t running now, the
 * stack pointer of the code about to switch it out (its switch frame lies
 * within SAVE_SLACK below); 0 for t parked, whose stack pointer is known. */
static void reserve_save(struct ut *t, const struct run_stack *rs, uintptr_t here)
{
	uintptr_t lo, base = (uintptr_t)rs->stack.lo;
	if (!here)
		lo = (uintptr_t)frames_lo(t, rs);
	else if (here >= base + SAVE_SLACK && here < (uintptr_t)rs->stack.hi)
		lo = here - SAVE_SLACK;
	else if (here >= base && here < (uintptr_t)rs->stack.hi)
		lo = base;
	else if (t->cs->offstack)
		lo = t->cs->offstack;       /* a handler on another stack switches it out */
	else
		lo = (uintptr_t)frames_lo(t, rs);   /* dies: a stack of the program's */
	size_t need = (size_t)((uintptr_t)rs_top(rs) - lo);
	if (area_fit(t, need) != 0)
		__weft_die("no memory to keep copy-stack thread %llu's stack (%zu bytes)",
			   (unsigned long long)t->id, need);
}

/* The occupant o leaves rs to another UT: its frames go to its save area
 * (a dead one's are simply dropped).  Returns the lowest byte it used. */
static char *evict(struct run_stack *rs)
{
	struct ut *o = rs->occupant;
	rs->occupant = NULL;
	if (!o || o->state == UT_EXITING || o->state == UT_ZOMBIE || o->state == UT_FREE)
		return NULL;
	reserve_save(o, rs, 0);
	char *lo = frames_lo(o, rs);
	save_frames(o, rs);
	return lo;
}

/* ---- the switch ----------------------------------------------------------- */

static inline bool occupant_busy(const struct ut *o)
{
	return o->state == UT_RUNNING ||
	       (o->state == UT_BLOCKED && o->wait_kind == WAIT_SYSCALL && !o->cs->detached);
}

bool __weft_cs_busy(const struct ut *next)
{
	const struct run_stack *rs = rs_of(next);
	const struct ut *o = rs->occupant;
	return o && o != next && occupant_busy(o);
}

void __weft_cs_defer(struct ut *t)
{
	struct run_stack *rs = rs_of(t);
	WEFT_STATE(t, UT_DEFERRED);
	__weft_waitq_insert(&rs->waiters, t);
	__weft_cs_deferred++;
	/* M:N: its run stack's occupant runs on another VP, which may not
	 * switch for long (a loop of its own, a yield with nothing else
	 * ready there): that VP is asked to let the run stack go at its next
	 * safe point (preempt.c, __weft_preempted) */
	struct ut *o = rs->occupant;
	if (__weft_mn && o && o->state == UT_RUNNING)
		for (unsigned i = 0; i < __weft_proc.nvps; i++) {
			struct vp *v = &__weft_vps[i];
			if (v->cur == o && v != __weft_vp()) {
				v->cs_release = 1;
				__weft_mn_kick(v);
			}
		}
}

/* rs is free: the UTs deferred for it are ready again, ahead of their
 * level (they were chosen already), in their order. */
static void wake_deferred(struct run_stack *rs)
{
	struct ut *t;
	while ((t = rs->waiters.head) != NULL) {
		struct ut *last = t->q_prev;
		__weft_waitq_remove(&rs->waiters, last);
		__weft_cs_deferred--;
		__weft_ready_first(last);
	}
}

bool __weft_cs_left(struct ut *t)
{
	struct run_stack *rs = rs_of(t);
	if (likely(rs->waiters.head == NULL))
		return false;
	wake_deferred(rs);
	return true;
}

/* The mover saved t's frames in an area sized with the slack: if that is
 * more than twice what they took, move them to one of their size (an idle
 * copy-stack UT should cost what its stack holds).  t may have run, ended
 * or been made anew since: only saved frames are moved. */
static void trim(struct ut *t)
{
	if (!__weft_is_copy(t) || !t->cs->len || !t->cs->save)
		return;
	size_t bytes = t->cs->len + shadow_len(t->cs->len);
	unsigned c = class_of(bytes);
	if (c + 1 >= t->cs->cls)
		return;
	char *a = area_get(c);
	if (!a)
		return;                   /* it keeps the larger one */
	__weft_arch_stack_copy(a, t->cs->save, bytes);
	area_put(t->cs->save, t->cs->cls);
	t->cs->save = a;
	t->cs->cls = (uint8_t)c;
}

bool __weft_cs_prepare(struct vp *vp, struct ut *prev, struct ut *next)
{
	if (vp->cs_trim) {
		trim(vp->cs_trim);
		vp->cs_trim = NULL;
	}
	bool prev_copy = __weft_is_copy(prev);
	struct run_stack *prs = prev_copy ? rs_of(prev) : NULL;
	bool prev_here = prev_copy && prs->occupant == prev;   /* prev stands on its run stack */
	vp->cs_out = vp->cs_in = NULL;
	if (__weft_is_copy(next)) {
		struct run_stack *rs = rs_of(next);
		if (rs->occupant != next) {
			if (rs == prs && prev_here) {
				/* next needs the run stack prev stands on: the mover
				 * saves prev's frames and restores next's */
				vp->cs_in = next;
			} else {
				char *below = evict(rs);
				restore_frames(next, rs, below ? below : rs->poisoned_lo);
				rs->poisoned_lo = NULL;
				rs->occupant = next;
			}
		}
		if (rs == prs)
			prs = NULL;               /* prev's run stack stays in use */
	}
	if (prs && CS_POISON && prev_here) {
		/* debug builds: a copy-stack UT's frames leave its run stack
		 * as soon as it stops, and the bytes left there are poisoned,
		 * so a pointer another UT keeps into them is caught (ASan) or
		 * reads garbage at once (WEFT_DEBUG) rather than now and then */
		vp->cs_in = NULL;
		vp->cs_evict = true;
	}
	if (vp->cs_in || vp->cs_evict) {
		if (prev->state != UT_EXITING)
			reserve_save(prev, prs ? prs : rs_of(next), __weft_arch_sp_now());
		vp->cs_out = prev;
	}
	if (prs)
		__weft_cs_left(prev);             /* its run stack is free: the deferred may go */
	return vp->cs_out != NULL;
}

/* The mover: prev's frames out (a dead UT's dropped), next's in if they
 * share the run stack, then next runs.  No instrumented code and no
 * allocation here: the save area was made to fit before
 * (__weft_cs_prepare). */
static NO_ASAN __attribute__((noreturn)) void mover_main(void *p)
{
	struct vp *vp = p;
	struct ut *out = vp->cs_out, *in = vp->cs_in, *next = vp->cs_next;
	struct run_stack *rs = rs_of(out);
	char *lo = frames_lo(out, rs);
	if (out->state != UT_EXITING) {
		save_frames(out, rs);
		vp->cs_trim = out;          /* its area had the slack: maybe too big */
	}
	rs->occupant = NULL;
	if (vp->cs_evict) {
		vp->cs_evict = false;
		poison(lo, rs_top(rs));
		rs->poisoned_lo = rs->poisoned_lo && rs->poisoned_lo < lo ? rs->poisoned_lo : lo;
	}
	if (in) {
		restore_frames(in, rs, rs->poisoned_lo && rs->poisoned_lo < lo ? rs->poisoned_lo : lo);
		rs->poisoned_lo = NULL;
		rs->occupant = in;
	}
	void *dead;
	__weft_switch(&dead, next->sp);
	__builtin_unreachable();
}

void __weft_cs_switch_moved(struct vp *vp, struct ut *prev, struct ut *next)
{
	vp->cs_next = next;
	void *sp = __weft_arch_frame(vp->cs_mover.hi, mover_main, vp);
	__weft_switch(&prev->sp, sp);
}

uintptr_t __weft_cs_offstack_enter(struct ut *t, uintptr_t sp)
{
	if (!t || !__weft_is_copy(t))
		return 0;
	uintptr_t old = t->cs->offstack;
	if (sp > (uintptr_t)t->stack.lo && sp <= (uintptr_t)t->stack.hi) {
		uintptr_t lo = sp - WEFT_ARCH_RED_ZONE;
		if (!old || lo < old)
			t->cs->offstack = lo;
	}
	return old;
}

void __weft_cs_refuse_arg(const struct ut *t, const void *arg)
{
	static bool said;
	if (said)
		return;
	said = true;
	__weft_warn("weft: pthread_create: EINVAL: copy-stack thread %llu (%s) passed a pointer into its own "
		    "stack (%p), whose bytes are another thread's while it does not run; pass memory that "
		    "outlives the call, or give the creator a separate stack (docs/runtime.md)",
		    (unsigned long long)t->id, t->name, arg);
}

void *__weft_cs_hb(const struct ut *t)
{
	return rs_of(t);
}

/* ---- records that outlive a copy-stack UT's turn ------------------------- */

void *__weft_wait_mem(struct ut *t, size_t n)
{
	if (!__weft_is_copy(t))
		return NULL;
	if (t->cs->scratch_busy) {
		/* a wait inside a wait (a signal handler's): one of its own */
		void *p = malloc(n);
		if (!p)
			__weft_die("no memory for copy-stack thread %llu's wait records", (unsigned long long)t->id);
		return p;
	}
	if (t->cs->scratch_size < n) {
		size_t sz = n < 256 ? 256 : n;
		void *p = realloc(t->cs->scratch, sz);
		if (!p)
			__weft_die("no memory for copy-stack thread %llu's wait records", (unsigned long long)t->id);
		t->cs->scratch = p;
		t->cs->scratch_size = sz;
	}
	t->cs->scratch_busy = 1;
	return t->cs->scratch;
}

void __weft_wait_mem_put(struct ut *t, void *p)
{
	if (!p)
		return;
	if (p == t->cs->scratch)
		t->cs->scratch_busy = 0;
	else
		free(p);
}

/* ---- the end of a copy-stack UT ------------------------------------------ */

void __weft_cs_release(struct ut *t)
{
	struct run_stack *rs = rs_of(t);
	/* ThreadSanitizer sees the scratch's realloc (t's fiber) and the free
	 * below (the next context's, maybe on another VP) through its malloc
	 * interceptors, and not the runtime lock that orders them: t's last
	 * switch-out released its run stack (tsan.c), and this acquires it */
	WEFT_HB_ACQUIRE(__weft_cs_hb(t));
	if (t->cs->save)
		area_put(t->cs->save, t->cs->cls);
	free(t->cs->scratch);
	area_put((char *)t->cs, class_of(sizeof *t->cs));
	t->cs = NULL;
	if (rs->occupant == t) {
		rs->occupant = NULL;
		wake_deferred(rs);
	}
	t->stack.kind = STACK_NONE;
}

void __weft_cs_after_fork(struct ut *self)
{
	for (unsigned i = 0; i < WEFT_VPS_MAX; i++) {
		struct run_stack *rs = &run_stacks[i];
		rs->waiters.head = NULL;            /* their UTs are gone (fork.c) */
		__weft_cs_deferred = 0;
		if (rs->occupant != self)
			rs->occupant = NULL;
	}
}

/* ---- a look at a parked UT's frames (the thread dump) --------------------- */

bool __weft_cs_inspect(struct ut *t, void (*fn)(void *), void *arg)
{
	struct run_stack *rs = rs_of(t);
	struct ut *o = rs->occupant;
	if (o == t || t->cs->len == 0) {
		fn(arg);
		return true;
	}
	/* the occupant may run only here, stopped under the caller (a dump
	 * from a handler that interrupted it); one away in the kernel, or
	 * running on another VP, uses the memory now */
	struct vp *vp = __weft_vp();
	if (o && occupant_busy(o) && o != vp->cur)
		return false;
	size_t len = t->cs->len;
	char *lo = rs_top(rs) - len;
	void *keep = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (keep == MAP_FAILED)
		return false;
	/* While t's frames stand in the occupant's place nothing may switch:
	 * a tick (or a program signal's fake call) that switched to the
	 * occupant here resumed it on t's frames, a SIGSEGV.  The caller's
	 * PC is not always protected (a dump called from the program's
	 * mainline, in_weft clear; libgcc_s's unwinder, loaded by glibc's
	 * backtrace after the range table was built), so every signal is
	 * held off for the window: the dump in the copy-stack suite
	 * (dump_names_every_ut) crashed now and then on the tick, and every
	 * time with a 100 us slice.  A debugging path: two system calls. */
	sigset_t all, old;
	__weft_sigset_home(&all);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8, 0, 0);
	__weft_arch_stack_copy(keep, lo, len);
	__weft_arch_stack_copy(lo, t->cs->save, len);
	fn(arg);
	__weft_arch_stack_copy(lo, keep, len);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	munmap(keep, len);
	return true;
}
