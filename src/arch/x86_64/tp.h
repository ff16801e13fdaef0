/*
 * x86-64 thread pointer (%fs base).  Included only through src/arch/arch.h.
 *
 * Owns: reading and setting the kernel thread's thread pointer, the seam
 * per-UT TLS uses (the switch path loads a UT's own pointer when it has
 * one: sched.c's switch_to).  glibc's TCB starts with a pointer to itself
 * (tcbhead_t.tcb), so %fs:0 reads the thread pointer without FSGSBASE.
 * Setting it uses wrfsbase where the kernel enabled FSGSBASE (Linux >= 5.9,
 * AT_HWCAP2 bit 1), about 13 ns here, else arch_prctl(ARCH_SET_FS), a
 * system call of about 265 ns (arch.c decides once, at start-up; the
 * system call also carries the kernel thread's VP word: below).
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif
#include <stdbool.h>
#include <stdint.h>

extern bool __weft_arch_fsgsbase;
void __weft_arch_tp_set_syscall(void *tp);
void __weft_arch_tp_load_syscall(void *tp);

static inline void *__weft_arch_tp_get(void)
{
	void *tp;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* Sanitizer builds: the kernel thread's id, kept in the TCB header's
 * other unused_vgetcpu_cache word (%fs:0x40) of whatever thread block the
 * kernel thread runs on and carried into the block it loads, as the VP
 * word is without FSGSBASE (below): the sanitizers' per-kernel-thread keys
 * (sync/key.c) look it up at every pthread_getspecific of theirs, and a
 * gettid system call there cost most of an ASan test's time where system
 * calls are slow.  0: not known (a foreign thread, or a kernel thread
 * before Weft's start routine ran); the reader then asks the kernel.  Set
 * only by a kernel thread Weft made, at its start (kthread.c), and by the
 * process's first kernel thread at Weft's start and in a fork's child
 * (vp.c), none of which ever ends or hands its block to glibc's stack
 * cache, so no foreign thread is given a block with a word set — but a
 * fork's child, whose glibc caches the blocks of the parent's other
 * threads: it clears their words first (kthread.c,
 * __weft_kt_words_after_fork).  Readers:
 * the kernel thread itself, its signal handlers included. */
#if defined(__SANITIZE_ADDRESS__) || defined(WEFT_TSAN)
#define WEFT_ARCH_KT_WORD 1
#define WEFT_ARCH_KT_SLOT 0x40
static inline int __weft_arch_kt_word(void)
{
	int w;
	__asm__ volatile("movl %%fs:%c1, %0" : "=r"(w) : "i"(WEFT_ARCH_KT_SLOT));
	return w;
}

static inline void __weft_arch_kt_word_set(int w)
{
	__asm__ volatile("movl %0, %%fs:%c1" : : "r"(w), "i"(WEFT_ARCH_KT_SLOT) : "memory");
}

/* a block no kernel thread runs on any more (a fork's child) */
static inline void __weft_arch_kt_word_clear(void *tp)
{
	*(volatile int *)((char *)tp + WEFT_ARCH_KT_SLOT) = 0;
}

/* the word goes into the block about to be loaded, before the load, so
 * that a signal handler reads the same word on either side of it */
static inline void __weft_arch_kt_word_carry(void *tp)
{
	*(volatile int *)((char *)tp + WEFT_ARCH_KT_SLOT) = __weft_arch_kt_word();
}
#else
#define WEFT_ARCH_KT_WORD 0
static inline void __weft_arch_kt_word_carry(void *tp)
{
	(void)tp;
}
#endif

static inline void __weft_arch_tp_set(void *tp)
{
	__weft_arch_kt_word_carry(tp);
	if (__builtin_expect(__weft_arch_fsgsbase, 1))
		__asm__ volatile("wrfsbase %0" : : "r"(tp) : "memory");
	else
		__weft_arch_tp_set_syscall(tp);
}

/* Load tp and carry neither word into it: for a kernel thread Weft did
 * not make moving between the block it shares with another thread and a
 * block of its own (guest.c), whose VP word is not its to carry (the
 * other thread's carrier keeps its own there) and whose kernel-thread word
 * stays 0 (unknown: the reader asks the kernel). */
static inline void __weft_arch_tp_load(void *tp)
{
	if (__builtin_expect(__weft_arch_fsgsbase, 1))
		__asm__ volatile("wrfsbase %0" : : "r"(tp) : "memory");
	else
		__weft_arch_tp_load_syscall(tp);
}

/* The stack pointer a jmp_buf returns to.  glibc mangles it (PTR_MANGLE:
 * xor with the pointer guard at %fs:0x30, then rotate left by 17). */
static inline uintptr_t __weft_arch_jmpbuf_sp(const long jb[8])
{
	uintptr_t guard, v = (uintptr_t)jb[6];
	__asm__ volatile("movq %%fs:0x30, %0" : "=r"(guard));
	v = (v >> 17) | (v << (64 - 17));
	return v ^ guard;
}

/* The landing (libc_landing.S): calls the function in %r12 on the stack
 * it was given, and never returns. */
void __weft_arch_libc_landing(void) __attribute__((visibility("hidden"), noreturn));

