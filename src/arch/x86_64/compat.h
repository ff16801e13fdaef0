/*
 * x86-64 glibc symbol versions.  Included only through src/arch/arch.h.
 *
 * Owns: the version names of the glibc ABIs Weft must also offer, which
 * differ per architecture (x86-64's base is GLIBC_2.2.5; aarch64's is
 * GLIBC_2.17 and has no LinuxThreads-era condition variable at all).
 * posix/compat.c defines the old entry points when the port names them;
 * weft.map beside this file lists the same versions for the linker.
 */
#ifndef WEFT_ARCH_INCLUDED_FROM_ARCH_H
#error "include src/arch/arch.h, not an ISA header"
#endif

/* pthread_cond_* before 2.3.2: the LinuxThreads-era condition variable. */
#define WEFT_COMPAT_COND_OLD "GLIBC_2.2.5"
/* pthread_attr_[gs]etaffinity_np without a cpusetsize argument. */
#define WEFT_COMPAT_AFFINITY_OLD "GLIBC_2.3.3"
