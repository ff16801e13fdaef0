/*
 * guest.c — kernel threads Weft did not make (glibc's own pthread_create,
 * called by jemalloc or glibc's helpers; clone) that call into Weft.
 *
 * Owns: each such thread's guest UT and the rule that it runs only on its
 * own kernel thread.
 *
 * A foreign kernel thread F that enters Weft (an exported call finds it is
 * neither the carrier nor a kernel thread back from a takeover: rt.h,
 * __weft_where) must not touch runtime state until it carries the VP.  It
 * queues a request on the VP's inbox (its kt's `req` the first time, its
 * guest UT G afterwards), kicks the carrier and waits on its own futex
 * word.  The carrier makes G (the first time) and queues it like any UT
 * back from the kernel; when the one chooser picks G, the carrier, which
 * cannot run F's stack, lends F the VP: it switches to its own home, which
 * hands the VP to F and parks.  F carries the VP for as long as G runs:
 * through the Weft call, and through any wait inside it — when G parks,
 * F gives the VP to a spare that runs the chosen UT and waits until G is
 * chosen again.  When the call returns, G leaves: it is counted off the
 * VP like a UT in a blocking call, and F hands the VP to a spare and goes
 * on with its own code, without it.
 *
 * F's thread-specific values are G's, which only F touches: after its
 * first stored value (which makes G) it reaches them without the VP.  F
 * registers its end with glibc (its own thread_local destructor list):
 * then G's keys' destructors run on F, G's slot is freed and F's kt is
 * left for the next foreign thread (tid 0).
 *
 * A foreign thread whose thread block is another thread's (a clone
 * without CLONE_SETTLS runs on its creator's block, and a UT of another VP
 * may run on it at the same moment) runs G on a block of its own (tls.c,
 * __weft_tls_guest_block): F loads it when it is handed the VP, keeps it
 * while G waits for the VP again, and goes back to the shared block when
 * G leaves, with errno carried both ways.  Without FSGSBASE the VP word
 * lives in the current block (tp.h); written into a shared block it named
 * F's VP to the other thread's carrier, which then ran as if on F's VP
 * (guest_foreign_threads crashed one run in ten under two VPs).  Nor may F
 * load the shared block to make a kernel thread (glibc's pthread_create
 * runs on the maker's block): it makes them from G's (kthread.c,
 * own_block).
 *
 * So a foreign thread gets a handle (pthread_self), its priority and its
 * waits are Weft's, and its blocking outside Weft stops nobody.  Each Weft
 * call it makes costs two handoffs (tens of µs).  Guests need UTs to have
 * TLS of their own (G runs on F's own thread pointer): the first guest
 * turns that on; where it cannot be (WEFT_TLS=off, an unknown glibc), and
 * in static programs, a foreign thread runs its Weft calls unprotected, as
 * before, and one line says so.
 *
 * Async readers: F reads and writes only its own kt (gift, req), its G's
 * thread-specific values (nobody else's), the inbox (atomic push) and the
 * monitor's start (under its lock) until it carries the VP.  A kt's tid is
 * read by any kernel thread (lookup by tid); it is set by its own thread
 * (make, or a CAS from 0 to claim an ended guest's kt) and cleared by it
 * at its end, all atomically.
 */
#include "rt.h"
#include "../arch/arch.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define TCB_STACKBLOCK 1680          /* struct pthread: stackblock, stackblock_size */
#define TCB_STACKBLOCK_SIZE 1688

/* Set at start-up: per-UT TLS can be had, and kernel threads can be. */
bool __weft_guests_ok;
static bool warned;

/* glibc's, for C++ thread_local destructors: run when the thread ends. */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern void *__dso_handle;

/* F is a thread glibc made, on its own block (tls.c says how that is
 * told), so glibc runs F's thread_local destructors when it ends.  A clone
 * without CLONE_SETTLS runs on its creator's block: its end is not
 * glibc's to report, and its block is another thread's too. */
static bool glibc_thread(const struct kt *k)
{
	return k->tp && __weft_tls_glibc_own_block(k->tp, k->tid);
}

static void guest_thread_exit(void *p);

/* F moves between the block it shares and G's own (see above); the words
 * Weft keeps per kernel thread in a block stay where they are (tp.h,
 * __weft_arch_tp_load): take_vp writes the VP word into G's block next. */
static void block_move(void *from, void *to)
{
	*__weft_tls_errno_of(to) = *__weft_tls_errno_of(from);
#if WEFT_TSAN
	__weft_tsan_tp_carry(to);
#endif
	__weft_arch_tp_load(to);
}

