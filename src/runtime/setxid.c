/*
 * setxid.c — process-wide credentials: setuid, setgid, setgroups and the
 * rest of that family change every kernel thread of the process.
 *
 * Owns: the handler of glibc's SIGSETXID (33) and Weft's broadcast.
 *
 * Linux keeps credentials per kernel thread; POSIX says a process has one
 * set.  glibc closes the gap with a broadcast (__nptl_setxid): SIGSETXID to
 * every thread on its lists, each handler making the same system call, the
 * caller waiting for all.  Under Weft that fails three ways, each seen:
 *
 *  1. glibc installs its handler in late_init, which its pthread_create
 *     runs only while __libc_single_threaded is set (libc's own storage,
 *     unless the program has a copy).  Weft clears it when a second UT
 *     appears, so glibc never ran late_init, and the first setuid after
 *     Weft had made a kernel thread killed the process ("Unknown signal
 *     33").  Fixed where Weft makes its first glibc thread (kthread.c, with
 *     __weft_setxid_needs_late_init below).
 *  2. glibc's handler clears its bit with a loop that reads cancelhandling
 *     through %fs and compare-and-swaps it through THREAD_SELF (%fs:0x10)
 *     until both agree.  A UT's thread block names the VP's kernel thread
 *     as THREAD_SELF (tls.c), so on a carrier running such a UT the loop
 *     never ended: every setuid under two VPs hung.  Fixed by the wrapper
 *     below, which lets the running block name itself for the handler.
 *  3. glibc signals each listed thread by the tid in its block, and Weft
 *     rewrites that tid when another kernel thread carries the block (the
 *     main UT's, on another VP or after a handoff), so one kernel thread
 *     got two signals and another none, and kept the old IDs.  So Weft
 *     exports the calls (posix/setxid.c) and makes its own broadcast,
 *     to every task /proc/self/task lists rather than to thread blocks.
 *
 * glibc's own broadcast is left only to a call of libc's own definition
 * (dlsym on libc; inside glibc 2.36 only initgroups calls one, and Weft
 * exports initgroups) and to a process without procfs.  There (1) and (2)
 * are fixed and (3) is not: glibc re-signals a block until its SETXID bit
 * is clear, and when the block it marked names a kernel thread that now
 * runs another block, the handler clears the other block's bit and glibc
 * waits for ever.  tests/signals/sig_setxid_every_kernel_thread checks
 * Weft's broadcast, not that one.
 *
 * A kernel thread that ends after it was signalled and before its handler
 * ran never lowers the count (glibc holds a thread's exit back for this;
 * Weft cannot hold back a thread it did not make: the program's own glibc
 * threads, a sanitizer's).  So each signal carries its thread's index in
 * the broadcast, the handler marks it answered, and the caller, whenever
 * its wait for the count ends before 0 (WAIT_LOOK_NS, or a signal), asks
 * the kernel (tgkill with signal 0) about every thread not yet answered:
 * one that is gone is counted as answered by the caller.  Limits: only
 * the first SETXID_TRACKED threads of a broadcast are tracked so (beyond
 * them an ended thread still holds the broadcast for ever), and a tid the
 * kernel gave to a new thread meanwhile reads as the old thread alive.
 *
 * Invariants: one broadcast at a time (cmd.lock).  A broadcast's pending
 * count is raised before each signal is sent and lowered by the handler
 * after its system call, so the caller's wait for 0 means every signalled
 * thread has made the call.  Every kernel thread of Weft's leaves SIGSETXID
 * unblocked (rt.h, __weft_sigset_home), or the wait would never end.
 *
 * Async readers: the handler runs on any kernel thread, in signal context,
 * at any point of Weft's code.  It reads cmd.nr and cmd.id (written before
 * the first signal is sent: the kernel orders the send before delivery),
 * updates cmd.error, cmd.mismatch and cmd.pending with atomics, exchanges
 * its own answered[] byte (the caller exchanges it only for a thread that
 * is gone, so exactly one of them lowers the count), and reads
 * setxid_glibc (stored with release before the wrapper is installed).  For
 * glibc's broadcast it also sets and restores the running block's `self`
 * word (tls.c names this writer).  It touches no other runtime state, takes
 * no lock, and makes raw system calls only.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIGSETXID 33                    /* glibc's; not in <signal.h> */
