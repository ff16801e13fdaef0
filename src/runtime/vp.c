/*
 * vp.c — the process's runtime state, the virtual processor, and start-up.
 *
 * Owns: __weft_proc (process-wide state and the configuration),
 * __weft_vps (the VPs: one in M:1), and __weft_init, which turns the
 * calling kernel thread into VP 0 and `main` into UT 1.
 *
 * The runtime starts in a constructor, or earlier at the first Weft call
 * (another library's constructor may create threads before ours runs);
 * __weft_started makes the second attempt a no-op.  `main` keeps running
 * on the process stack; its scheduling policy and priority are those the
 * kernel thread had, so `chrt -f 10 prog` means what it says.  Everything
 * marked "start-up" in rt.h is written here, before any UT but main exists.
 */
#include "rt.h"
#include "../arch/valgrind_req.h"
#include "../arch/arch.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct weft_proc __weft_proc;
struct vp __weft_vps[WEFT_VPS_MAX];
bool __weft_started;
extern void *__libc_stack_end;

long __weft_kread(int fd, void *buf, size_t n)
{
	return __weft_raw_syscall6(SYS_read, fd, (long)buf, (long)n, 0, 0, 0);
}

long __weft_kpread(int fd, void *buf, size_t n, long off)
{
	return __weft_raw_syscall6(SYS_pread64, fd, (long)buf, (long)n, off, 0, 0);
}

long __weft_kwrite(int fd, const void *buf, size_t n)
{
	return __weft_raw_syscall6(SYS_write, fd, (long)buf, (long)n, 0, 0, 0);
}

long __weft_kopen(const char *path, int flags, int mode)
{
	return __weft_raw_syscall6(SYS_openat, AT_FDCWD, (long)path, flags, mode, 0, 0);
}

long __weft_kclose(int fd)
{
	return __weft_raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
}

static void main_stack(struct ut_stack *s)
{
	size_t ps = __weft_page_size();
	struct rlimit rl;
	size_t size = 8u << 20;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		size = rl.rlim_cur;
	uintptr_t hi = ((uintptr_t)__libc_stack_end + ps - 1) & ~(uintptr_t)(ps - 1);
	s->hi = (char *)hi;
	s->lo = (char *)(hi - size);
	s->kind = STACK_PROCESS;
}

