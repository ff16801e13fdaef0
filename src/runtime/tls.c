/*
 * tls.c — each UT its own thread-local storage, laid out as glibc lays out
 * a thread.
 *
 * Owns: the decision whether UTs get TLS of their own (tls_mode), the layout
 * of a UT's thread block, the pool of TLS contexts, and the glibc entry
 * points it needs.  docs/architecture.md ("Per-UT TLS") gives the design and
 * its consequences; in short:
 *
 *   - A UT's thread pointer points at a TCB that glibc can use: the header
 *     glibc and the compiler read through %fs (tcbhead_t: the TCB's own
 *     address, the DTV, the stack and pointer guards, multiple_threads), the
 *     few struct pthread fields glibc reads through %fs (tid,
 *     stackblock_size, cancelhandling, the rseq area), and below it the
 *     static TLS blocks of every module, initialised by glibc's own
 *     _dl_allocate_tls_init.  Modules loaded later get their TLS through the
 *     UT's DTV and __tls_get_addr, as for any thread.
 *   - glibc's notion of the current thread (THREAD_SELF, the header's `self`)
 *     stays the VP's kernel thread: libc's recursive locks (stdio, the
 *     loader) see one owner per VP, so a UT that holds flockfile while it
 *     waits on a Weft object can never make another UT's printf block the
 *     process, and libc's own per-thread state behind THREAD_SELF (strerror
 *     buffers, the resolver's) stays the kernel thread's.  One asynchronous
 *     writer of a block's `self`: setxid.c's SIGSETXID handler points the
 *     running block's at the block itself for the length of glibc's
 *     handler, and puts back what it read; the code it interrupted runs on
 *     that kernel thread and sees the word unchanged.
 *   - The block lives at the top of the UT's stack (as NPTL puts it): the TCB
 *     in the top 2368 bytes, the static TLS below, the stack below that, so
 *     an idle UT still touches one page.
 *   - Pay only for what is used: while no module but libc, ld.so and Weft has
 *     TLS, UTs share the kernel thread's TLS (errno saved and restored at
 *     each switch), and a switch costs nothing more.  Once a module with TLS
 *     is loaded (at start or by dlopen), every UT gets its own; UTs that
 *     existed before get theirs when they next run.
 *   - At exit a UT runs its C++ thread_local destructors (__call_tls_dtors)
 *     before its keys' destructors, as glibc orders them.  Its TLS context —
 *     the DTV, and the words glibc's malloc keeps per thread (its tcache and
 *     arena, which glibc frees only on a kernel thread's exit) — goes to a
 *     pool for the next UT: nothing is allocated when a UT is made in the
 *     steady state, and nothing leaks however many UTs come and go.
 *   - Each new block gets the three ctype table pointers a new glibc thread
 *     gets from __ctype_init (they are zero in the TLS image, and toupper,
 *     the is* classes, strtod and printf's number formatting read them):
 *     the global locale's tables, as setlocale last set them (ctype_fill).
 *
 * Facts about glibc (2.36, x86-64) this relies on are checked at start-up
 * against the running kernel thread; if one does not hold, UTs keep sharing
 * the kernel thread's TLS and one line says why.
 *
 * Readers: the mainline only.  Signal handlers use TLS through the running
 * UT's thread pointer and never touch the pool.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <ctype.h>
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* struct pthread (glibc 2.36, x86-64): the fields read through %fs. */
#define TCB_TID 720
#define TCB_CLEANUP 760            /* the old ABI's cleanup list (libc's own) */
#define TCB_CLEANUP_JMP_BUF 768    /* where glibc's cancellation unwinds to */
#define TCB_CANCELHANDLING 776
#define TCB_STACKBLOCK 1680
#define TCB_STACKBLOCK_SIZE 1688
#define TCB_HEADER_SIZE 0x50        /* tcbhead_t up to and including feature_1 */
#define RSEQ_CPU_ID_REGISTRATION_FAILED (-2)
#define TCB_ALIGN 64u
#define MAX_MALLOC_WORDS 8

/* tcbhead_t (sysdeps/x86_64/nptl/tls.h), the public part of the ABI. */
struct tcb_header {
	void *tcb;
	void *dtv;
	void *self;
	int multiple_threads;
	int gscope_flag;
	uintptr_t sysinfo;
	uintptr_t stack_guard;
	uintptr_t pointer_guard;
	unsigned long vgetcpu_cache[2];
	unsigned int feature_1;
	int unused1;
};
_Static_assert(sizeof(struct tcb_header) == TCB_HEADER_SIZE, "tcbhead_t prefix");