#define SETXID_MAGIC 0x5e7c1d           /* si_int of Weft's own requests */
#define SETXID_TRACKED 65536u           /* threads a broadcast tracks by index */
#define SETXID_UNTRACKED 0xffffffffu    /* the index of one beyond them */
#define WAIT_LOOK_NS 10000000L          /* a wait this long looks for ended threads */

static void (*setxid_glibc)(int, siginfo_t *, void *);
/* Weft's handler stands in front of glibc's: from then on neither
 * late_init nor the installation need asking the kernel again.  Written by
 * whoever makes a glibc thread or a broadcast (relaxed: a race only repeats
 * the look). */
static bool glibc_wrapped;

static struct {
	volatile uint32_t lock;           /* 0 free, 1 held, 2 held with waiters */
	long nr, id[3];
	volatile int pending;             /* signalled threads whose call is not made */
	volatile int error;               /* -1: none yet; else the first result's errno (0: ok) */
	volatile int mismatch;            /* two threads' calls answered differently */
} cmd;

/* answered[i]: the i-th thread signalled in this broadcast has made its
 * call, or has ended without it (set by its handler or by the caller;
 * cleared by the caller after the broadcast, under cmd.lock). */
static uint8_t answered[SETXID_TRACKED];

/* Lower the count for thread i, once. */
static bool answer(uint32_t i)
{
	return i >= SETXID_TRACKED || __atomic_exchange_n(&answered[i], 1, __ATOMIC_ACQ_REL) == 0;
}

static long futex(volatile void *w, int op, int v)
{
	return __weft_raw_syscall6(SYS_futex, (long)w, op | FUTEX_PRIVATE_FLAG, v, 0, 0, 0);
}

/* One thread's call, its result recorded against the others'. */
__attribute__((no_sanitize_address, no_sanitize_undefined))
static void do_call(void)
{
	long r = __weft_raw_syscall6(cmd.nr, cmd.id[0], cmd.id[1], cmd.id[2], 0, 0, 0);
	int e = r < 0 ? (int)-r : 0;
	int none = -1;
	if (!__atomic_compare_exchange_n(&cmd.error, &none, e, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    none != e)
		__atomic_store_n(&cmd.mismatch, 1, __ATOMIC_RELEASE);
}

__attribute__((no_sanitize_address, no_sanitize_undefined))
#if WEFT_TSAN
__attribute__((no_sanitize("thread")))
#endif
static void setxid_handler(int sig, siginfo_t *si, void *ctx)
{
	uint64_t v = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
	if (si->si_code == SI_QUEUE && (uint32_t)v == SETXID_MAGIC &&
	    si->si_pid == (pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0)) {
		do_call();
		if (answer((uint32_t)(v >> 32)) && __atomic_sub_fetch(&cmd.pending, 1, __ATOMIC_ACQ_REL) == 0)
			futex(&cmd.pending, FUTEX_WAKE, 1);
		return;
	}
	void (*glibc)(int, siginfo_t *, void *) = __atomic_load_n(&setxid_glibc, __ATOMIC_ACQUIRE);
	if (!glibc)
		return;
	/* glibc's broadcast (an internal caller): its handler reads the block
	 * through %fs and through THREAD_SELF; make them the same block for
	 * its length (this file's comment, 2) */
	void *tp = __weft_arch_tp_get();
	void **self = (void **)((char *)tp + 0x10);        /* tcbhead_t.self */
	void *was = *self;
	if (was != tp)
		*self = tp;
	glibc(sig, si, ctx);
	if (was != tp)
		*self = was;
}

bool __weft_setxid_needs_late_init(void)
{
	if (__atomic_load_n(&glibc_wrapped, __ATOMIC_RELAXED))
		return false;
	struct sigaction old;
	int saved = errno;
	int r = __weft_kernel_sigaction(SIGSETXID, NULL, &old);
	errno = saved;
	if (r != 0)
		return false;
	/* SIG_DFL, or Weft's handler standing alone (a broadcast before
	 * glibc's first thread): glibc has made no thread yet */
	return old.sa_handler == SIG_DFL || (old.sa_sigaction == setxid_handler &&
					     !__atomic_load_n(&setxid_glibc, __ATOMIC_ACQUIRE));
}

void __weft_setxid_single_threaded(int v)
{
	__libc_single_threaded = (char)v;
}

/* Make Weft's handler the one for SIGSETXID, in front of glibc's when
 * glibc has one.  Called with no broadcast in flight. */
static void handler_install(void)
{
	if (__atomic_load_n(&glibc_wrapped, __ATOMIC_RELAXED))
		return;
	struct sigaction act;
	int saved = errno;
	if (__weft_kernel_sigaction(SIGSETXID, NULL, &act) != 0 || act.sa_sigaction == setxid_handler)
		goto out;
	if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN) {
		act.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigemptyset(&act.sa_mask);
	} else {
		__atomic_store_n(&setxid_glibc, act.sa_sigaction, __ATOMIC_RELEASE);
	}
	act.sa_sigaction = setxid_handler;
	if (__weft_kernel_sigaction(SIGSETXID, &act, NULL) == 0 && __atomic_load_n(&setxid_glibc, __ATOMIC_ACQUIRE))
		__atomic_store_n(&glibc_wrapped, true, __ATOMIC_RELAXED);
out:
	errno = saved;
}