uint8_t __weft_guest_enter(void)
{
	struct vp *vp = __weft_vp();
	if (!__atomic_load_n(&__weft_guests_ok, __ATOMIC_ACQUIRE)) {
		if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
			__weft_warn("weft: a kernel thread Weft did not make calls into Weft, and cannot be "
				    "given the VP here (no per-thread TLS, or a static program): it runs unprotected");
		return 0;
	}
	if (__weft_on_monitor() || __weft_kt_in_birth())
		return 0;                     /* never waits for the VP (kthread.c's birth) */
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct kt *k = __weft_kt_by_tid(me);
	if (!k)
		k = __weft_kt_guest_make(me);
	if (!k || !k->guest)
		return 0;
	/* the carrier may sit in an unwrapped call with nothing else to run:
	 * only the monitor can take the VP from it */
	if (!__atomic_load_n(&__weft_monitor_settled, __ATOMIC_ACQUIRE))
		__weft_monitor_start(true);
	struct ut *x = k->gut ? k->gut : &k->req;
	__atomic_store_n(&k->gift, 0, __ATOMIC_RELAXED);
	struct ut *head;
	do {
		head = __atomic_load_n(&vp->inbox, __ATOMIC_RELAXED);
		x->q_next = head;
	} while (!__atomic_compare_exchange_n(&vp->inbox, &head, x, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	/* M:N: any VP may take it (its own may be stuck in a call Weft
	 * does not know blocks: mn.c) */
	if (__weft_mn)
		__weft_mn_kick_all();
	else
		__weft_preempt_kick(vp);
	while (!__atomic_load_n(&k->gift, __ATOMIC_ACQUIRE))
		__weft_raw_syscall6(SYS_futex, (long)&k->gift, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, 0, 0, 0);
	/* the VP is F's: the carrier that lent it made G the running UT */
	k->resume = NULL;
	void *ftp = __weft_arch_tp_get(), *gtp = k->gut->tp;
	if (ftp != gtp)
		block_move(ftp, gtp);         /* F shares its block */
	__weft_kt_guest_carry(k);
	vp = __weft_vp();                     /* M:N: the VP it was lent */
	__weft_switched_in_waited(vp);        /* F never left its stack */
	vp->in_weft = 1;
	if (!k->exit_hooked && glibc_thread(k)) {
		/* G ends with F: glibc runs F's C++ thread_local destructors
		 * when F ends, and this one among them (its own list, in F's
		 * TCB; it allocates, so the call is out of Weft's code) */
		k->exit_hooked = true;
		__weft_outcall_begin(vp);
		int r = __cxa_thread_atexit_impl(guest_thread_exit, k, &__dso_handle);
		__weft_outcall_end();
		if (r != 0)
			k->exit_hooked = false;  /* no memory: tried at its next call */
	}
	return 2;
}

/* Where F's stack is, as glibc recorded it for a thread of its own;
 * unknown for a clone that shares another's TCB (the
 * entries' fast test then fails for G and the slow one finds the carrier). */
static void guest_stack(struct ut *t, const struct kt *k)
{
	const char *tp = k->tp;
	if (glibc_thread(k)) {
		char *lo = *(char *const *)(tp + TCB_STACKBLOCK);
		size_t size = *(const size_t *)(tp + TCB_STACKBLOCK_SIZE);
		if (lo && size) {
			t->stack.lo = lo;
			t->stack.hi = lo + size;
		}
	}
	t->stack.kind = STACK_USER;
}

void __weft_guest_request(struct vp *vp, struct kt *k)
{
	if (!k->gut) {
		__weft_kt_multiple_threads_on();
		if (!vp->tp_on)
			__weft_monitor_tls_on();
		struct ut *t = __weft_ut_alloc();
		if (!t)
			__weft_die("no thread slot for a kernel thread Weft did not make");
		t->id = __weft_proc.next_id++;
		t->guest_kt = k;
		t->tp = k->tp;
		t->detached = 1;
		t->policy = SCHED_OTHER;
		memcpy(t->name, "foreign", 8);
		guest_stack(t, k);
		/* without memory for it, G runs on the block F shares, as
		 * before there was one: right on one VP, and where FSGSBASE
		 * keeps the VP word out of the block */
		if (!glibc_thread(k))
			(void)__weft_tls_guest_block(t, k->tid);
		__weft_proc.live++;
		vp->stat.created++;
		k->gut = t;
	}
	__weft_ready(k->gut);
}

void __weft_guest_switch(struct vp *vp, struct ut *prev, struct ut *next)
{
	struct kt *me = vp->carrier;
	if (!prev->guest_kt) {
		/* an ordinary UT gives way to a guest: lend its kernel thread
		 * the VP from this one's home */
		__weft_kt_lend_from(me, prev);
		return;
	}
	/* prev is this kernel thread's own guest: it waits here until it is
	 * chosen again, and the VP goes to whoever runs next */
	struct kt *to = next->guest_kt;
	if (!to) {
		to = __weft_kt_spare_get();
		if (!to)
			__weft_die("no kernel thread to run the next thread while a foreign thread waits "
				   "(WEFT_MAX_KTHREADS)");
		__weft_kt_give_and_wait(me, to, next);
	} else {
		__weft_kt_give_and_wait(me, to, next);
	}
}

void __weft_guest_idle(struct vp *vp)
{
	struct kt *me = vp->carrier;
	struct kt *to = __weft_kt_spare_get();
	if (!to)
		__weft_die("no kernel thread to carry a VP while a foreign thread waits "
			   "(WEFT_MAX_KTHREADS)");
	__weft_cur_set(vp, NULL);
	__weft_kt_give_and_wait(me, to, NULL);
}

bool __weft_guest_leave(void)
{
	struct vp *vp = __weft_vp();
	struct kt *k = vp->carrier;
	struct ut *g = vp->cur;
	if (!g || g->guest_kt != k)
		return false;
	struct kt *to = __weft_kt_spare_get();
	if (!to)
		return false;                 /* keeps the VP, as a UT would, until it next parks */
	WEFT_STATE(g, UT_BLOCKED);
	g->wait_kind = WAIT_SYSCALL;
	vp->offvp++;
	__weft_cur_set(vp, NULL);
	void *gtp = g->tp;
	__weft_kt_let_go(k, false);
	to->resume = NULL;
	__weft_kt_give(to);
	if (gtp != k->tp)
		block_move(gtp, k->tp);       /* back to the block F shares */
	return true;
}

/*
 * F ends (glibc calls this among F's thread_local destructors, on F): G
 * ends with it, as a UT does at pthread_exit — its keys' destructors run
 * on F as G, with the VP, then G's slot is freed, F's kt is left with tid
 * 0 for the next foreign thread to claim (a later thread may be given
 * F's tid by the kernel), and the VP goes to a spare.
 */
static void guest_thread_exit(void *p)
{
	struct kt *k = p;
	if (__weft_guest_enter() != 2)
		return;
	struct vp *vp = __weft_vp();
	struct ut *g = vp->cur;
	if (g != k->gut || vp->carrier != k) {
		if (!__weft_guest_leave())
			__weft_outcall_begin(__weft_vp());
		return;
	}
	__weft_hooks.ut_exiting(g);
	/* the destructors called out of Weft and back: F carries still */
	struct kt *to = __weft_kt_spare_get();
	if (!to)
		__weft_die("no kernel thread to take the VP from a foreign thread that ends "
			   "(WEFT_MAX_KTHREADS)");
	k->gut = NULL;
	k->exit_hooked = false;
	__weft_hooks.ut_reaped(g);
	__weft_ut_free(g);
	vp->stat.exited++;
	if (--__weft_proc.live == 0)
		exit(0);
	__weft_cur_set(vp, NULL);
	__weft_kt_let_go(k, false);
	__weft_preempt_forget(k);
	__atomic_store_n(&k->tid, 0, __ATOMIC_RELEASE);
	to->resume = NULL;
	__weft_kt_give(to);
}

struct ut *__weft_guest_ut(bool make)
{
	if (__weft_on_monitor() || !__atomic_load_n(&__weft_guests_ok, __ATOMIC_ACQUIRE))
		return NULL;
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct kt *k = __weft_kt_by_tid(me);
	if (k && k->guest && k->gut)
		return k->gut;
	if (!make || __weft_guest_enter() != 2)
		return NULL;
	struct ut *g = __weft_self();
	if (!__weft_guest_leave())
		__weft_outcall_begin(__weft_vp());
	return g;
}

bool __weft_foreign_child_self(pthread_t *self)
{
	pid_t child = __weft_proc.foreign_fork_child;
	if (!child || (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0) != child)
		return false;
	/* the parent's records, as the fork copied them: nothing runs them
	 * here, and nothing is made (the child is not the runtime's) */
	struct kt *k = __weft_kt_by_tid(__weft_proc.foreign_fork_parent_tid);
	*self = k && k->gut ? __weft_handle(k->gut) : (pthread_t)__weft_arch_tp_get();
	return true;
}

pthread_t __weft_guest_self(void)
{
	if (__weft_kt_in_birth())
		return (pthread_t)__weft_arch_tp_get();  /* glibc's own handle */
	pid_t me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	struct kt *k = __weft_kt_by_tid(me);
	if (k && k->gut)
		return __weft_handle(k->gut);
	if (__weft_guest_enter() != 2)
		return __weft_handle(__weft_self());
	pthread_t h = __weft_handle(__weft_self());
	if (!__weft_guest_leave())
		__weft_outcall_begin(__weft_vp());
	return h;
}
