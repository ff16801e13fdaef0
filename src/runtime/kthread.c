/*
 * kthread.c — the kernel threads that carry the VP: the VP's first one and
 * the spares Weft makes, their home contexts, and the spare list.
 *
 * Owns: struct kt for every kernel thread Weft knows (the first one, kt0,
 * lives here; spares are allocated once and never freed), the list of
 * parked spares, and each kernel thread's home loop.
 *
 * A spare is a real glibc thread, made with glibc's own pthread_create
 * (looked up past Weft with dlvsym), with every signal blocked: glibc
 * then knows the process has several threads and takes its malloc and
 * stdio locks for real (docs/architecture.md, "Activations").  Its home is
 * its own stack.  The VP's first kernel thread gets a small home stack the
 * first time it hands the VP on.  A kernel thread runs its home loop
 * whenever it does not run a UT: queue the UT it came back with (if any),
 * park on the spare list, and when handed the VP, carry it
 * (__weft_run_from_home) until one of its UTs comes home again.
 *
 * Invariants: a kernel thread is on the spare list iff it waits in
 * spare_park with gift == 0; it leaves the list only by the carrier's pop
 * (__weft_kt_spare_get), which is the only pop, so the list has no ABA.
 * Home code between "not the carrier any more" and "parked" makes only raw
 * system calls and atomic stores: it may run beside the carrier, on the
 * same thread pointer as the UTs (kt0), and must not touch TLS or runtime
 * state.  It runs on its kernel thread's own thread block, never on that
 * of the UT it left, which another carrier may run to its end and unmap
 * (switch_home).
 *
 * The one pop may also be the monitor's (monitor.c), but only while it
 * holds the VP in the middle of a takeover, when no carrier exists: pops
 * stay serial, by whoever holds the VP.
 *
 * Async readers: spares, the carrier and kernel threads back from a call
 * read and write the spare list (atomic CAS) and `gift` (atomic, futex);
 * any thread, signal handlers included, walks the list of every kt
 * (published by a release store, never shrinks) to find its own.
 */
#include "rt.h"
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#include "../arch/valgrind_req.h"
#include "../arch/arch.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HOME_STACK_SIZE (64u << 10)
#define TCB_STACKBLOCK 1680         /* struct pthread (glibc 2.36): stackblock, stackblock_size */
#define TCB_STACKBLOCK_SIZE 1688

