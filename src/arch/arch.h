/*
 * The one place that selects the ISA backend.  Everything above the arch
 * layer sees only __weft_switch, __weft_entry, __weft_arch_frame and
 * __weft_raw_syscall6, and the fake-call helpers of x86_64/preempt.h.
 */
#ifndef WEFT_ARCH_H
#define WEFT_ARCH_H
#define WEFT_ARCH_INCLUDED_FROM_ARCH_H
#if defined(__x86_64__)
#include "x86_64/ctx.h"
#include "x86_64/syscall.h"
#include "x86_64/preempt.h"
#else
#error "Weft has a backend for x86-64 only"
#endif
#undef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#endif
