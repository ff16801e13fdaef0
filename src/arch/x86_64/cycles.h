/*
 * x86-64 cycle counter: the time-stamp counter, read without a fence.
 * Included only through src/arch/arch.h.  Owns nothing; its one rule: the
 * runtime may turn counter ticks into time only where
 * __weft_arch_cycles_invariant() said the counter runs at one rate in every
 * power state and on every CPU (runtime/timer.c's switch-path gate).
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif
#include <stdbool.h>
#include <stdint.h>

static inline uint64_t __weft_arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* The counter is invariant (CPUID 0x80000007 EDX bit 8: constant rate,
 * running through C-states) — arch.c. */
bool __weft_arch_cycles_invariant(void) __attribute__((visibility("hidden")));
