/*
 * x86-64 switch-frame construction.  Included only through src/arch/arch.h.
 *
 * Register convention of a fresh frame (see switch.S): r12 holds the entry
 * function, r13 its argument; the return address slot holds __weft_entry.
 * Invariant: after "ret" into __weft_entry, %rsp is 16-byte aligned, so the
 * "call *%r12" there gives the entry function the ABI's rsp % 16 == 8.
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif
#include <stddef.h>
#include <stdint.h>

void __weft_switch(void **save_sp, void *load_sp);
/* Call fn(arg) on the stack whose top is stack_top, then come back. */
void __weft_arch_call_on(void *stack_top, void (*fn)(void *), void *arg);
void __weft_entry(void);
/* Copy n bytes of a copy-stack UT's frames (stackcopy.S): never
 * instrumented, no stack of its own. */
void __weft_arch_stack_copy(void *dst, const void *src, size_t n);
void __weft_arch_stack_zero(void *dst, size_t n);

/* The stack pointer here (the caller's frame is above it). */
static inline uintptr_t __weft_arch_sp_now(void)
{
	uintptr_t sp;
	__asm__ volatile("movq %%rsp, %0" : "=r"(sp));
	return sp;
}

/* The bytes a fresh frame (below) occupies under its stack's top. */
enum { WEFT_ARCH_FRESH_FRAME_BYTES = 16 + 8 * 8 };

enum { WEFT_ARCH_FRAME_WORDS = 8 };   /* fp control + 6 regs + return addr */

static inline void *__weft_arch_frame(void *stack_top, void (*fn)(void *), void *arg)
{
	uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)(top - 16) - WEFT_ARCH_FRAME_WORDS;
	uint32_t mxcsr;
	uint16_t fpucw;

	/* C11 7.6: a new thread starts with its creator's floating-point modes. */
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(fpucw));
	f[0] = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
	f[1] = 0;                      /* r15 */
	f[2] = 0;                      /* r14 */
	f[3] = (uint64_t)arg;          /* r13 */
	f[4] = (uint64_t)fn;           /* r12 */
	f[5] = 0;                      /* rbx */
	f[6] = 0;                      /* rbp */
	f[7] = (uint64_t)__weft_entry; /* return address */
	((uint64_t *)(top - 16))[0] = 0;
	((uint64_t *)(top - 16))[1] = 0;
	return f;
}
