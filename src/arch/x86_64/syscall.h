/*
 * x86-64 raw system call.  Included only through src/arch/arch.h.
 *
 * Owns: the runtime's way into the kernel that bypasses libc's syscall(),
 * which Weft interposes (posix/futex.c emulates futex for UTs).  Register
 * convention (Linux x86-64): number in rax, arguments in rdi, rsi, rdx, r10,
 * r8, r9; the `syscall` instruction clobbers rcx and r11; the result comes
 * back in rax, -4095..-1 meaning -errno.  Invariant: errno is never touched
 * here, the caller decides what a negative result means.
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif
#include <stdint.h>

static inline long __weft_raw_syscall6(long nr, long a1, long a2, long a3,
				       long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The same, at the one place where the monitor may take the VP from a
 * kernel thread asleep in it (takeable.S); __weft_arch_takeable_ret is the
 * address the kernel reports as its PC there. */
extern const char __weft_arch_takeable_ret[] __attribute__((visibility("hidden")));

/* The one system call pthread_cancel may end (cancellable.S): made unless
 * a request is due in *cancel (pending, enabled, not exiting), and ended
 * with -EINTR by a cancel kick (preempt.h, __weft_arch_csys_stop). */
long __weft_arch_cancellable_syscall(const volatile uint8_t *cancel, long nr, const long args[6])
	__attribute__((visibility("hidden")));
