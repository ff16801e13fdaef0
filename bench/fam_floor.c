/*
 * fam_floor.c — the "Floor" rows: what any switch or lock costs at least
 * on this machine: Weft's bare arch switch (switch.S, compiled into
 * bench-weft), a register-only switch, a function call, a lock cmpxchg +
 * store, and the empty loop every row includes.
 *
 * Invariant: no scheduler and no thread-library call inside these loops;
 * each loop is the instruction sequence its label names and nothing else.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#ifdef BENCH_WEFT
#include "arch/arch.h"
#endif

#define GROUP "Floor"

#ifdef BENCH_WEFT
static void *floor_a_sp, *floor_b_sp;

static BENCH_ALIGNED void floor_partner(void *arg)
{
	(void)arg;
	for (;;)
		__weft_switch(&floor_b_sp, floor_a_sp);
}

/* The bare arch switch: two contexts, no scheduler, no bookkeeping. */
static BENCH_ALIGNED int64_t m_arch_switch(uint64_t n)
{
	static char *stack;
	if (!stack) {
		stack = aligned_alloc(64, 64 * 1024);
		floor_b_sp = __weft_arch_frame(stack + 64 * 1024, floor_partner, NULL);
	}
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		__weft_switch(&floor_a_sp, floor_b_sp);
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}
#endif

#if defined(__x86_64__)
/*
 * The least a switch can do on x86-64: push the six callee-saved
 * registers, swap stack pointers, pop, return.  Unlike switch.S it keeps
 * no MXCSR or x87 control word, so the difference between the two floor
 * rows is what carrying the floating-point control state costs.
 */
void bench_reg_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
	".p2align 6\n"
	"bench_reg_switch:\n"
	"\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
	"\tret\n");

static void *reg_a_sp, *reg_b_sp;

static BENCH_ALIGNED void reg_partner(void)
{
	for (;;)
		bench_reg_switch(&reg_b_sp, reg_a_sp);
}

static BENCH_ALIGNED int64_t m_reg_switch(uint64_t n)
{
	static char *stack;
	if (!stack) {
		stack = aligned_alloc(64, 64 * 1024);
		/* six registers, the return address into reg_partner, and the
		 * slot a call would have left, so that rsp % 16 == 8 there */
		uint64_t *f = (uint64_t *)(stack + 64 * 1024) - 8;
		memset(f, 0, 8 * sizeof *f);
		f[6] = (uint64_t)(uintptr_t)reg_partner;
		reg_b_sp = f;
	}
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		bench_reg_switch(&reg_a_sp, reg_b_sp);
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}
#endif

__attribute__((noinline, noipa)) static BENCH_ALIGNED int nullfunc(int x)
{
	__asm__ volatile("");
	return x + 1;
}

static BENCH_ALIGNED int64_t m_call(uint64_t n)
{
	int x = 0;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		x = nullfunc(x);
	KEEP(x);
	return now_ns() - t0;
}

static int cas_word;

BENCH_ALIGNED int64_t bench_cmpxchg(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int expect = 0;
		__atomic_compare_exchange_n(&cas_word, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		__atomic_store_n(&cas_word, 0, __ATOMIC_RELEASE);
	}
	return now_ns() - t0;
}

static BENCH_ALIGNED int64_t m_loop(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		__asm__ volatile("");
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "arch_switch", GROUP, U_NS, F_WEFT_ONLY, "bare arch context switch (switch.S in a loop)", "-",
	  NULL,
#ifdef BENCH_WEFT
	  m_arch_switch,
#else
	  NULL,
#endif
	  NULL, NULL, "Weft's own switch: measured in the Weft binary" },
	{ "reg_switch", GROUP, U_NS, 0, "register-only switch (6 callee-saved registers; no MXCSR/x87 CW)",
	  "-", NULL,
#if defined(__x86_64__)
	  m_reg_switch, NULL, NULL, NULL },
#else
	  NULL, NULL, "x86-64 only", "x86-64 only" },
#endif
	{ "call", GROUP, U_NS, 0, "function call", "0.3 µs nullfunc(arg) (Small & Seltzer; 486)", NULL, m_call },
	{ "cmpxchg", GROUP, U_NS, 0, "lock cmpxchg + store pair",
	  "0.7 µs interlocked test-and-set (Bershad; i486)", NULL, bench_cmpxchg },
	{ "loop", GROUP, U_NS, 0, "empty loop iteration (included in every row)", "-", NULL, m_loop },
};

BENCH_FAMILY(fam_floor, rows);
