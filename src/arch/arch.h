/*
 * The one place that selects the ISA backend (CMake's WEFT_ARCH names the
 * directory).  Everything above the arch layer sees only:
 *   ctx.h      __weft_switch, __weft_entry, __weft_arch_frame
 *   syscall.h  __weft_raw_syscall6
 *   preempt.h  the fake-call helpers, __weft_arch_fake_calls_possible
 *              (xsave sizing), __weft_arch_sigreturn
 *   tp.h       __weft_arch_tp_get / __weft_arch_tp_set (the TLS seam)
 *   compat.h   the glibc version names of older ABIs (posix/compat.c)
 *   cycles.h   __weft_arch_cycles (a cycle counter) and whether it is
 *              invariant
 *   arch.c     __weft_arch_init, run once at start-up
 * A port provides the same names in src/arch/<isa>/, plus its symbol
 * versions (weft.map) and compat symbols (compat.h).
 */
#ifndef WEFT_ARCH_H
#define WEFT_ARCH_H
#define WEFT_ARCH_INCLUDED_FROM_ARCH_H
#if defined(__x86_64__)
#include "x86_64/ctx.h"
#include "x86_64/syscall.h"
#include "x86_64/preempt.h"
#include "x86_64/tp.h"
#include "x86_64/compat.h"
#include "x86_64/cycles.h"
#else
#error "Weft has a backend for x86-64 only"
#endif
#undef WEFT_ARCH_INCLUDED_FROM_ARCH_H
void __weft_arch_init(void);
#endif