static void main_name(char name[16])
{
	int fd = (int)__weft_kopen("/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	long n = __weft_kread(fd, name, 15);
	__weft_kclose(fd);
	if (n <= 0)
		return;
	name[n] = 0;
	char *nl = strchr(name, '\n');
	if (nl)
		*nl = 0;
}

static void main_sched(struct ut *t)
{
	/* the kernel's answer for this kernel thread: Weft's own
	 * sched_getscheduler answers for UTs (posix/pthread_sched.c) */
	struct sched_param sp = { 0 };
	int policy = (int)__weft_raw_syscall6(SYS_sched_getscheduler, 0, 0, 0, 0, 0, 0);
	t->policy = SCHED_OTHER;
	t->prio = 0;
	if ((policy == SCHED_FIFO || policy == SCHED_RR) &&
	    __weft_raw_syscall6(SYS_sched_getparam, 0, (long)&sp, 0, 0, 0, 0) == 0 &&
	    sp.sched_priority >= 1 && sp.sched_priority <= WEFT_PRIO_MAX) {
		t->policy = (uint8_t)policy;
		t->prio = (uint8_t)sp.sched_priority;
	}
	t->base_prio = t->prio;
}

/*
 * A forked child has one kernel thread, a new tid, and none of the
 * parent's POSIX timers: the VP names its new kernel thread and the tick
 * starts afresh; then fork.c takes every UT but the caller away.
 */
/* glibc's fork must see the kernel thread that really runs it as
 * THREAD_SELF: in the child it keeps that thread's stack and recycles the
 * others'.  A carrier that is not the VP's first kernel thread runs UTs on
 * the first one's thread pointer (kthread.c), so for the fork itself the
 * thread pointer is the carrier's own.  Weft's handlers are registered
 * first: its prepare runs last, its parent and child handlers first. */
static void *fork_tp;
static struct vp *fork_vp;            /* read before the move: see fork_shared */
/* The carrier is a guest clone that shares its creator's block (guest.c):
 * the fork runs on that block, glibc's own thread (on the guest UT's, a
 * block glibc's lists do not hold, its child faulted), but the moves carry
 * no word into it or out of it.  Without FSGSBASE the VP word lives in the
 * block (tp.h), and another VP's carrier may be running the main UT on it:
 * it would read this VP's word, and this kernel thread, back, that one's. */
static bool fork_shared;
/* The forking thread does not carry the VP: a kernel thread Weft did not
 * make (glibc's own threads, a clone) calls fork, which Weft does not wrap
 * (these are glibc's atfork handlers), outside any Weft call.  Nothing
 * here is its to move: the VP's carrier runs on, and the VP word it would
 * read (tp.h) may name another kernel thread's VP, whose carrier's block
 * it then loaded.  Its child is a process of one kernel thread that Weft
 * did not make: its pid is not the runtime's, so its calls are the plain
 * ones (monitor.c, __weft_where_slow), as a vfork child's are.  Read only
 * by the forking thread, between its prepare and its parent or child
 * handler (glibc holds its fork lock meanwhile). */
static bool fork_foreign;
static pid_t fork_tid;                /* the forking thread's (a foreign fork's child names it) */

static void fork_tp_load(void *tp)
{
	if (fork_shared) {
#if WEFT_TSAN
		__weft_tsan_tp_carry(tp);
#endif
		__weft_arch_tp_load(tp);
	} else {
		__weft_tp_set(tp);
	}
}

/* AddressSanitizer keeps the fake stack in use (detect_stack_use_after_
 * return) in its runtime's TLS, so in a word of each thread block, as well
 * as in its per-thread record.  The fork's moves between the UT's block and
 * the carrier's go through ASan's fiber protocol as a switch's do
 * (sched.c), on the same stack: told of neither, ASan cached the UT's fake
 * stack in the carrier's block during the fork and the word stayed there;
 * the carrier's idle context, back on that block after the UT had ended
 * and its fake stack was gone, used it (a fault in __asan_stack_malloc at
 * the tick delivered on the return of the block's load, a system call
 * without FSGSBASE: mn_wait_any_child under ASan and two VPs, 24 runs of
 * 40 beside two busy loops on an AMD guest without FSGSBASE). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
static void fork_tp_move(struct vp *vp, void *tp)
{
	struct ut *cur = vp->cur;
	void *fake;
	__sanitizer_start_switch_fiber(&fake, cur->stack.lo, (size_t)(cur->stack.hi - cur->stack.lo));
	fork_tp_load(tp);
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
}
#else
static void fork_tp_move(struct vp *vp, void *tp)
{
	(void)vp;
	fork_tp_load(tp);
}
#endif

static void before_fork(void)
{
	/* a UT the monitor took off the VP (its kernel thread back from a
	 * blocking call, not yet in Weft) is run on it again first: forked
	 * away, its child would have no VP, and this kernel thread none to
	 * name */
	__weft_ensure();
	struct vp *vp = __weft_vp();
	struct kt *k = vp->carrier;
	fork_tid = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	fork_foreign = !k || __atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE) != fork_tid;
	if (fork_foreign)
		return;
	fork_vp = vp;
	fork_tp = __weft_arch_tp_get();
	fork_shared = k->tp != __weft_kt_own_block(k);
	if (fork_tp != k->tp)
		fork_tp_move(vp, k->tp);
}

static void after_fork_parent(void)
{
	if (fork_foreign)
		return;
	if (__weft_arch_tp_get() != fork_tp)
		fork_tp_move(fork_vp, fork_tp);
}

