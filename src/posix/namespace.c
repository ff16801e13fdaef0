/*
 * namespace.c — unshare and setns, which Linux refuses a process of
 * several kernel threads for some namespaces.
 *
 * unshare(CLONE_NEWUSER), and setns into a user namespace, end with EINVAL
 * while the process has more than one kernel thread.  Under NPTL a program
 * whose threads have all been joined is one kernel thread again and the
 * call succeeds; under Weft the monitor and its spawner, which a second UT
 * started, end only once the process has been alone for a while
 * (runtime/monitor.c, "retirement").  So each call here is the kernel's;
 * if the kernel refuses with EINVAL while the caller is the process's only
 * UT, it asks the monitor to end now and, if it did, asks the kernel once
 * more.  A call that fails for its own reasons fails the same way twice.
 * Kernel threads that are not the monitor's (M:N's other VPs, spares a
 * blocking call left, foreign threads) stay, and the call is refused as
 * NPTL's would be for a process with threads (docs/activations.md).
 *
 * No runtime state is touched but the monitor's, under its own lock; any
 * kernel thread may call.  Neither call blocks: no epilogue, no
 * cancellation point (neither is one in POSIX or glibc).
 */
#include "posix.h"
#include "../arch/arch.h"

#include <sched.h>
#include <sys/syscall.h>

EXPORT int unshare(int flags)
{
	long r = __weft_raw_syscall6(SYS_unshare, flags, 0, 0, 0, 0, 0);
	if (r == -EINVAL && __weft_started && __weft_monitor_retire_now())
		r = __weft_raw_syscall6(SYS_unshare, flags, 0, 0, 0, 0, 0);
	return (int)__weft_posix_ret(r);
}

EXPORT int setns(int fd, int nstype)
{
	long r = __weft_raw_syscall6(SYS_setns, fd, nstype, 0, 0, 0, 0);
	if (r == -EINVAL && __weft_started && __weft_monitor_retire_now())
		r = __weft_raw_syscall6(SYS_setns, fd, nstype, 0, 0, 0, 0);
	return (int)__weft_posix_ret(r);
}
