/*
 * arch.c — x86-64 facts the runtime asks once, at start-up.
 *
 * Owns: whether wrfsbase may be used (the kernel's FSGSBASE), whether the
 * preemption trampoline can save the extended state (OSXSAVE) and how much
 * room that takes (CPUID 0xD), and the fallback that sets the thread
 * pointer by system call.  Invariant: __weft_arch_init runs before the
 * first switch and before the tick handler is installed; afterwards these
 * values never change.
 */
#include "../arch.h"

#include <asm/prctl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

bool __weft_arch_fsgsbase __attribute__((visibility("hidden")));
uint64_t __weft_xsave_size __attribute__((visibility("hidden"))) = 4096;

void __weft_arch_init(void)
{
	__weft_arch_fsgsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
}

void __weft_arch_tp_set_syscall(void *tp)
{
	__weft_raw_syscall6(SYS_arch_prctl, ARCH_SET_FS, (long)tp, 0, 0, 0, 0);
}

static bool cpu_has_xsave(void)
{
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	return (c >> 27) & 1;             /* OSXSAVE: xsave usable by user code */
}

bool __weft_arch_fake_calls_possible(void)
{
	if (!cpu_has_xsave())
		return false;
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xd), "c"(0));
	__weft_xsave_size = b;            /* bytes for the features the OS enabled */
	return true;
}

void *__weft_arch_thread_self(void)
{
	return __weft_arch_thread_self_inline();
}