/* glibc's dtv_t: a counter or a (value, block to free) pair. */
typedef union {
	size_t counter;
	struct {
		void *val;
		void *to_free;
	} pointer;
} dtv_t;
#define TLS_DTV_UNALLOCATED ((void *)-1l)

/* What a UT's TLS carries from one UT to the next. */
struct tls_ctx {
	struct tls_ctx *next;
	dtv_t *dtv;                      /* as in the header: dtv[-1].counter is its length */
	void *storage;                   /* the TCB, when not on a stack (a late attach) */
	uint64_t malloc_words[MAX_MALLOC_WORDS];
};

enum tls_mode { TLS_SHARED = 0, TLS_PER_UT };

static struct {
	uint8_t mode;                    /* enum tls_mode */
	bool checked;                    /* the glibc facts were looked at */
	bool usable;                     /* ... and they hold */
	size_t tcb_size;                 /* sizeof(struct pthread) */
	size_t align;                    /* the thread pointer's alignment: glibc's static TLS
					  * alignment, at least the TCB's 64 */
	size_t reserve;                  /* static TLS in use below the TCB, rounded up */
	size_t static_size;              /* glibc's dl_tls_static_size */
	long rseq_offset;
	long errno_offset;               /* errno's place relative to the thread pointer */
	size_t max_modid;                /* highest TLS module id seen (the DTV entries in use) */
	unsigned nmw;
	long mw_off[MAX_MALLOC_WORDS];   /* malloc's per-thread words, relative to tp */
	void *(*allocate_tls)(void *);
	void *(*allocate_tls_init)(void *, bool);
	void (*deallocate_tls)(void *, bool);
	void (*get_static_info)(size_t *, size_t *);
	void (*call_tls_dtors)(void);
	struct tls_ctx *pool;
	/* glibc's per-thread ctype table pointers (ctype_fill): their
	 * offsets from tp, and where the global locale's current ones are */
	long ctype_off[3];
	const void *const *ctype_global[3];
} tls;

extern const long __rseq_offset __attribute__((weak));
extern void *__libc_stack_end;

/* The TLS contexts of UTs that have their own TLS (ut->tls). */
static inline struct tls_ctx *ctx_of(const struct ut *t) { return t->tls; }

static void *glibc_private(const char *name)
{
	void *p = dlvsym(RTLD_DEFAULT, name, "GLIBC_PRIVATE");
	return p ? p : dlsym(RTLD_DEFAULT, name);
}

/* ---- modules ------------------------------------------------------------- */

static bool is_runtime_module(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "ld-linux", 8) == 0 ||
	       strncmp(base, "libweft", 7) == 0;
}

struct scan {
	bool other_tls;                  /* a module other than libc/ld.so/Weft has TLS */
	size_t max_modid;
	uintptr_t tp;
	size_t max_offset;               /* deepest static TLS block below tp */
	uintptr_t libc_block;            /* libc's block below tp0 */
	size_t libc_size;
};

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *sc = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_TLS)
			continue;
		const char *name = info->dlpi_name ? info->dlpi_name : "";
		if (!is_runtime_module(name) || !name[0])
			sc->other_tls = true;
		if (info->dlpi_tls_modid > sc->max_modid)
			sc->max_modid = info->dlpi_tls_modid;
		uintptr_t data = (uintptr_t)info->dlpi_tls_data;
		if (data && data < sc->tp && sc->tp - data <= tls.static_size) {
			size_t off = sc->tp - data;
			if (off > sc->max_offset)
				sc->max_offset = off;
			const char *base = strrchr(name, '/');
			base = base ? base + 1 : name;
			if (strncmp(base, "libc.so", 7) == 0) {
				sc->libc_block = data;
				sc->libc_size = ph->p_memsz;
			}
		}
	}
	return 0;
}

/* dl_iterate_phdr names the blocks of the calling thread, whatever its
 * thread pointer (the first kernel thread's, a UT's, or that of a kernel
 * thread Weft did not make that starts the monitor): static TLS lies at
 * the same offsets below every thread pointer, so libc's block is given
 * back as it lies below the first kernel thread's. */