void __weft_setxid_glibc_ready(void)
{
	handler_install();
}

static void lock(void)
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(&cmd.lock, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(&cmd.lock, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		futex(&cmd.lock, FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&cmd.lock, 2, __ATOMIC_ACQUIRE);
	}
}

static void unlock(void)
{
	if (__atomic_exchange_n(&cmd.lock, 0, __ATOMIC_RELEASE) == 2)
		futex(&cmd.lock, FUTEX_WAKE, 1);
}

/* The tids signalled so far in this broadcast: on the caller's stack, then
 * in mappings of its own (no malloc: POSIX lets a signal handler call
 * setuid and setgid). */
struct tids {
	pid_t *v;
	size_t n, cap;
	bool mapped;
};

static bool tids_has(const struct tids *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == tid)
			return true;
	return false;
}

static bool tids_add(struct tids *t, pid_t tid)
{
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		long m = __weft_raw_syscall6(SYS_mmap, 0, (long)(cap * sizeof(pid_t)), PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m < 0 && m > -4096)
			return false;
		pid_t *v = (pid_t *)m;
		memcpy(v, t->v, t->n * sizeof *v);
		if (t->mapped)
			__weft_raw_syscall6(SYS_munmap, (long)t->v, (long)(t->cap * sizeof(pid_t)), 0, 0, 0, 0);
		t->v = v;
		t->cap = cap;
		t->mapped = true;
	}
	t->v[t->n++] = tid;
	return true;
}

