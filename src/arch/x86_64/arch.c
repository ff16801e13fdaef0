/*
 * arch.c — x86-64 facts the runtime asks once, at start-up.
 *
 * Owns: whether the process runs under Valgrind, whether wrfsbase may be
 * used (the kernel's FSGSBASE, and not under Valgrind, whose CPU does not
 * decode the FSGSBASE instructions), whether the preemption trampoline can
 * save the extended state (OSXSAVE) and how much room that takes (CPUID
 * 0xD), and the fallback that sets the thread pointer by system call.  Invariant: __weft_arch_init runs before the
 * first switch and before the tick handler is installed; afterwards these
 * values never change.
 */
#include "../arch.h"
#include "../valgrind_req.h"

#include <asm/prctl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

bool __weft_arch_fsgsbase __attribute__((visibility("hidden")));
bool __weft_arch_valgrind __attribute__((visibility("hidden")));
uint64_t __weft_xsave_size __attribute__((visibility("hidden"))) = 4096;

void __weft_arch_init(void)
{
	/* Valgrind passes the host's AT_HWCAP2 through but its CPU raises
	 * SIGILL on wrfsbase/rdgsbase: arch_prctl then, which it emulates. */
	__weft_arch_valgrind = RUNNING_ON_VALGRIND != 0;
	__weft_arch_fsgsbase = !__weft_arch_valgrind && (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
	/* WEFT_FSGSBASE=off: run as on a machine without it (the fallbacks
	 * are tested where the instructions exist too). */
	const char *e = getenv("WEFT_FSGSBASE");
	if (e && strcmp(e, "off") == 0)
		__weft_arch_fsgsbase = false;
}

/* Memcheck holds everything below the red zone under a stack pointer
 * unaddressable, and learns that stack is in use only when the pointer
 * moves down by itself.  A fake call moves it behind memcheck's back (the
 * signal's return loads it): the return-address slot, and the red zone
 * below it that the trampoline's first pushes fill, are declared here.
 * The handler runs on the kernel thread's sigaltstack (runtime/fault.c),
 * so the signal frame Valgrind discards at the return is not this memory.
 * Undefined, then the slot is written: it holds a defined PC. */
void __weft_arch_valgrind_fake_call(void *slot)
{
	VALGRIND_MAKE_MEM_UNDEFINED((char *)slot - WEFT_ARCH_RED_ZONE, WEFT_ARCH_RED_ZONE + 8);
}

/* Without FSGSBASE the kernel thread's VP word lives in the thread block
 * it runs on (tp.h, __weft_arch_gs_get): it goes with the kernel thread
 * into the block it loads, written before the switch so that a signal
 * handler reads the same word on either side of it. */
void __weft_arch_tp_set_syscall(void *tp)
{
	void *word = __weft_arch_gs_get();
	*(void **)((char *)tp + WEFT_ARCH_VP_SLOT) = word;
	__weft_arch_tp_load_syscall(tp);
}

void __weft_arch_tp_load_syscall(void *tp)
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

/* Invariant by CPUID, and the kernel's clocksource: with another (hpet,
 * acpi_pm, kvm-clock) the kernel found the counter unfit to keep time by —
 * CPUs out of step, or a hypervisor that moves it — so neither may Weft.
 * Read once (runtime/timer.c calls this once per process), by raw system
 * calls: Weft's own open and read are the program's wrappers. */
bool __weft_arch_cycles_invariant(void)
{
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000), "c"(0));
	if (a < 0x80000007)
		return false;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007), "c"(0));
	if (!((d >> 8) & 1))
		return false;
	long fd = __weft_raw_syscall6(SYS_openat, AT_FDCWD,
				      (long)"/sys/devices/system/clocksource/clocksource0/current_clocksource",
				      O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return false;
	char name[8] = { 0 };
	long n = __weft_raw_syscall6(SYS_read, fd, (long)name, sizeof name - 1, 0, 0, 0);
	__weft_raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
	return n == 4 && memcmp(name, "tsc\n", 4) == 0;
}

void *__weft_arch_thread_self(void)
{
	return __weft_arch_thread_self_inline();
}