static struct scan scan_modules(void)
{
	uintptr_t me = (uintptr_t)__weft_arch_tp_get();
	struct scan sc = { .tp = me };
	dl_iterate_phdr(scan_module, &sc);
	if (sc.libc_block)
		sc.libc_block = sc.libc_block - me + (uintptr_t)__weft_vp()->tp0;
	sc.tp = (uintptr_t)__weft_vp()->tp0;
	return sc;
}

/* ---- the glibc facts --------------------------------------------------- */

static const char *check_glibc(void)
{
	tls.allocate_tls = (void *(*)(void *))glibc_private("_dl_allocate_tls");
	tls.allocate_tls_init = (void *(*)(void *, bool))glibc_private("_dl_allocate_tls_init");
	tls.deallocate_tls = (void (*)(void *, bool))glibc_private("_dl_deallocate_tls");
	tls.get_static_info = (void (*)(size_t *, size_t *))glibc_private("_dl_get_tls_static_info");
	tls.call_tls_dtors = (void (*)(void))glibc_private("__call_tls_dtors");
	if (!tls.allocate_tls || !tls.allocate_tls_init || !tls.deallocate_tls ||
	    !tls.get_static_info || !tls.call_tls_dtors)
		return "glibc's TLS entry points are missing";
	if (!&__rseq_offset)
		return "this glibc has no __rseq_offset";
	char *tp = __weft_vp()->tp0;
	const struct tcb_header *h = (const void *)tp;
	if (h->tcb != tp || h->self != tp)
		return "the thread pointer does not point at glibc's TCB";
	if (*(pid_t *)(tp + TCB_TID) != (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0))
		return "struct pthread's tid is not where glibc 2.36 keeps it";
	if (*(size_t *)(tp + TCB_STACKBLOCK_SIZE) != (size_t)__libc_stack_end)
		return "struct pthread's stackblock_size is not where glibc 2.36 keeps it";
	tls.rseq_offset = __rseq_offset;
	tls.tcb_size = (size_t)tls.rseq_offset + 32;
	if (tls.tcb_size % TCB_ALIGN || tls.tcb_size < TCB_STACKBLOCK_SIZE + 8 || tls.tcb_size > 4096)
		return "struct pthread does not have glibc 2.36's size";
	size_t align;
	tls.get_static_info(&tls.static_size, &align);
	if (align & (align - 1) || align > 65536 || tls.static_size <= tls.tcb_size)
		return "glibc's static TLS is not laid out as expected";
	tls.align = align > TCB_ALIGN ? align : TCB_ALIGN;
	tls.errno_offset = (char *)&errno - tp;
	return NULL;
}

/* ---- a UT's thread block ------------------------------------------------ */

/*
 * Make `tp` a TCB glibc accepts for a UT of this VP, its stack [lo, hi).
 * glibc reads and writes only a few struct pthread fields through %fs
 * (the header, tid, cancelhandling, the robust list, stackblock_size, the
 * rseq area; NPTL's keys and cleanup buffers, which Weft replaces): a TCB
 * this VP set up for an earlier UT on the same stack is clean apart from
 * those, so only memory that was not one of ours is cleared whole.  Memory
 * known to read as zero (`zeroed`: a stack's fresh pages) is neither
 * cleared nor read: a read of a page never touched maps the zero page, and
 * the first write then faults again and flushes the TLB of every CPU the
 * process runs on (an IPI per thread block under M:N).
 */
static void tcb_fill(char *tp, const struct vp *vp, const char *lo, const char *hi, bool zeroed)
{
	const struct tcb_header *k = vp->tp0;
	struct tcb_header *h = (struct tcb_header *)tp;
	if (!zeroed)
		memset(tp, 0, h->tcb == tp && h->self == vp->self0 ? sizeof *h : tls.tcb_size);
	h->tcb = tp;
	h->self = vp->self0;               /* THREAD_SELF: the VP's kernel thread */
	h->multiple_threads = k->multiple_threads;
	h->sysinfo = k->sysinfo;
	h->stack_guard = k->stack_guard;
	h->pointer_guard = k->pointer_guard;
	h->feature_1 = k->feature_1;
	*(pid_t *)(tp + TCB_TID) = vp->tid;
	*(int *)(tp + TCB_CANCELHANDLING) = 0;
	*(const void **)(tp + TCB_STACKBLOCK) = lo;
	*(size_t *)(tp + TCB_STACKBLOCK_SIZE) = (size_t)(hi - lo);
	/* not registered with the kernel: sched_getcpu asks the kernel */
	*(int32_t *)(tp + tls.rseq_offset + 4) = RSEQ_CPU_ID_REGISTRATION_FAILED;
}