struct dirent64_k {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* One pass over /proc/self/task: signal every task not signalled yet.
 * The number signalled, or -errno when the list cannot be read. */
static long signal_pass(struct tids *done, pid_t self)
{
	long fd = __weft_raw_syscall6(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	long sent = 0;
	char buf[4096] __attribute__((aligned(8)));
	for (;;) {
		long n = __weft_raw_syscall6(SYS_getdents64, fd, (long)buf, sizeof buf, 0, 0, 0);
		if (n <= 0) {
			if (n < 0)
				sent = n;
			break;
		}
		for (long off = 0; off < n;) {
			struct dirent64_k *d = (struct dirent64_k *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			pid_t tid = (pid_t)strtol(d->name, NULL, 10);
			if (tid == self || tids_has(done, tid))
				continue;
			if (!tids_add(done, tid)) {
				sent = -ENOMEM;
				goto out;
			}
			/* its index rides in the value's high half */
			uint32_t i = done->n - 1 < SETXID_TRACKED ? (uint32_t)(done->n - 1) : SETXID_UNTRACKED;
			union sigval val = { .sival_ptr = (void *)(uintptr_t)((uint64_t)i << 32 | SETXID_MAGIC) };
			__atomic_add_fetch(&cmd.pending, 1, __ATOMIC_ACQ_REL);
			if (__weft_sigqueue_tid(tid, SIGSETXID, val) == 0)
				sent++;
			else if (answer(i) && __atomic_sub_fetch(&cmd.pending, 1, __ATOMIC_ACQ_REL) == 0)
				futex(&cmd.pending, FUTEX_WAKE, 1);   /* gone meanwhile */
		}
	}
out:
	__weft_raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
	return sent;
}

/* Threads signalled but not answered that have ended: counted as
 * answered (this file's comment). */
static void count_ended(const struct tids *done, pid_t pid)
{
	for (size_t i = 0; i < done->n && i < SETXID_TRACKED; i++)
		if (!__atomic_load_n(&answered[i], __ATOMIC_ACQUIRE) &&
		    __weft_raw_syscall6(SYS_tgkill, pid, done->v[i], 0, 0, 0, 0) == -ESRCH && answer((uint32_t)i))
			__atomic_sub_fetch(&cmd.pending, 1, __ATOMIC_ACQ_REL);
}

static void wait_pending(const struct tids *done, pid_t pid)
{
	int p;
	while ((p = __atomic_load_n(&cmd.pending, __ATOMIC_ACQUIRE)) != 0) {
		/* a wait cut short by a signal (the VP's tick comes every
		 * slice) looks too, or a tick faster than the timeout would
		 * keep it from ever looking */
		struct timespec look = { 0, WAIT_LOOK_NS };
		long r = __weft_raw_syscall6(SYS_futex, (long)&cmd.pending, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, p,
					     (long)&look, 0, 0);
		if (r == -ETIMEDOUT || r == -EINTR)
			count_ended(done, pid);
	}
}

long __weft_setxid(long nr, long a, long b, long c)
{
	lock();
	handler_install();
	cmd.nr = nr;
	cmd.id[0] = a;
	cmd.id[1] = b;
	cmd.id[2] = c;
	cmd.error = -1;
	cmd.mismatch = 0;
	pid_t self = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	pid_t pid = (pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	pid_t local[256];
	struct tids done = { local, 0, sizeof local / sizeof local[0], false };
	long r = 0;
	/* until a pass finds no task it has not signalled: a thread made
	 * during a pass by one not yet changed is found by the next */
	for (;;) {
		long sent = signal_pass(&done, self);
		wait_pending(&done, pid);
		if (sent < 0) {
			r = sent;
			break;
		}
		if (sent == 0)
			break;
	}
	/* every handler has run (the count is 0): the next broadcast's */
	memset(answered, 0, done.n < SETXID_TRACKED ? done.n : SETXID_TRACKED);
	if (done.mapped)
		__weft_raw_syscall6(SYS_munmap, (long)done.v, (long)(done.cap * sizeof(pid_t)), 0, 0, 0, 0);
	if (r < 0 && done.n == 0) {
		/* no /proc: nobody was signalled; say so to the caller, who
		 * falls back to glibc's broadcast */
		unlock();
		return r == -ENOMEM ? -EAGAIN : -ENOSYS;
	}
	do_call();                        /* last: the others may need our rights */
	int e = cmd.error;
	if (cmd.mismatch)
		__weft_die("weft: setuid family: the process's threads answered differently; "
			     "their credentials differ, so the process ends");
	unlock();
	return e ? -e : 0;
}