/* Make jb (a glibc __jmp_buf) land in fn, called on the stack below sp, as
 * if a setjmp at the landing had filled it: what glibc's
 * __libc_unwind_longjmp reads (rbp, rsp and the PC mangled with the
 * pointer guard, %r12 the function, the other registers zero). */
static inline void __weft_arch_landing_jmpbuf(long jb[8], uintptr_t sp, void (*fn)(void))
{
	uintptr_t guard;
	__asm__ volatile("movq %%fs:0x30, %0" : "=r"(guard));
	uintptr_t v[3] = { 0, sp, (uintptr_t)__weft_arch_libc_landing };   /* rbp, rsp, pc */
	for (int i = 0; i < 3; i++) {
		uintptr_t x = v[i] ^ guard;
		v[i] = (x << 17) | (x >> (64 - 17));
	}
	jb[0] = jb[3] = jb[4] = jb[5] = 0;
	jb[1] = (long)v[0];
	jb[2] = (long)(uintptr_t)fn;          /* %r12 */
	jb[6] = (long)v[1];
	jb[7] = (long)v[2];
}

/* glibc's THREAD_SELF: the thread descriptor the TCB header names (%fs:0x10);
 * arch.c has an out-of-line copy for the layers above. */
void *__weft_arch_thread_self(void) __attribute__((visibility("hidden")));
static inline void *__weft_arch_thread_self_inline(void)
{
	void *self;
	__asm__ volatile("movq %%fs:0x10, %0" : "=r"(self));
	return self;
}

/* The VP a kernel thread carries, under M:N (rt.h's __weft_vp): a word per
 * kernel thread, which a kernel thread Weft never set reads as 0 (a
 * foreign thread).  Readers: the kernel thread itself, its signal handlers
 * included; no other kernel thread reads it.
 *
 * With FSGSBASE it is the %gs base, which glibc and the compiler leave
 * alone on x86-64 and the kernel keeps across switches and signal
 * delivery (a clone copies it): rdgsbase, a register read of about 1 ns
 * that cannot fault.
 *
 * Without FSGSBASE (older kernels, CPUs without it, and hypervisors that
 * hide it: a PVM guest does, and it also refuses to load an LDT selector
 * into %gs, so the segment registers are no way round), the word is the
 * TCB header's unused_vgetcpu_cache[0] (%fs:0x38, which glibc 2.36 never
 * reads or writes) of whatever thread block the kernel thread runs on, and
 * __weft_arch_tp_set carries it from the block it leaves to the block it
 * loads.  That is the kernel thread's word as long as no thread block is
 * the current one of two kernel threads at once, which M:N keeps (every UT
 * has a block of its own; the first kernel thread's home leaves the main
 * UT's, whichever kernel thread the monitor took the main UT from:
 * kthread.c, __weft_kt0_tcb_apart; a kernel thread loads its own block
 * before it writes the word of a VP it takes: kthread.c, carry; and a
 * short move to another block returns to the one it left: tls.c,
 * find_malloc_words).  A foreign thread's block
 * is glibc's, made zeroed, and Weft never writes its word: it reads 0.  A
 * clone without CLONE_SETTLS shares its creator's block and reads the word
 * there; it carries a VP only on a block of its own, and moves between
 * the two with __weft_arch_tp_load (guest.c).
 * Weft's own kernel threads never end, so glibc's stack cache never hands
 * a block with the word set to a foreign thread while the process lives
 * (nor does a clone copy it: a new thread's block is a new one); a fork's
 * child does, and clears those words first (__weft_arch_vp_word_clear,
 * kthread.c's __weft_kt_after_fork). */
#define WEFT_ARCH_VP_SLOT 0x38
static inline void *__weft_arch_gs_get(void)
{
	void *gs;
	if (__builtin_expect(__weft_arch_fsgsbase, 1))
		__asm__ volatile("rdgsbase %0" : "=r"(gs));
	else
		__asm__ volatile("movq %%fs:%c1, %0" : "=r"(gs) : "i"(WEFT_ARCH_VP_SLOT));
	return gs;
}

static inline void __weft_arch_gs_set(void *gs)
{
	if (__builtin_expect(__weft_arch_fsgsbase, 1))
		__asm__ volatile("wrgsbase %0" : : "r"(gs) : "memory");
	else
		__asm__ volatile("movq %0, %%fs:%c1" : : "r"(gs), "i"(WEFT_ARCH_VP_SLOT) : "memory");
}

/* A block no kernel thread runs on any more: a fork's child inherits the
 * blocks of the parent's other kernel threads, and glibc's child puts them
 * in its stack cache, whence its next thread gets one.  Without FSGSBASE
 * that block's word still names the VP its old kernel thread carried, so
 * the newcomer would take itself for that VP's carrier (under ASan, whose
 * thread start asks pthread_self before Weft's start routine runs: the
 * answer was a NULL UT's handle, a fault, in every two-VP child of
 * mn_fork_child_restarts_vps on an AMD guest without FSGSBASE).  Cleared,
 * it reads 0: a foreign thread, until Weft sets it.  With FSGSBASE the
 * word is the kernel thread's %gs base and nothing is left in the block. */
static inline void __weft_arch_vp_word_clear(void *tp)
{
	if (!__builtin_expect(__weft_arch_fsgsbase, 1))
		*(void *volatile *)((char *)tp + WEFT_ARCH_VP_SLOT) = NULL;
}