/* M:N: t is about to run on vp (sched.c, switch_to): glibc's identity in
 * its thread block is that VP's (THREAD_SELF, the tid), so libc's
 * recursive locks see the UTs of one VP as one owner and UTs on two VPs as
 * two (tcb_fill's rule, kept as the UT moves).  The identity is the
 * VP's self0, a copy taken when the VP got its first kernel thread, never
 * the header of vp->tp0 itself: that block is also the main UT's, and is
 * rehomed with it when it moves to another VP (reading the VP's identity
 * from it gave two VPs one owner, and stdio's lock let both in).  A UT
 * that holds FILEs by flockfile, or is inside dlopen or dlclose, takes
 * those glibc locks with it (the hook ut_rehomed): a lock that kept the
 * old identity as its owner made the UT's next printf to that FILE, or
 * its next dlsym, wait for itself. */
void __weft_tls_rehome(struct ut *t, const struct vp *vp)
{
	struct tcb_header *h = t->tp;
	if (h->self == vp->self0)
		return;
	if (unlikely(t->files_held | t->in_loader))
		__weft_hooks.ut_rehomed(t, h->self, vp->self0, *(pid_t *)((char *)t->tp + TCB_TID), vp->tid);
	h->self = vp->self0;
	*(pid_t *)((char *)t->tp + TCB_TID) = vp->tid;
}

/* In a forked child, the caller's own block (vp.c, after_fork_child):
 * glibc's fork wrote the child's tid into the block the fork ran on, the
 * carrier's own (vp.c, before_fork), not into this one, which still held
 * the parent's; and under M:N the VP's identity may have moved to that
 * carrier (mn.c, __weft_mn_after_fork). */
/*
 * A fork's child: glibc's fork wrote the child's tid into THREAD_SELF of
 * the block the forking kernel thread ran on.  The forking VP's identity
 * (tp0: the block glibc's code sees as THREAD_SELF for its UTs) is not
 * always that struct pthread: VP 0's is the first thread's block (mn.c);
 * a VP whose identity never moved (M:1, where UTs without TLS of their
 * own run on tp0) forked from a spare; and the first kernel thread's own
 * block, once apart (kthread.c, __weft_kt0_tcb_apart), is one Weft made,
 * whose THREAD_SELF names another.  There the identity kept a parent's
 * tid (the parent's pid: the first kernel thread's), and glibc's code in
 * the child that reads THREAD_SELF->tid read a task of the parent's
 * (mn_fork_child_identity, fork_child_identity_after_handoff).  It gets
 * the child's tid.  The word is glibc 2.36's tid when per-UT TLS checked
 * the layout, or when it holds the parent's pid (a fork's child writes its
 * own there, so this holds in the children of children too).
 */
void __weft_tls_fork_identity(const struct vp *vp, pid_t parent_pid)
{
	char *id = vp->tp0;
	if (!id)
		return;
	pid_t *tid = (pid_t *)(id + TCB_TID);
	if (*tid != vp->tid && (tls.mode == TLS_PER_UT || *tid == parent_pid))
		*tid = vp->tid;
}

void __weft_tls_fork_child(struct ut *self, const struct vp *vp)
{
	if (tls.mode != TLS_PER_UT || !self->tp)
		return;
	struct tcb_header *h = self->tp;
	h->self = vp->self0;
	*(pid_t *)((char *)self->tp + TCB_TID) = vp->tid;
}

static struct tls_ctx *ctx_take(void)
{
	struct tls_ctx *c = tls.pool;
	if (c) {
		tls.pool = c->next;
		return c;
	}
	return calloc(1, sizeof *c);
}

/* ---- glibc's ctype tables ------------------------------------------------ */