static void after_fork_child(void)
{
	if (fork_foreign) {
		/* the child's one kernel thread keeps the forking thread's
		 * per-kernel-thread key values (sync/key.c) and handle
		 * (guest.c, __weft_foreign_child_self) */
		__weft_proc.foreign_fork_parent_tid = fork_tid;
		__weft_proc.foreign_fork_child = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
		return;
	}
	struct vp *vp = fork_vp;
	after_fork_parent();
	__weft_proc.fork_parent_tid = vp->tid;   /* the carrier forked */
	vp->tid = gettid();
	pid_t parent_pid = __weft_proc.pid;
	__weft_proc.pid = getpid();
	__weft_kt_words_after_fork(); /* the parent's other kernel threads' blocks */
	__weft_kt_word_claim();       /* the forking kernel thread's id came with its block */
	__weft_kt_after_fork(vp);
	__weft_mn_after_fork(vp);
	__weft_tls_fork_identity(vp, parent_pid);   /* after the identity moved */
	__weft_tls_fork_child(vp->cur, vp);
	__weft_monitor_after_fork(vp);
	__weft_preempt_after_fork();
	__weft_fork_child(vp);
}

void __weft_init(void)
{
	if (__weft_started)
		return;
	__weft_started = true;
	int saved = errno;
	struct weft_proc *proc = &__weft_proc;
	struct vp *vp = &__weft_vps[0];
	__weft_arch_init();
	/* Helgrind and DRD see the monitor's and the VPs' lock-free reads of
	 * these (each named at its field in rt.h) as races: Weft's own
	 * synchronisation is not theirs to check (docs/debugging.md) */
	if (__weft_arch_valgrind) {
		WEFT_VG_UNCHECKED(&__weft_proc, sizeof __weft_proc);
		WEFT_VG_UNCHECKED(__weft_vps, sizeof __weft_vps);
	}
	proc->nvps = 1;
	proc->next_id = 2;
	vp->index = 0;
	vp->errnop = &errno;
	vp->tid = gettid();
	proc->pid = getpid();
	if (vp->tid == proc->pid)      /* the process's first kernel thread: it never ends */
		__weft_kt_word_claim();
	vp->tp0 = __weft_arch_tp_get();
	vp->self0 = __weft_arch_thread_self();
	__weft_kt_init(vp);
	/* UT 1 exists before anything here can allocate: malloc may be a
	 * sanitizer's, which calls back into pthread_getspecific. */
	struct ut *t = __weft_ut_alloc();
	if (!t)
		__weft_die("cannot map the thread table at start-up");
	t->id = 1;
	WEFT_STATE(t, UT_RUNNING);
	proc->live = 1;
	main_stack(&t->stack);
	__weft_cur_set(vp, t);
	main_sched(t);
	main_name(t->name);
#if WEFT_TSAN
	__weft_tsan_init(t);
#endif
	__weft_san_runtime_find();    /* before any other kernel thread (san_text.c) */
	if (__weft_timer_reserve(64) != 0)
		__weft_die("cannot allocate the timer heap at start-up");
	__weft_timer_gate_begin();
	__weft_config_init(&proc->cfg);
	if (proc->cfg.stack_size)
		__weft_stack_set_default_size(proc->cfg.stack_size);
	__weft_fault_init();
	__weft_tls_init();
	/* a kernel thread Weft did not make can be given the VP (guest.c) */
	__weft_guests_ok = __weft_activations_on() && __weft_tls_takeover_prepare();
	__weft_preempt_init();
	__weft_sched_debug_init();
	if (proc->cfg.vps > 1) {
		const char *why = __weft_mn_unavailable();
		if (why)
			__weft_warn("weft: WEFT_VPS=%u: one virtual processor only: %s", proc->cfg.vps, why);
		else if (__weft_mn_set_vps(proc->cfg.vps) != 0)
			__weft_warn("weft: WEFT_VPS=%u: one virtual processor only: no memory for the others",
				    proc->cfg.vps);
	}
	__weft_dump_signal_init();
	__weft_sig_init_main(t);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	errno = saved;
}

__attribute__((constructor(101))) static void weft_constructor(void)
{
	__weft_init();
}
