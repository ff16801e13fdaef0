/*
 * pthread_signal.c — the thread-directed calls that name another thread:
 * pthread_kill, pthread_sigqueue, pthread_[gs]etaffinity_np,
 * pthread_getcpuclockid; and raise, which names the caller.
 *
 * glibc's own versions would take a Weft pthread_t for a pointer to its
 * thread descriptor and crash, so Weft must define them.  A signal for a UT
 * is Weft's to deliver (runtime/sigdeliver.c): pending on that UT, its
 * handler run on it; one for a guest (a kernel thread Weft did not make)
 * is the kernel's.  Affinity and CPU clocks are those of the VP's kernel
 * thread, which every UT of the VP shares.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel thread that runs the VP.  A call made on it (every call but
 * one from a signal handler on another kernel thread) asks the kernel, so
 * that in a child after fork — where the runtime still holds the tid of the
 * parent's thread — signals, affinity and CPU clocks are the child's own,
 * not its parent's. */
static pid_t vp_tid(void)
{
	struct vp *vp = __weft_vp();
	return &errno == vp->errnop ? (pid_t)gettid() : vp->tid;
}

static int check_target(pthread_t th, int sig)
{
	__weft_ensure();
	if (!__weft_ut_lookup(th))
		return ESRCH;
	if (sig < 0 || sig >= NSIG)
		return EINVAL;
	return 0;
}

/* A signal for t: Weft's own delivery for a UT (sigdeliver.c); the
 * kernel's for a guest, which has a kernel thread of its own. */
static int send(pthread_t th, int sig, const siginfo_t *si)
{
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	if (t->guest_kt) {
		pid_t tid = t->guest_kt->tid;
		long r = si->si_code == SI_QUEUE ? __weft_sigqueue_tid(tid, sig, si->si_value)
						 : __weft_raw_syscall6(SYS_tgkill, getpid(), tid, sig, 0, 0, 0);
		return r < 0 ? (int)-r : 0;
	}
	if (t->state == UT_ZOMBIE || t->state == UT_EXITING)
		return 0;                     /* exited, not yet joined: as NPTL */
	return __weft_sig_send(t, sig, si);
}

static void info_of(siginfo_t *si, int sig, int code, union sigval value)
{
	memset(si, 0, sizeof *si);
	si->si_signo = sig;
	si->si_code = code;
	si->si_pid = getpid();
	si->si_uid = getuid();
	si->si_value = value;
}

EXPORT int pthread_kill(pthread_t th, int sig)
{
	WEFT_CALL();
	int e = check_target(th, sig);
	if (e || sig == 0)
		return e;
	siginfo_t si;
	info_of(&si, sig, SI_TKILL, (union sigval){ 0 });
	return send(th, sig, &si);
}

EXPORT int pthread_sigqueue(pthread_t th, int sig, const union sigval value)
{
	WEFT_CALL();
	int e = check_target(th, sig);
	if (e || sig == 0)
		return e;
	siginfo_t si;
	info_of(&si, sig, SI_QUEUE, value);
	return send(th, sig, &si);
}

/* raise: pthread_kill of the caller, as POSIX defines it in a program
 * with threads, and returning -1 with errno.  glibc's raise sends with
 * tgkill to its kernel thread, and the handler ran when the kernel
 * delivered it there: under M:N the dispatcher, finding the PC in libc
 * and the runtime lock held by another VP, defers it to the VP's next
 * epilogue (signal.c: waiting there could deadlock on a lock of libc's),
 * and raise returned before the handler had run (sig_handler_mask_flags,
 * under two VPs).  A UT's own signal is Weft's to deliver, at this
 * call's epilogue, before raise returns.  A caller that is not a UT on a
 * VP (before start-up, a thread Weft did not make, a UT's vfork child)
 * has its own kernel thread: glibc's raise, which sends to it. */
typedef int (*raise_fn)(int);
static raise_fn glibc_raise;

static int kernel_raise(int sig)
{
	raise_fn f = __atomic_load_n(&glibc_raise, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (raise_fn)dlsym(RTLD_NEXT, "raise");
		__atomic_store_n(&glibc_raise, f, __ATOMIC_RELEASE);
	}
	if (f)
		return f(sig);
	long r = __weft_tgkill_self(sig);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

EXPORT int raise(int sig)
{
	if (!__weft_started)
		return kernel_raise(sig);
	enum weft_where w = __weft_where(__weft_vp());
	if (w == WHERE_NONE || w == WHERE_FOREIGN)
		return kernel_raise(sig);
	WEFT_CALL();
	int e = sig < 0 || sig >= NSIG ? EINVAL : 0;
	if (!e && sig != 0) {
		siginfo_t si;
		info_of(&si, sig, SI_TKILL, (union sigval){ 0 });
		e = __weft_sig_send(__weft_self(), sig, &si);
	}
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

EXPORT int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *set)
{
	__weft_ensure();
	if (!__weft_ut_lookup(th))
		return ESRCH;
	if (!set)
		return EFAULT;
	long r = __weft_raw_syscall6(SYS_sched_getaffinity, vp_tid(), (long)size, (long)set, 0, 0, 0);
	if (r < 0)
		return (int)-r;
	/* the kernel fills r bytes; glibc clears the rest */
	if ((size_t)r < size)
		memset((char *)set + r, 0, size - (size_t)r);
	return 0;
}

EXPORT int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *set)
{
	__weft_ensure();
	if (!__weft_ut_lookup(th))
		return ESRCH;
	if (!set)
		return EFAULT;
	long r = __weft_raw_syscall6(SYS_sched_setaffinity, vp_tid(), (long)size, (long)set, 0, 0, 0);
	return r < 0 ? (int)-r : 0;
}

/* The kernel's CPU clock of one thread: MAKE_THREAD_CPUCLOCK(tid, SCHED). */
EXPORT int pthread_getcpuclockid(pthread_t th, clockid_t *clk)
{
	__weft_ensure();
	if (!__weft_ut_lookup(th))
		return ESRCH;
	if (!clk)
		return EINVAL;
	struct ut *t = __weft_ut_lookup(th);
	if (t->guest_kt)
		*clk = (clockid_t)((~(unsigned)t->guest_kt->tid << 3) | 4 | 2);
	else
		*clk = __weft_ut_clock(t);          /* runtime/cpuclock.c keeps its time */
	return 0;
}