/*
 * A glibc thread's start calls __ctype_init, which points three words of
 * libc's TLS at the LC_CTYPE tables of the thread's locale: the class
 * table (isalpha and the other classes, strtod, printf's number
 * formatting), toupper's and tolower's.  In the TLS image they are zero,
 * so in a block made here they were too, and each of those calls crashed
 * in a UT with TLS of its own (a C program under WEFT_VPS=2 or
 * WEFT_TLS=on).  A new block's locale is the global one (the image's), so
 * its words get the global locale's tables as setlocale last set them.
 *
 * Where they are: __ctype_b_loc() and its two siblings return the word's
 * address in the caller's block, so its offset from the caller's thread
 * pointer is the same in every block.  What they should hold: glibc keeps
 * the global locale's current three in its old, versioned __ctype_b,
 * __ctype_toupper and __ctype_tolower, which setlocale rewrites on every
 * LC_CTYPE change (ctype-info.c, _nl_postload_ctype).  Reading them is
 * three loads, where running __ctype_init itself would need the new block
 * as the thread pointer, and a signal taken meanwhile would run on a block
 * whose sanitizer state is empty.  Without those symbols (another libc),
 * a new block takes the creating thread's words: the same tables unless
 * it chose a locale of its own (uselocale), or another thread called
 * setlocale since its last.
 */
#define GLIBC_FIRST_VERSION "GLIBC_2.2.5"     /* x86-64's oldest symbol set */

static void find_ctype_words(void)
{
	static const char *const global[3] = { "__ctype_b", "__ctype_toupper", "__ctype_tolower" };
	char *tp = __weft_arch_tp_get();
	tls.ctype_off[0] = (char *)__ctype_b_loc() - tp;
	tls.ctype_off[1] = (char *)__ctype_toupper_loc() - tp;
	tls.ctype_off[2] = (char *)__ctype_tolower_loc() - tp;
	for (int i = 0; i < 3; i++)
		tls.ctype_global[i] = dlvsym(RTLD_DEFAULT, global[i], GLIBC_FIRST_VERSION);
	/* all three or none: the fallback then copies all three */
	if (!tls.ctype_global[0] || !tls.ctype_global[1] || !tls.ctype_global[2])
		tls.ctype_global[0] = NULL;
}

static void ctype_fill(char *tp)
{
	if (likely(tls.ctype_global[0])) {
		for (int i = 0; i < 3; i++)
			*(const void **)(tp + tls.ctype_off[i]) = *tls.ctype_global[i];
		return;
	}
	const char *from = __weft_arch_tp_get();
	for (int i = 0; i < 3; i++)
		*(const void **)(tp + tls.ctype_off[i]) = *(const void *const *)(from + tls.ctype_off[i]);
}

/* Give `tp` its DTV and fresh static TLS, keeping malloc's per-thread
 * state of the context it inherits. */
static int tls_init_block(char *tp, struct tls_ctx *c)
{
	struct tcb_header *h = (struct tcb_header *)tp;
	if (c->dtv) {
		h->dtv = c->dtv;
		if (!tls.allocate_tls_init(tp, true))
			return EAGAIN;
	} else if (!tls.allocate_tls(tp)) {
		return EAGAIN;
	}
	c->dtv = h->dtv;
	for (unsigned i = 0; i < tls.nmw; i++)
		*(uint64_t *)(tp + tls.mw_off[i]) = c->malloc_words[i];
	ctype_fill(tp);
	return 0;
}

int __weft_tls_attach(struct ut *t, char **stack_top)
{
	struct vp *vp = __weft_vp();
	uintptr_t hi = (uintptr_t)t->stack.hi;
	uintptr_t tp = (hi - tls.tcb_size) & ~(uintptr_t)(tls.align - 1);
	uintptr_t floor = (tp - tls.reserve) & ~(uintptr_t)15;
	if (floor < (uintptr_t)t->stack.lo + 4096)
		return EINVAL;                 /* no room for a thread block and a stack */
	struct tls_ctx *c = ctx_take();
	if (!c)
		return EAGAIN;
	tcb_fill((char *)tp, vp, t->stack.lo, t->stack.hi, t->stack.zeroed);
	int e = tls_init_block((char *)tp, c);
	if (e) {
		c->next = tls.pool;
		tls.pool = c;
		return e;
	}
	t->tp = (void *)tp;
	t->tls = c;
	*stack_top = (char *)floor;
	return 0;
}

/* A UT made before UTs had TLS of their own gets it when it next runs: its
 * stack's top is in use, so the block is glibc's own allocation. */
