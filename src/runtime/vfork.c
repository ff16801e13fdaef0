/*
 * vfork.c — a UT's vfork child: it borrows the UT's stack and memory until
 * it execs or exits, and nothing it calls of Weft's touches the runtime.
 *
 * The child of vfork is another process that runs, on the calling UT's
 * stack, in this process's memory and with its thread pointer, until it
 * execs or _exits; the calling kernel thread meanwhile sleeps in the
 * kernel.  POSIX lets the child call nothing else, but programs call
 * dup2, close, sigprocmask, signal there as a matter of course.  Each of
 * those is an entry into Weft, whose fast path ("the stack pointer lies in
 * the running UT's stack") the child passes: it ran the epilogue, and with
 * a time slice due switched the child to another UT, which then ran in the
 * child's process (two UTs spawning under a 100 us slice: a read of the
 * pipe the child was to write failed, its waitpid found no child).
 *
 * So Weft's vfork (arch/<isa>/vfork.S) marks the VP for the window:
 * take's TAKE_VFORK bit sends every entry down the slow path, which
 * (monitor.c, __weft_where_slow) tells the child by its process id and
 * answers WHERE_NONE: the child's calls are the plain calls, as before
 * start-up, and the io layer's leave Weft's descriptor records alone (the
 * child's table is a copy).  The child starts with the UT's signal mask
 * as its kernel mask (__weft_vfork_child_start), which its sigprocmask
 * then changes and its exec passes on; its sigaction changes its own
 * table, not the process's record (signal.c).  The monitor never takes
 * a VP whose carrier sits in vfork (monitor.c, in_vfork), so the running
 * UT the child reads stays the one that called vfork.
 *
 * Invariant: TAKE_VFORK is set only by the carrier, between its
 * __weft_vfork_begin and __weft_vfork_end, which are the two ends of one
 * vfork system call; in between the carrier runs only that call (and any
 * signal handler the kernel runs on it before it, which finds the pid its
 * own).  Readers: every entry on any kernel thread (take != 0), the
 * monitor (take, as a count of away UTs: it masks the bit out).
 */
#include "rt.h"

#include <errno.h>
#include <sys/syscall.h>

/* Start the window: 1 if this call marked the VP (the carrier's vfork),
 * 0 otherwise (before start-up, a kernel thread that does not carry a VP,
 * a vfork child's own vfork: nothing to mark, its calls are plain). */
int __weft_vfork_begin(void)
{
	if (!__weft_started)
		return 0;
	struct vp *vp = __weft_vp();
	if (__weft_where(vp) != WHERE_VP || vp->in_weft)
		return 0;
	__atomic_fetch_or(&vp->take, TAKE_VFORK, __ATOMIC_SEQ_CST);
	return 1;
}

#ifdef __SANITIZE_ADDRESS__
/* AddressSanitizer's own vfork does this: the child's frames, below the
 * parent's stack pointer, left their redzones poisoned in the shadow the
 * two share (the UT's stack, the fiber ASan was told of at the switch). */
void __asan_handle_vfork(void *sp);
#endif

/* End it, in the parent once the child has exec'd or exited (or the call
 * failed): r is the system call's result, returned as vfork returns it;
 * sp the parent's stack pointer at vfork's return. */
long __weft_vfork_end(int token, long r, void *sp)
{
#ifdef __SANITIZE_ADDRESS__
	if (r > 0)
		__asan_handle_vfork(sp);
#else
	(void)sp;
#endif
	if (token)
		__atomic_fetch_and(&__weft_vp()->take, ~TAKE_VFORK, __ATOMIC_SEQ_CST);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* In the child, before vfork returns 0 there: the kernel mask becomes the
 * UT's (the kernel gave it the carrier's, which blocks only what every UT
 * blocks), so that the child's sigprocmask (a plain call there) starts
 * from the mask POSIX gives it and an exec passes on what the child then
 * has.  Raw system calls only; nothing of the runtime written. */
void __weft_vfork_child_start(int token)
{
	if (token)
		__weft_sig_exec_mask();
}

bool __weft_vfork_child(const struct vp *vp)
{
	return __weft_started && (__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE) & TAKE_VFORK) &&
	       (pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != __weft_proc.pid;
}