typedef int (*glibc_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static struct {
	struct kt kt0;                    /* the VP's first kernel thread */
	struct kt *volatile spares;       /* parked spares, a LIFO stack */
	struct kt *volatile all;          /* every kt but kt0, newest first (grows only) */
	glibc_create_fn create;           /* glibc's pthread_create, or NULL */
	int (*detach)(pthread_t);         /* glibc's pthread_detach, or NULL (looked up with it) */
	bool looked_up;
	volatile uint64_t made;           /* spares made so far: written by whoever holds
					   * the VP (the carrier, or the monitor's spawner
					   * while the monitor holds it in a takeover) */
	volatile uint64_t parked;         /* spares on the list */
	/* The kernel thread glibc_thread is making, by its glibc handle
	 * (its thread pointer): glibc stores it before the clone, so from
	 * the new thread's first instruction until its creator goes on.  A
	 * sanitizer's start-up code runs there before spare_start and calls
	 * pthread_self and pthread_getattr_np (ThreadSanitizer's creator
	 * waits for it meanwhile): those get the kernel thread's own answers,
	 * never a guest's wait for the VP its creator holds.  Written by the
	 * creator (under the VP), read by any kernel thread. */
	pthread_t birth;
} kts;

static long futex(volatile uint32_t *w, int op, uint32_t v)
{
	return __weft_raw_syscall6(SYS_futex, (long)w, op | FUTEX_PRIVATE_FLAG, v, 0, 0, 0);
}

bool __weft_activations_on(void)
{
	if (__weft_cfg()->activations_off)
		return false;
	if (!kts.looked_up) {
		kts.looked_up = true;
		/* glibc's own, past Weft's: the current version, then the old */
#if WEFT_TSAN
		/* through ThreadSanitizer's interceptor: TSan must know every
		 * kernel thread that runs the program's code */
		void *f = dlsym(RTLD_NEXT, "pthread_create");
#elif defined(__SANITIZE_ADDRESS__)
		/* through AddressSanitizer's interceptor, by its own name (found
		 * so whatever the load order): ASan must know every kernel thread
		 * too.  Its record of a thread (the running stack's bounds, the
		 * fake stack, the fiber switch in progress) is found through a
		 * key Weft keeps per kernel thread (sync/key.c); a spare made past
		 * the interceptor had none, read the last record any kernel
		 * thread had set, and shared it with that thread: "starting fiber
		 * switch while in fiber switch" when both switched at once. */
		void *f = dlsym(RTLD_DEFAULT, "__interceptor_pthread_create");
		if (!f)
			f = dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
#else
		void *f = dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
#endif
		if (!f)
			f = dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.2.5");
		kts.create = (glibc_create_fn)f;
		void *d = dlvsym(RTLD_NEXT, "pthread_detach", "GLIBC_2.34");
		if (!d)
			d = dlvsym(RTLD_NEXT, "pthread_detach", "GLIBC_2.2.5");
		kts.detach = (int (*)(pthread_t))d;
	}
	return kts.create != NULL;
}

void __weft_kt_init(struct vp *vp)
{
	struct kt *k = &kts.kt0;
	if (__weft_arch_valgrind)       /* the birth handshake: vp.c says why */
		WEFT_VG_UNCHECKED(&kts, sizeof kts);
	k->tid = vp->tid;
	k->tp = vp->tp0;
	vp->carrier = k;
}

/* In a forked child only the caller's kernel thread exists: it becomes the
 * carrier, no spare is left, and UTs that were off the VP in the parent
 * never come back (fork.c frees them with the others). */
void __weft_kt_after_fork(struct vp *vp)
{
	struct kt *k = vp->carrier;
	/* the parent's other kernel threads' blocks go to glibc's stack
	 * cache in the child: their VP words cleared first (tp.h, without
	 * FSGSBASE), so that the child's next thread does not read one */
	void *mine = __weft_arch_tp_get();
	for (struct kt *o = kts.all; o; o = o->all_next)
		if (o != k && o->tp && o->tp != mine && o->tp != k->tp)
			__weft_arch_vp_word_clear(o->tp);
	if (k != &kts.kt0 && kts.kt0.tp && kts.kt0.tp != mine && kts.kt0.tp != k->tp)
		__weft_arch_vp_word_clear(kts.kt0.tp);
	k->tid = vp->tid;
	k->timers.made = false;
	k->timers.retry_armed = 0;
	kts.spares = NULL;
	/* the forking kernel thread stays findable by its tid (kt_by_tid)
	 * when it is not the first: otherwise, back from a blocking call
	 * whose VP it handed on, it took itself for a thread Weft did not
	 * make and became a guest (a grandchild's waitpid in
	 * mn_fork_child_restarts_vps, once the child's VPs ran again) */
	if (k != &kts.kt0) {
		k->all_next = NULL;
		kts.all = k;
		/* the first is the parent's: its tid may come back for a
		 * thread of the child's once the parent is gone */
		kts.kt0.tid = 0;
		kts.kt0.away = NULL;
	} else {
		kts.all = NULL;
	}
	kts.parked = 0;
	k->away = NULL;
	kts.made = 0;                     /* the parent's spares are not here */
	vp->inbox = NULL;
	vp->offvp = 0;
}

/* ---- the home loop -------------------------------------------------------- */

/* Wait for the VP.  A spare just made is already promised to its maker,
 * which hands it the VP once it has let go of it: it waits off the list. */
static void spare_park(struct kt *k, bool listed)
{
	struct kt *head;
	if (!listed)
		goto wait;
	do {
		head = __atomic_load_n(&kts.spares, __ATOMIC_RELAXED);
		k->next_spare = head;
	} while (!__atomic_compare_exchange_n(&kts.spares, &head, k, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	__atomic_add_fetch(&kts.parked, 1, __ATOMIC_RELAXED);
wait:
	while (!__atomic_load_n(&k->gift, __ATOMIC_ACQUIRE))
		futex(&k->gift, FUTEX_WAIT, 0);
}

/* Under M:N, the VP given to k: its %gs names it from here, and k takes
 * the runtime lock before it touches anything of it (mn.c). */
static struct vp *take_vp(struct kt *k)
{
	if (!__weft_mn)
		return __weft_vp();
	struct vp *vp = k->vp;
	__weft_arch_gs_set(vp);
	__weft_rtl_lock();
	vp->in_weft = 1;
	if (!vp->tp0) {
		/* the VP's first kernel thread: glibc's identity for its UTs */
		vp->tp0 = k->tp;
		vp->self0 = *(void **)((char *)k->tp + 0x10);
		/* a VP that starts was not idle: a monitor parked on the
		 * others must watch it too (monitor.c, quiet) */
		__weft_monitor_check_parked();
	}
	return vp;
}

/* Take the VP handed to k: the carrier's side of a handoff. */
static void carry(struct kt *k)
{
#if WEFT_ARCH_KT_WORD
	/* M:1: from here two kernel threads may run on one block (rt.h) */
	if (!__weft_mn)
		__atomic_store_n(&__weft_kt_word_shared, true, __ATOMIC_SEQ_CST);
#endif
	/* M:N: k's own block before take_vp writes the VP word, which
	 * without FSGSBASE lives in the current block (tp.h).  k may still
	 * be on the block of the UT it last ran, which another carrier may
	 * run now (kt0 parked at home on main's block after the monitor took
	 * main: guest_keys_and_exit crashed on the other VP's word). */
	if (__weft_mn && __weft_arch_tp_get() != k->tp)
		__weft_tp_set(k->tp);
	struct vp *vp = take_vp(k);
	k->gift = 0;
	vp->carrier = k;
	__atomic_store_n(&vp->tid, k->tid, __ATOMIC_RELEASE);
	/* UTs without TLS of their own see the VP's one glibc thread; with
	 * TLS, the carrier's own block (kt0's may have moved: monitor.c) */
	if (!vp->tp_on && k->tp != vp->tp0)
		__weft_tp_set(vp->tp0);
	else if (vp->tp_on && __weft_arch_tp_get() != k->tp)
		__weft_tp_set(k->tp);
	__weft_preempt_carry();
	__weft_cpu_carry(vp);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&vp->prog_mask, 0, 8, 0, 0);
	struct ut *run = k->resume;
	k->resume = NULL;
	__weft_run_from_home(vp, &k->home, run);
	/* a UT on k came home: k carries nothing now */
	if (__weft_arch_tp_get() != k->tp)
		__weft_tp_set(k->tp);
}

/* Home makes a copy-stack UT's blocking call (handoff.c): the UT switched
 * here with the VP still held; home lets it go and makes the call on its
 * own stack, so the run stack serves other UTs meanwhile.  Every signal is
 * blocked on k from here: the kernel can interrupt the call only for a
 * stop, and then it is made again.  A cancellable call lets the tick's
 * signal in (pthread_cancel's kick) and returns its EINTR to the UT, which
 * acts on the request or makes the call again. */
static void call_for(struct kt *k, struct vp *vp)
{
	struct ut *x = k->call.x;
	k->call.x = NULL;
	__weft_cur_set(vp, NULL);
	__weft_kt_let_go(k, true);
	__weft_kt_give(k->call.to);
	long r;
	if (k->call.cancellable) {
		r = __weft_blocking_cancellable_call(x, k, true, k->call.nr, k->call.a);
	} else {
		do
			r = __weft_raw_syscall6(k->call.nr, k->call.a[0], k->call.a[1], k->call.a[2],
						k->call.a[3], k->call.a[4], k->call.a[5]);
		while (r == -EINTR);
	}
	x->cs->result = r;
	k->rejoin = x;
}

static __attribute__((noreturn)) void home_loop(struct kt *k, bool promised)
{
	for (;; promised = false) {
		/* the VP k last carried (M:N: its %gs) */
		struct vp *vp = __weft_vp();
		if (k->call.x)
			call_for(k, vp);
		struct ut *x = k->rejoin;
		if (x) {
			/* queue it; from here the carrier may run it at once */
			k->rejoin = NULL;
			struct ut *head;
			do {
				head = __atomic_load_n(&vp->inbox, __ATOMIC_RELAXED);
				x->q_next = head;
			} while (!__atomic_compare_exchange_n(&vp->inbox, &head, x, false, __ATOMIC_SEQ_CST,
							      __ATOMIC_RELAXED));
			__weft_preempt_kick(vp);
		}
		if (k->lend_to) {
			/* the carrier chose a guest UT, which only its own kernel
			 * thread runs (guest.c).  The VP is let go here, on home's
			 * stack, not on the UT's that chose it: under M:N another
			 * VP may run that UT as soon as the lock is free, and its
			 * registers are saved only once k has left its stack */
			struct kt *to = k->lend_to;
			k->lend_to = NULL;
			__weft_kt_let_go(k, true);
			__weft_kt_give(to);
		}
		/* a guest's kernel thread waits off the list: only its UT's
		 * turn wakes it */
		spare_park(k, !promised && !k->guest);
		carry(k);
	}
}

/* k leaves the UT it ran for its home, while no other carrier can run that
 * UT yet (it is not queued, or k still holds the VP): home code runs on
 * k's own thread block.  The UT's block may lie at the top of its stack,
 * and once home queues the UT (or the VP is let go), another carrier may
 * run it to its exit and unmap that stack while k still waits at home,
 * where carry() reads %fs:0.  The first kernel thread's first trip home
 * starts afresh (home_entry), not by carry's return, which resets the
 * pointer: it kept the UT's block, a SIGSEGV once that UT was gone
 * (mn_home_tp_released).  The switch tells the sanitizers on the side of
 * the pointer's move each needs (sched.c). */
static void switch_home(struct kt *k, struct ut *from)
{
	__weft_san_leave_to_tp(from, &k->home, k->tp);
	__weft_switch(&from->sp, k->home.sp);
}

/* Home code's first rule: no signal, no tick, no VP.  The program's mask
 * goes with the VP to the next carrier.  The one place a carrier lets the
 * VP go (handoff.c, guest.c, the chooser's lend). */
void __weft_kt_let_go(struct kt *k, bool save_mask)
{
	struct vp *vp = __weft_vp();
	if (save_mask) {
		sigset_t all;
		__weft_sigset_home(&all);
		__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&vp->prog_mask, 8, 0, 0);
	}
	__weft_preempt_release(k);
	__atomic_store_n(&vp->tid, 0, __ATOMIC_RELEASE);
	/* M:N: the lock goes with the VP (the next carrier takes it); k
	 * touches no runtime state from here */
	if (__weft_mn)
		__weft_rtl_unlock();
}

void __weft_kt_lend_from(struct kt *k, struct ut *prev)
{
	struct vp *vp = __weft_vp();
	struct ut *next = vp->cur;
	if (__weft_kt_home_ready(k) != 0)
		__weft_die("no memory for a kernel thread's home stack");
	k->lend_to = next->guest_kt;
	/* where the guest's kernel thread waits at home (back from a call
	 * off the VP), it resumes the UT from there */
	next->guest_kt->resume = next;
	switch_home(k, prev);
	/* prev runs again: some carrier chose it and switched to it here */
}

void __weft_kt_give_and_wait(struct kt *k, struct kt *to, struct ut *run)
{
	to->resume = run;
	/* cleared while the VP is held: once it is let go, another VP may
	 * choose k's guest and give k the VP at once */
	__atomic_store_n(&k->gift, 0, __ATOMIC_RELAXED);
	__weft_kt_let_go(k, false);
	__weft_kt_give(to);
	while (!__atomic_load_n(&k->gift, __ATOMIC_ACQUIRE))
		futex(&k->gift, FUTEX_WAIT, 0);
	k->resume = NULL;                 /* its UT goes on right here */
	__weft_kt_guest_carry(k);
}

void __weft_kt_guest_carry(struct kt *k)
{
	struct vp *vp = take_vp(k);
	k->gift = 0;
	vp->carrier = k;
	__atomic_store_n(&vp->tid, k->tid, __ATOMIC_RELEASE);
	__weft_preempt_carry();
}

struct kt *__weft_kt_guest_make(pid_t tid)
{
	/* a guest whose kernel thread ended (guest.c) left its kt with tid
	 * 0: the first newcomer to claim it by CAS has it, so a program
	 * that makes and ends foreign threads forever holds a bounded set */
	for (struct kt *k = __atomic_load_n(&kts.all, __ATOMIC_ACQUIRE); k; k = k->all_next) {
		pid_t zero = 0;
		if (k->guest && __atomic_load_n(&k->tid, __ATOMIC_ACQUIRE) == 0 &&
		    __atomic_compare_exchange_n(&k->tid, &zero, tid, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			k->tp = __weft_arch_tp_get();
			k->gut = NULL;
			k->exit_hooked = false;
			k->resume = NULL;
			k->lend_to = NULL;
			k->gift = 0;
			return k;
		}
	}
	struct kt *k = mmap(NULL, sizeof *k, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k == MAP_FAILED)
		return NULL;
	k->guest = true;
	k->tid = tid;
	k->tp = __weft_arch_tp_get();
	k->req.guest_kt = k;
	struct kt *head;
	do {
		head = __atomic_load_n(&kts.all, __ATOMIC_RELAXED);
		k->all_next = head;
	} while (!__atomic_compare_exchange_n(&kts.all, &head, k, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return k;
}

static void home_entry(void *p)
{
	struct kt *k = p;
	__weft_san_enter(&k->home);
	home_loop(k, false);
}

static void *spare_start(void *p)
{
	struct kt *k = p;
	k->tid = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	__weft_kt_word_claim();
	/* findable by its tid from here (a release store publishes k) */
	struct kt *head;
	do {
		head = __atomic_load_n(&kts.all, __ATOMIC_RELAXED);
		k->all_next = head;
	} while (!__atomic_compare_exchange_n(&kts.all, &head, k, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	k->tp = __weft_arch_tp_get();
	char *lo = *(char **)((char *)k->tp + TCB_STACKBLOCK);
	size_t size = *(size_t *)((char *)k->tp + TCB_STACKBLOCK_SIZE);
	k->home.stack.lo = lo;
	k->home.stack.hi = lo + size;
	k->home.stack.kind = STACK_USER;
#if WEFT_TSAN
	__weft_tsan_adopt_thread(&k->home);   /* its home is TSan's own thread */
#endif
	__weft_fault_thread_init();
	home_loop(k, true);
}

int __weft_kt_home_stack_get(struct ut_stack *s)
{
	memset(s, 0, sizeof *s);
	return __weft_stack_get(s, HOME_STACK_SIZE, 0) != 0 ? EAGAIN : 0;
}

bool __weft_kt_home_adopt(struct kt *k, const struct ut_stack *s)
{
	if (k->home.sp)
		return false;
	k->home.stack = *s;
	k->home.tp = k->tp;
	k->home.sp = __weft_arch_frame(s->hi, home_entry, k);
	return true;
}

int __weft_kt_home_ready(struct kt *k)
{
	if (k->home.sp)
		return 0;
	/* the first kernel thread: a small stack of its own, made once */
	struct ut_stack s;
	if (__weft_kt_home_stack_get(&s) != 0)
		return EAGAIN;
	__weft_kt_home_adopt(k, &s);
	return 0;
}

/* ---- spares ------------------------------------------------------------ */

/* glibc's pthread_create, called as a glibc thread: the caller's own TCB
 * in %fs while it runs, every signal blocked (the new thread inherits
 * that mask). */
#if defined(__SANITIZE_ADDRESS__)
/* ASan's interceptor returns to the creator before the new thread has
 * started; the thread's start-up code in ASan then asks pthread_self and
 * pthread_getattr_np, which must find it still in its birth (kts.birth),
 * not a guest waiting for the VP its creator may hold.  So the creator
 * waits until the thread reaches `born`, past ASan's start-up. */
struct birth {
	void *(*fn)(void *);
	void *arg;
	volatile uint32_t born;
};

static void *born(void *p)
{
	struct birth *b = p;
	void *(*fn)(void *) = b->fn;
	void *arg = b->arg;
	__atomic_store_n(&b->born, 1, __ATOMIC_RELEASE);   /* b may go now */
	futex(&b->born, FUTEX_WAKE, 1);
	return fn(arg);
}
#endif

static int glibc_thread(void *(*fn)(void *), void *arg, void *own)
{
	void *tp = __weft_arch_tp_get();
	sigset_t all, old;
	sigfillset(&all);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0);
	if (tp != own)
		__weft_tp_set(own);
	pthread_t *id = (pthread_t *)&kts.birth;
	bool late_init = __weft_setxid_needs_late_init();
	if (late_init)
		__weft_setxid_single_threaded(1);
#if WEFT_TSAN
	/* ThreadSanitizer's interceptor fills a NULL attribute with
	 * pthread_attr_init, which in the program's link is Weft's, and hands
	 * it to glibc: give it one of glibc's own, with glibc's default size
	 * and room for the static TLS (TSan's alone is 768 KiB). */
	static int (*attr_init)(pthread_attr_t *), (*attr_size)(pthread_attr_t *, size_t),
		(*attr_destroy)(pthread_attr_t *);
	if (!attr_init) {
		attr_size = (int (*)(pthread_attr_t *, size_t))dlvsym(RTLD_NEXT, "pthread_attr_setstacksize",
								      "GLIBC_2.34");
		attr_destroy = (int (*)(pthread_attr_t *))dlvsym(RTLD_NEXT, "pthread_attr_destroy", "GLIBC_2.2.5");
		attr_init = (int (*)(pthread_attr_t *))dlvsym(RTLD_NEXT, "pthread_attr_init", "GLIBC_2.2.5");
	}
	pthread_attr_t ga;
	int e = attr_init && attr_size && attr_destroy ? attr_init(&ga) : ENOSYS;
	if (e == 0) {
		e = attr_size(&ga, (size_t)9 << 20);
		if (e == 0)
			e = kts.create(id, &ga, fn, arg);
		attr_destroy(&ga);
	}
#elif defined(__SANITIZE_ADDRESS__)
	struct birth b = { fn, arg, 0 };
	int e = kts.create(id, NULL, born, &b);
	while (e == 0 && !__atomic_load_n(&b.born, __ATOMIC_ACQUIRE))
		futex(&b.born, FUTEX_WAIT, 0);
#else
	int e = kts.create(id, NULL, fn, arg);
#endif
	if (late_init)
		__weft_setxid_single_threaded(0);
	if (e == 0)
		__weft_setxid_glibc_ready();
	__atomic_store_n(&kts.birth, 0, __ATOMIC_RELEASE);
	if (tp != own)
		__weft_tp_set(tp);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	return e;
}

static struct kt *spare_make(void *own)
{
	if (kts.made >= __weft_cfg()->max_kthreads || !__weft_activations_on())
		return NULL;
	struct kt *k = mmap(NULL, sizeof *k, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k == MAP_FAILED)
		return NULL;
	k->spare = true;
	/* promised to the caller, which gives it the VP (gift) when ready */
	k->gift = 0;
	if (glibc_thread(spare_start, k, own) != 0) {
		munmap(k, sizeof *k);
		return NULL;
	}
	kts.made++;
	return k;
}

/* glibc skips the lock prefix of its "catomic" operations while the TCB's
 * multiple_threads is 0: once a second kernel thread exists, every UT's
 * TCB says 1 (tls.c fills new ones from kt0's, which says so too). */
static void multiple_threads_on(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	__weft_tls_multiple_threads();
}

/* Pop a parked spare, or make one; `own` is the caller's own TCB. */
static struct kt *spare_take(void *own)
{
	struct kt *k = __weft_kt_spare_pop();
	if (k)
		return k;
	multiple_threads_on();
	return spare_make(own);
}

/* The block the carrier k makes glibc threads from (glibc_thread loads
 * it): its own.  A guest whose kernel thread shares its creator's block (a
 * clone without CLONE_SETTLS) carries on its guest UT's block instead
 * (guest.c) and must not load the shared one, where another VP's carrier
 * may run the main UT at that moment: without FSGSBASE the move carried
 * this VP into that block's VP word (tp.h), and the main UT's next call
 * took the other VP for its own (guest_foreign_threads, about one run in
 * a hundred under two VPs: a fault, or the clone's errno lost). */
static void *own_block(const struct kt *k)
{
	if (k->guest && k->gut && k->gut->tp)
		return k->gut->tp;
	return k->tp;
}

void *__weft_kt_own_block(const struct kt *k) { return own_block(k); }

struct kt *__weft_kt_spare_get(void)
{
	return spare_take(own_block(__weft_vp()->carrier));
}

struct kt *__weft_kt_spare_for_monitor(void)
{
	return spare_take(__weft_arch_tp_get());
}

struct kt *__weft_kt_spare_pop(void)
{
	struct kt *head = __atomic_load_n(&kts.spares, __ATOMIC_ACQUIRE);
	while (head) {
		struct kt *next = head->next_spare;
		if (__atomic_compare_exchange_n(&kts.spares, &head, next, false, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE)) {
			__atomic_sub_fetch(&kts.parked, 1, __ATOMIC_RELAXED);
			return head;
		}
	}
	return NULL;
}

int __weft_kt_glibc_thread(void *(*fn)(void *), void *arg, bool foreign)
{
	if (!__weft_activations_on())
		return ENOSYS;
	if (foreign)                      /* its own thread block, told by glibc */
		return glibc_thread(fn, arg, __weft_arch_tp_get());
	multiple_threads_on();
	return glibc_thread(fn, arg, own_block(__weft_vp()->carrier));
}

bool __weft_kt_glibc_thread_can_end(void)
{
#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
	/* the sanitizers' records per kernel thread (sync/key.c's values by
	 * tid, the word in each block: tp.h) assume Weft's kernel threads
	 * never end: a new thread given an ended one's tid would read its
	 * records */
	return false;
#else
	return kts.detach != NULL;
#endif
}

void __weft_kt_glibc_thread_end(void)
{
	/* glibc's own thread handle is its thread block, the %fs base of a
	 * glibc thread of Weft's (it never runs on another) */
	kts.detach((pthread_t)__weft_arch_tp_get());
}

void __weft_kt_multiple_threads_on(void)
{
	multiple_threads_on();
}

void __weft_kt_each(void (*fn)(struct kt *))
{
	fn(&kts.kt0);
	for (struct kt *k = __atomic_load_n(&kts.all, __ATOMIC_ACQUIRE); k; k = k->all_next)
		fn(k);
}

/* The first kernel thread's home gets a thread block of its own (the way a
 * UT gets one), because a UT away from the VP goes on with the first
 * kernel thread's own block beside it (monitor.c).  Held VP. */
void __weft_kt0_tcb_apart(void)
{
	struct kt *k = &kts.kt0;
	if (k->tp != __weft_vp()->tp0)
		return;                   /* apart already */
	k->home.tp = NULL;
	__weft_tls_attach_late(&k->home);
	k->tp = k->home.tp;
}

struct kt *__weft_kt_by_tid(pid_t tid)
{
	if (kts.kt0.tid == tid)
		return &kts.kt0;
	for (struct kt *k = __atomic_load_n(&kts.all, __ATOMIC_ACQUIRE); k; k = k->all_next)
		if (__atomic_load_n(&k->tid, __ATOMIC_ACQUIRE) == tid)
			return k;
	return NULL;
}

struct kt *__weft_kt_away_with(const struct ut *x)
{
	if (__atomic_load_n(&kts.kt0.away, __ATOMIC_ACQUIRE) == x)
		return &kts.kt0;
	for (struct kt *k = __atomic_load_n(&kts.all, __ATOMIC_ACQUIRE); k; k = k->all_next)
		if (__atomic_load_n(&k->away, __ATOMIC_ACQUIRE) == x)
			return k;
	return NULL;
}

void __weft_kt_give_vp(struct kt *k, struct vp *vp)
{
	k->vp = vp;
	if (__atomic_exchange_n(&k->gift, 1, __ATOMIC_RELEASE) == 0)
		futex(&k->gift, FUTEX_WAKE, 1);
}

void __weft_kt_give(struct kt *k)
{
	__weft_kt_give_vp(k, __weft_vp());
}

#if WEFT_ARCH_KT_WORD
bool __weft_kt_word_shared;

/* The thread blocks whose word a kernel thread claimed.  Those kernel
 * threads never end, so no block with a word set goes to glibc's stack
 * cache while the process lives; but a fork's child inherits every one of
 * them, and glibc puts the blocks of the threads the child does not have
 * into its cache, whence the child's next glibc thread (a spare, the
 * monitor) gets one with a parent kernel thread's id in it: ASan's
 * key then found that thread's record for the newborn ("0 == AsanTSDGet()"
 * failed in its thread start).  The child clears them
 * (__weft_kt_words_after_fork).  Writers: each claiming kernel thread
 * appends its block (a fetch-add claims the slot); reader: the fork's
 * child, alone.  Past KT_WORD_BLOCKS blocks the child trusts no word. */
#define KT_WORD_BLOCKS 4096u
static void *kt_word_blocks[KT_WORD_BLOCKS];
static uint32_t kt_word_nblocks;
#endif

void __weft_kt_word_claim(void)
{
#if WEFT_ARCH_KT_WORD
	__weft_arch_kt_word_set((int)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0));
	uint32_t i = __atomic_fetch_add(&kt_word_nblocks, 1, __ATOMIC_RELAXED);
	if (i < KT_WORD_BLOCKS)
		__atomic_store_n(&kt_word_blocks[i], __weft_arch_tp_get(), __ATOMIC_RELEASE);
#endif
}

/* AddressSanitizer: a parent kernel thread's stack holds the poison of
 * the frames it had when the parent forked (it never ended in the child,
 * so nothing cleared it), and glibc gives that stack to the child's next
 * thread, whose start-up in ASan runs instrumented code (Weft's
 * pthread_attr_init, through pthread_getattr_np) before ASan clears the
 * new stack's shadow: a false stack-buffer-underflow, once a child
 * started its VPs again (mn_fork_child_restarts_vps).  Cleared here, as
 * the thread's end would have. */
#if WEFT_ARCH_KT_WORD
static void stack_unpoison(void *tp)
{
#if defined(__SANITIZE_ADDRESS__)
	char *lo = *(char **)((char *)tp + TCB_STACKBLOCK);
	size_t size = *(size_t *)((char *)tp + TCB_STACKBLOCK_SIZE);
	if (lo && size)
		__asan_unpoison_memory_region(lo, size);
#else
	(void)tp;
#endif
}
#endif

void __weft_kt_words_after_fork(void)
{
#if WEFT_ARCH_KT_WORD
	void *mine = __weft_arch_tp_get();
	uint32_t n = kt_word_nblocks;
	for (uint32_t i = 0; i < n && i < KT_WORD_BLOCKS; i++)
		if (kt_word_blocks[i] && kt_word_blocks[i] != mine) {
			__weft_arch_kt_word_clear(kt_word_blocks[i]);
			stack_unpoison(kt_word_blocks[i]);
		}
	if (n > KT_WORD_BLOCKS)
		__atomic_store_n(&__weft_kt_word_shared, true, __ATOMIC_SEQ_CST);
	kt_word_nblocks = 0;
#endif
}

bool __weft_kt_in_birth(void)
{
	pthread_t b = __atomic_load_n(&kts.birth, __ATOMIC_ACQUIRE);
	return b && b == (pthread_t)__weft_arch_tp_get();
}

bool __weft_kt_birth_stack(pthread_t th, char **lo, size_t *size)
{
	if (!__weft_kt_in_birth() || th != kts.birth)
		return false;
	char *tp = __weft_arch_tp_get();
	*lo = *(char **)(tp + TCB_STACKBLOCK);
	*size = *(size_t *)(tp + TCB_STACKBLOCK_SIZE);
	return true;
}

void __weft_kt_counts(uint64_t *made, uint64_t *spare)
{
	*made = kts.made;
	*spare = kts.parked;
}

void __weft_kt_call_from_home(struct kt *k, struct ut *x, struct kt *to, long nr, const long a[6], bool cancellable)
{
	k->call.to = to;
	k->call.cancellable = cancellable;
	k->call.nr = nr;
	memcpy(k->call.a, a, sizeof k->call.a);
	k->call.x = x;
	switch_home(k, x);
	/* x runs again: some carrier chose it and switched to it here */
	__weft_switched_in(__weft_vp());
}

void __weft_kt_go_home(struct kt *k, struct ut *x)
{
	/* home: queue x, wake the carrier, park (home_loop) */
	k->rejoin = x;
	switch_home(k, x);
	/* x runs again: some carrier chose it and switched to it here */
	__weft_switched_in(__weft_vp());
}