int __weft_tls_attach_apart(struct ut *t)
{
	struct vp *vp = __weft_vp();
	struct tls_ctx *c = ctx_take();
	char *tp = NULL;
	if (c && c->storage) {
		tp = c->storage;
	} else if (c) {
		tp = tls.allocate_tls(NULL);       /* TCB + static TLS + DTV */
		if (tp) {
			c->dtv = ((struct tcb_header *)tp)->dtv;
			c->storage = tp;
		}
	}
	if (!tp) {
		if (c) {
			c->next = tls.pool;
			tls.pool = c;
		}
		return EAGAIN;
	}
	dtv_t *dtv = c->dtv;
	tcb_fill(tp, vp, t->stack.lo, t->stack.hi, false);
	((struct tcb_header *)tp)->dtv = dtv;
	if (!tls.allocate_tls_init(tp, true)) {
		c->next = tls.pool;
		tls.pool = c;
		return EAGAIN;
	}
	c->dtv = ((struct tcb_header *)tp)->dtv;
	for (unsigned i = 0; i < tls.nmw; i++)
		*(uint64_t *)(tp + tls.mw_off[i]) = c->malloc_words[i];
	ctype_fill(tp);
	*(int *)(tp + tls.errno_offset) = t->saved_errno;
	t->tp = tp;
	t->tls = c;
	return 0;
}

int __weft_tls_guest_block(struct ut *g, pid_t tid)
{
	int e = __weft_tls_attach_apart(g);
	if (e)
		return e;
	struct tcb_header *h = g->tp;
	h->self = g->tp;
	*(pid_t *)((char *)g->tp + TCB_TID) = tid;
	return 0;
}

bool __weft_tls_glibc_own_block(const void *tp, pid_t tid)
{
	const struct tcb_header *h = tp;
	return h->self == tp && *(const pid_t *)((const char *)tp + TCB_TID) == tid;
}

int *__weft_tls_errno_of(void *tp)
{
	return (int *)((char *)tp + tls.errno_offset);
}

void __weft_tls_attach_late(struct ut *t)
{
	if (t == NULL || t->tp)
		return;
	if (__weft_tls_attach_apart(t) != 0)
		__weft_die("no memory for thread %llu's thread-local storage", (unsigned long long)t->id);
}

void __weft_tls_exit_dtors(struct ut *self)
{
	if (tls.mode == TLS_PER_UT && self->tp) {
		__weft_outcall_begin(__weft_vp());
		tls.call_tls_dtors();
		__weft_outcall_end();
	}
}

void __weft_tls_detach(struct ut *self)
{
	struct tls_ctx *c = ctx_of(self);
	if (!c)
		return;
	char *tp = self->tp;
	for (unsigned i = 0; i < tls.nmw; i++)
		c->malloc_words[i] = *(uint64_t *)(tp + tls.mw_off[i]);
	/* blocks __tls_get_addr made for modules loaded with dlopen.  Only
	 * theirs: the UT runs on on this thread block until its last switch,
	 * and instrumented code on that way (ASan's fake-stack slot is in its
	 * runtime's TLS, reached by __tls_get_addr) must still find its static
	 * blocks here; an entry made UNALLOCATED would be resolved against
	 * THREAD_SELF, the kernel thread's block.  The next UT's attach sets
	 * every entry again (_dl_allocate_tls_init). */
	dtv_t *dtv = c->dtv = ((struct tcb_header *)tp)->dtv;
	size_t used = dtv[-1].counter < tls.max_modid ? dtv[-1].counter : tls.max_modid;
	for (size_t i = 1; i <= used; i++) {
		if (dtv[i].pointer.to_free) {
			free(dtv[i].pointer.to_free);
			dtv[i].pointer.to_free = NULL;
			dtv[i].pointer.val = TLS_DTV_UNALLOCATED;
		}
	}
	self->tls = NULL;
	c->next = tls.pool;
	tls.pool = c;
}

/* ---- a second kernel thread ------------------------------------------- */

static void multiple_threads_one(struct ut *t, void *ctx)
{
	(void)ctx;
	if (t->tp)
		((struct tcb_header *)t->tp)->multiple_threads = 1;
}

/* glibc's "catomic" operations skip the lock prefix while the running
 * TCB's multiple_threads is 0.  Once Weft makes a second kernel thread
 * (kthread.c), every thread block says 1: the VP's first kernel thread's
 * (UTs without TLS of their own use it, and tcb_fill copies it into new
 * blocks) and every UT's own.  Mainline, before the second thread runs. */
