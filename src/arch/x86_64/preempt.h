/*
 * x86-64 fake calls: what the tick handler needs to know about a signal's
 * interrupted context.  Included only through src/arch/arch.h.
 *
 * Invariant kept by __weft_arch_fake_call: the 128-byte red zone below the
 * interrupted %rsp is left untouched; the trampoline's "ret $128" puts %rsp
 * back exactly where it was.
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#define WEFT_ARCH_RED_ZONE 128

void __weft_preempt_trampoline(void);
extern uint64_t __weft_xsave_size;
extern bool __weft_arch_valgrind __attribute__((visibility("hidden")));
void __weft_arch_valgrind_fake_call(void *slot) __attribute__((visibility("hidden")));

static inline uintptr_t __weft_arch_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t __weft_arch_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline void __weft_arch_set_pc(ucontext_t *uc, uintptr_t pc)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

/* Make the interrupted code "call" the trampoline when the signal returns. */
static inline void __weft_arch_fake_call(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t *slot = (uint64_t *)((uintptr_t)g[REG_RSP] - WEFT_ARCH_RED_ZONE - 8);
	if (__builtin_expect(__weft_arch_valgrind, 0))
		__weft_arch_valgrind_fake_call(slot);
	*slot = (uint64_t)g[REG_RIP];
	g[REG_RSP] = (greg_t)(uintptr_t)slot;
	g[REG_RIP] = (greg_t)(uintptr_t)__weft_preempt_trampoline;
}

/* The cancellable system call (cancellable.S): a kick that finds the PC
 * in [begin, end) with a request due in the bits %rbx points at makes the
 * call end there with -EINTR without being made (again).  True if so. */
extern const char __weft_arch_csys_begin[] __attribute__((visibility("hidden")));
extern const char __weft_arch_csys_end[] __attribute__((visibility("hidden")));
static inline bool __weft_arch_csys_stop(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t pc = (uintptr_t)g[REG_RIP];
	if (pc < (uintptr_t)__weft_arch_csys_begin || pc >= (uintptr_t)__weft_arch_csys_end)
		return false;
	uint8_t bits = __atomic_load_n((const uint8_t *)(uintptr_t)g[REG_RBX], __ATOMIC_RELAXED);
	if ((bits & 0x0b) != 0x01)
		return false;
	g[REG_RIP] = (greg_t)(uintptr_t)__weft_arch_csys_end;
	g[REG_RAX] = -4;                  /* -EINTR */
	return true;
}

/* A program signal over a kept blocking call (runtime/handoff.c): with the
 * PC in [begin, end) the call has not taken effect (not made yet, or the
 * kernel about to make it again, SA_RESTART), so it ends there with
 * -EINTR, whatever the bits say.  True if so. */
static inline bool __weft_arch_csys_interrupt(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t pc = (uintptr_t)g[REG_RIP];
	if (pc < (uintptr_t)__weft_arch_csys_begin || pc >= (uintptr_t)__weft_arch_csys_end)
		return false;
	g[REG_RIP] = (greg_t)(uintptr_t)__weft_arch_csys_end;
	g[REG_RAX] = -4;                  /* -EINTR */
	return true;
}

/* The interrupted PC is on a syscall instruction (0f 05): the kernel put it
 * back there to restart the call the signal interrupted, or the call is
 * the next thing done. */
static inline bool __weft_arch_at_syscall(const ucontext_t *uc)
{
	const uint8_t *pc = (const uint8_t *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	return pc[0] == 0x0f && pc[1] == 0x05;
}

/* On a syscall instruction (the kernel restarts the call this signal
 * interrupted): its number and its second argument. */
static inline bool __weft_arch_restarting(const ucontext_t *uc, long *nr, long *a2)
{
	if (!__weft_arch_at_syscall(uc))
		return false;
	const greg_t *g = uc->uc_mcontext.gregs;
	*nr = g[REG_RAX];
	*a2 = g[REG_RSI];
	return true;
}

/* The call __weft_arch_restarting found is not made again: the PC steps
 * over its syscall instruction with -EINTR in %rax, as if the kernel had
 * ended it so. */
static inline void __weft_arch_skip_restart(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	g[REG_RIP] += 2;
	g[REG_RAX] = -4;                  /* -EINTR */
}

/* Stack the trampoline needs below the interrupted %rsp, scheduler included. */
static inline uint64_t __weft_arch_fake_call_depth(void)
{
	return WEFT_ARCH_RED_ZONE + 8 + 17 * 8 + __weft_xsave_size + 64 + 2048;
}

/* The trampoline can save the whole register state here (OSXSAVE); sets
 * __weft_xsave_size.  False: no fake calls, so no time slicing (arch.c). */
bool __weft_arch_fake_calls_possible(void);

/* The signal-return trampoline for handlers Weft installs with the raw
 * rt_sigaction system call (sa_restorer; preempt.S). */
void __weft_arch_sigreturn(void);