void __weft_tls_multiple_threads(void)
{
	struct vp *vp = __weft_vp();
	((struct tcb_header *)vp->tp0)->multiple_threads = 1;
	__weft_ut_foreach(multiple_threads_one, NULL);
}

/* ---- malloc's per-thread state ----------------------------------------- */

/*
 * glibc's malloc keeps a per-thread cache and arena in two TLS words of
 * libc's block, and frees them only when a kernel thread exits.  Find them
 * once: run one malloc/free on a fresh thread block and see which words of
 * libc's block it set (errno aside).  A malloc that is not glibc's sets none
 * there, and then there is nothing to carry.
 */
static void find_malloc_words(uintptr_t libc_block, size_t libc_size)
{
	struct vp *vp = __weft_vp();
	size_t span = tls.tcb_size + tls.static_size + tls.align;
	char *mem = calloc(1, span);
	if (!mem)
		return;
	char *tp = (char *)(((uintptr_t)mem + tls.static_size + tls.align) & ~(uintptr_t)(tls.align - 1));
	tcb_fill(tp, vp, NULL, NULL, false);
	if (!tls.allocate_tls(tp)) {
		free(mem);
		return;
	}
	long lo = (long)(libc_block - (uintptr_t)vp->tp0);       /* negative */
	size_t words = libc_size / 8;
	uint64_t before[64];
	if (words > 64)
		words = 64;
	memcpy(before, tp + lo, words * 8);
	sigset_t all, old;
	sigfillset(&all);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8, 0, 0);
	/* Back to the block the caller ran on, not to tp0: the caller may be
	 * the monitor (a takeover turns TLS on) or a carrier on a block of its
	 * own (a first guest's request), and a kernel thread left on tp0 would
	 * share it with the one that runs there — glibc's thread state, and
	 * without FSGSBASE the VP word in it (tp.h): under two VPs the main
	 * UT then read the other VP's word and crashed (guest_keys_and_exit). */
	void *was = __weft_arch_tp_get();
	__weft_tp_set(tp);
	void *volatile probe = malloc(24);      /* volatile: GCC drops free(malloc()) */
	free(probe);
	__weft_tp_set(was);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	struct tls_ctx *c = calloc(1, sizeof *c);
	for (size_t w = 0; w < words && tls.nmw < MAX_MALLOC_WORDS; w++) {
		long off = lo + (long)w * 8;
		if (((uint64_t *)(tp + lo))[w] == before[w] || (off <= tls.errno_offset && tls.errno_offset < off + 8))
			continue;
		tls.mw_off[tls.nmw++] = off;
	}
	/* the scratch block's cache becomes the first pooled context's */
	if (c) {
		for (unsigned i = 0; i < tls.nmw; i++)
			c->malloc_words[i] = *(uint64_t *)(tp + tls.mw_off[i]);
		c->next = tls.pool;
		tls.pool = c;
	}
	dtv_t *dtv = ((struct tcb_header *)tp)->dtv;
	free(dtv - 1);
	free(mem);
}

/* ---- turning it on ------------------------------------------------------ */

static void turn_on(struct scan *sc)
{
	struct vp *vp = __weft_vp();
	tls.reserve = (sc->max_offset + tls.align - 1) & ~(size_t)(tls.align - 1);
	tls.max_modid = sc->max_modid;
	/* A UT's static TLS lies at the top of its stack.  Where it is large
	 * (ThreadSanitizer's runtime alone has 768 KiB), the built-in default
	 * grows by it, as NPTL's default stack holds its TLS besides: the
	 * program still gets the stack it had.  A size the program or
	 * WEFT_STACK_SIZE chose stays as chosen. */
	size_t def = __weft_stack_default_size();
	if (!__weft_cfg()->stack_size && tls.reserve + tls.tcb_size > def / 4)
		__weft_stack_set_default_size((def + tls.reserve + tls.tcb_size + 65535) & ~(size_t)65535);
	find_ctype_words();
	if (sc->libc_block)
		find_malloc_words(sc->libc_block, sc->libc_size);
	tls.mode = TLS_PER_UT;
	/* errno lives in each UT's TLS now: the switch's save and restore go
	 * to a word nobody reads */
	vp->errnop = &vp->errno_sink;
	/* The running UT keeps the kernel thread's own block, so nothing moves
	 * under it; every other UT gets its own when it next runs (a parked UT
	 * sits inside a Weft call, a switch point). */
	vp->cur->tp = vp->tp0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	vp->tp_on = 1;
}

static void decide(bool at_start)
{
	struct scan sc;
	if (tls.mode == TLS_PER_UT) {
		/* a module loaded since may use more static TLS */
		sc = scan_modules();
		size_t r = (sc.max_offset + tls.align - 1) & ~(size_t)(tls.align - 1);
		if (r > tls.reserve)
			tls.reserve = r;
		if (sc.max_modid > tls.max_modid)
			tls.max_modid = sc.max_modid;
		return;
	}
	const char *want = __weft_cfg()->tls;
	if (want && strcmp(want, "off") == 0)
		return;
	if (!tls.checked) {
		tls.checked = true;
		const char *why = check_glibc();
		tls.usable = why == NULL;
		if (why && (at_start || want))
			__weft_warn("weft: threads share the kernel thread's thread-local storage: %s", why);
	}
	if (!tls.usable)
		return;
	sc = scan_modules();
	if (sc.other_tls || (want && strcmp(want, "on") == 0))
		turn_on(&sc);
}

void __weft_tls_init(void)
{
	decide(true);
}

/* ---- on demand, for a takeover (monitor.c) ------------------------------
 * When the monitor takes the VP from a kernel thread K that sits in the
 * kernel, K will come back and run its UT's code (libc's included) beside
 * the next carrier until it rejoins.  Sharing one thread pointer, they
 * would share errno, malloc's tcache and the rest of libc's thread state,
 * so UTs get TLS of their own first: K keeps the first kernel thread's
 * block (the UT it runs owns it, as turn_on gives the running UT), and
 * every other UT gets its own when it next runs.  The module scan must
 * run on a carrier (dl_iterate_phdr names the calling thread's blocks), so
 * it is made ahead, when the monitor starts and after each dlopen. */
static struct {
	bool ready;
	struct scan sc;
} takeover;

bool __weft_tls_takeover_prepare(void)
{
	if (tls.mode == TLS_PER_UT)
		return true;
	if (!tls.usable)
		return false;
	takeover.sc = scan_modules();
	takeover.ready = true;
	return true;
}

/* glibc's own cancellation word of the calling context: THREAD_SELF's
 * cancelhandling, THREAD_SELF being the header's `self` under the thread
 * pointer (for a UT, its VP's kernel thread: tcb_fill).  NULL while the
 * layout facts have not been checked, or do not hold.  Async-signal-safe
 * (a load of the header; the facts are written once, at start-up or at
 * the monitor's start, before any takeover). */
volatile int *__weft_tls_glibc_cancelhandling_of(const void *tp)
{
	const struct tcb_header *h = tp;
	if (!tls.usable || !h || !h->self)
		return NULL;
	return (volatile int *)((char *)h->self + TCB_CANCELHANDLING);
}

bool __weft_tls_glibc_marked(const void *tp)
{
	volatile int *ch = __weft_tls_glibc_cancelhandling_of(tp);
	return ch && (__atomic_load_n(ch, __ATOMIC_RELAXED) & GLIBC_CANCELTYPE);
}

void **__weft_tls_glibc_cleanup_jmp_buf(void *tp)
{
	if (!tls.usable || !tp)
		return NULL;
	return (void **)((char *)tp + TCB_CLEANUP_JMP_BUF);
}

void __weft_tls_glibc_threaded(void *tp)
{
	((struct tcb_header *)tp)->multiple_threads = 1;
}

uintptr_t __weft_tls_stack_floor(const struct ut *t)
{
	uintptr_t tp = (uintptr_t)t->tp, lo = (uintptr_t)t->stack.lo, hi = (uintptr_t)t->stack.hi;
	if (tp >= lo && tp < hi)
		return (tp - tls.reserve) & ~(uintptr_t)15;   /* __weft_tls_attach's floor */
	return hi & ~(uintptr_t)15;
}

volatile int *__weft_tls_glibc_cancelhandling(void)
{
	return __weft_tls_glibc_cancelhandling_of(__weft_arch_tp_get());
}

void __weft_tls_takeover_turn_on(void)
{
	if (tls.mode != TLS_PER_UT && takeover.ready)
		turn_on(&takeover.sc);
}

void __weft_tls_modules_changed(void)
{
	decide(false);
	if (takeover.ready)
		__weft_tls_takeover_prepare();
}

bool __weft_tls_per_ut(void)
{
	return tls.mode == TLS_PER_UT;
}
