/*
 * mn.c — M:N: several VPs, each carried by a kernel thread of its own.
 *
 * Owns: the runtime lock (__weft_rtl), the start of the VPs beyond the
 * first, how an idle VP spins, sleeps and is woken (Go's rule: a VP that
 * makes work wakes a sleeping VP only when no VP is already looking for
 * work, and never more VPs than there is work), and preemption across VPs
 * (a UT made ready that outranks the lowest-priority running UT preempts
 * it, on whichever VP that runs).
 *
 * The design (docs/architecture.md, "M:N"): one set of ready queues and one
 * timer heap for the whole process (rt.h, struct weft_runq), chosen from by
 * the one chooser on every VP — but level 0, kept per VP and stolen from
 * (sched.c, "level 0 per VP") — and one lock that a kernel thread holds
 * while it runs Weft's code on a VP.  So Weft's text runs on one VP at a
 * time and every runtime and sync sequence runs to completion as in M:1,
 * while the program's code runs on all VPs at once.  With one VP (the
 * default) none of this runs: __weft_mn is false and the lock is never
 * taken.
 *
 * Invariants, all under the lock: proc.mn.nidle counts VPs between
 * __weft_mn_sleep_begin and _end (asleep in the kernel, lock let go);
 * proc.mn.waking counts those of them with `woken` set (a waker bumped
 * their `wake` word and they have not yet run); proc.mn.spinning counts
 * VPs looking for work without the lock (__weft_mn_spin).  A waker holds
 * the lock, so it sees `idle` set on a VP only once that VP has read its
 * `wake` word for its sleep: no wake-up is lost.
 *
 * Async readers: a spinning VP reads __weft_rq.nready, its own inbox and
 * `signals` without the lock (hints: it takes the lock before it acts);
 * the tick handler of a kicked VP reads only what preempt.c says.
 */
#include "rt.h"
#include "../arch/arch.h"

#include "weft.h"

#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#define SPIN_NS 30000                 /* how long an idle VP looks before it sleeps */
#define IDLE_STACK_SIZE (64u << 10)
#define LOCK_SPINS 64
#define RTL_BACKOFF_NS 80000            /* a lock waiter sleeps, unasked, this long at most */
#define RTL_BACKOFF_STEP_NS 20000       /* ... a step at a time (plus the timer slack) */
#define RTL_STARVE_NS 100000            /* a lock waiter asks for a hand-over (rt.h) */

struct weft_rtl_line __weft_rtl;
bool __weft_mn;

static long futex(volatile uint32_t *w, int op, uint32_t v)
{
	return __weft_raw_syscall6(SYS_futex, (long)w, op | FUTEX_PRIVATE_FLAG, v, 0, 0, 0);
}

/* ---- the runtime lock ------------------------------------------------------ */

/* This waiter has waited RTL_STARVE_NS: ask for the lock to be handed to
 * it (rt.h, __weft_rtl.starving).  False if another waiter asked first
 * (this one waits as before, and asks again after its next wake-up). */
static bool wait_handed_over(void)
{
	uint32_t handed = 0;
	volatile uint32_t *none = NULL;
	if (!__atomic_compare_exchange_n(&__weft_rtl.starving, &none, &handed, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED))
		return false;
	/* The lock let go before the unlock could see the claim: take it as
	 * any waiter would, and withdraw the claim.  No unlocker can have
	 * taken the claim meanwhile: it does so only once it has taken the
	 * lock back itself, which this compare-exchange then fails on. */
	uint32_t free_ = 0;
	if (__atomic_compare_exchange_n(&__weft_rtl.word, &free_, 2, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		__atomic_store_n(&__weft_rtl.starving, NULL, __ATOMIC_RELAXED);
		return true;
	}
	while (__atomic_load_n(&handed, __ATOMIC_ACQUIRE) == 0)
		futex(&handed, FUTEX_WAIT, 0);
	return true;
}

static bool rtl_try(void)
{
	uint32_t free_ = 0;
	return __atomic_load_n(&__weft_rtl.word, __ATOMIC_RELAXED) == 0 &&
	       __atomic_compare_exchange_n(&__weft_rtl.word, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/*
 * A holder keeps the lock for a Weft call's length (well under a µs), so
 * a waiter spins first.  Then it backs off: it sleeps RTL_BACKOFF_STEP_NS
 * at a time, on a word of its own that nobody wakes, and tries again, for
 * RTL_BACKOFF_NS at most; only then does it sleep on the lock itself
 * (Drepper's futex mutex: 2 = sleepers, woken by the unlock) and, past
 * RTL_STARVE_NS, ask for the hand-over.
 *
 * Why back off.  When every VP's UTs live in Weft's text (a program that
 * only creates and joins: skynet), each VP takes the lock for every call.
 * A waiter that spins and then sleeps on the word takes it at the next
 * unlock, so the lock, and with it every line of runtime state the calls
 * touch, crossed between the cores at every call: two VPs ran such a
 * program 5 to 7 times slower than one.  A waiter that stays away for a
 * while leaves the holder's VP to run a stretch of calls on warm caches,
 * and the lock crosses once a stretch (skynet_100k: 150 ms -> 50 ms on
 * two VPs, 30 ms on one).  A program whose calls do not collide never
 * gets here; one whose VPs meet now and then pays the spin, as before.
 * The cost is latency: a waiter may take the lock up to a step (and the
 * kernel's timer slack) after it is let go.
 *
 * The backoff's sleep is not on the lock word: an unlock that finds
 * sleepers (2) wakes one waiter on that word, and a backing-off waiter
 * that took the wake-up would leave the sleeper it was meant for asleep,
 * and its own later unlock (it took the lock with 1) would wake nobody.
 * Taking the lock with 1 while sleepers wait is safe, as in the spin: the
 * woken sleeper marks the word 2 again when it finds the lock held.
 *
 * No backoff for an idle VP that has work to take (__weft_rtl_lock_prompt:
 * its spin saw a UT ready, or it was woken from its sleep): it has no
 * stretch of calls of its own to run on warm caches, and a step of sleep
 * there is a step of latency added to the work it was woken for.  Four
 * UT pairs passing a byte over sockets on two VPs took 34 us a round trip
 * with the backoff there, 26 without (bench mn_socket_pingpong).  The
 * price: two UTs that hand a mutex, a condition or a semaphore back and
 * forth ran on two VPs more often.  With the backoff, the VP woken for the
 * one UT a busy VP had just made ready usually came too late, and the busy
 * VP ran it itself on warm caches, as one VP would; taking the lock at
 * once, it stole that UT (mn_mutex_handoff and mn_cond_pingpong 10 to 40%
 * slower).  Backing off only when one UT was ready lost the sockets' gain
 * as well; the grace below (__weft_mn_grace) gives most of the ping-pong
 * back and keeps the sockets'.
 */
static bool rtl_backoff(void)
{
	int64_t since = __weft_now();
	do {
		uint32_t nobody = 0;
		struct timespec step = { 0, RTL_BACKOFF_STEP_NS };
		__weft_raw_syscall6(SYS_futex, (long)&nobody, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, (long)&step, 0, 0);
		if (rtl_try())
			return true;
	} while (__weft_now() - since < RTL_BACKOFF_NS);
	return false;
}

static void rtl_sleep(bool backoff)
{
	int64_t since = __weft_now();
	if (backoff && rtl_backoff())
		return;
	while (__atomic_exchange_n(&__weft_rtl.word, 2, __ATOMIC_ACQUIRE) != 0) {
		if (__weft_now() - since >= RTL_STARVE_NS && wait_handed_over())
			return;
		futex(&__weft_rtl.word, FUTEX_WAIT, 2);
	}
}

/* The spin, then the sleeps.  A VP's kernel thread says it sleeps here
 * (rt.h, rtl_waiting), so that the monitor does not read its /proc files
 * to find it asleep in Weft's own code: two VPs passing bytes over sockets
 * drew about three such reads a round trip, on a third kernel thread that
 * competed with the two for the machine's two cores. */
static void rtl_lock_wait(bool backoff)
{
	for (int i = 0; i < LOCK_SPINS; i++) {
		__builtin_ia32_pause();
		if (rtl_try())
			return;
	}
	struct vp *me = __weft_arch_gs_get();
	if (me)
		__atomic_store_n(&me->rtl_waiting, 1, __ATOMIC_RELAXED);
	rtl_sleep(backoff);
	if (me)
		__atomic_store_n(&me->rtl_waiting, 0, __ATOMIC_RELAXED);
}

void __weft_rtl_lock_slow(void)
{
	rtl_lock_wait(true);
}

void __weft_rtl_lock_prompt(void)
{
	if (!rtl_try())
		rtl_lock_wait(false);
	WEFT_RTL_OWNER_SET(__weft_arch_gs_get());
}

/* The unlock's slow path: sleepers to wake (was 2), or a starving waiter
 * to hand the lock to.  The unlock has let the lock go already; it takes
 * it back for the waiter (2: the sleepers on the word, if any, are owed a
 * wake-up by the waiter's own unlock), and only then claims the waiter's
 * slot, by compare-exchange from the address it read: the claim it read
 * may be gone by then (its waiter took the lock itself in between, and
 * withdrew it; another waiter may have claimed the slot since), and
 * handing the lock to a waiter that no longer waits would leave it held
 * by nobody, and write into a stack frame that is gone.  While this
 * thread holds the lock no claim can be withdrawn, so a claim it wins is
 * a waiter that waits, or is about to, on its word.  If another kernel
 * thread takes the lock first, that one's unlock hands it over instead. */
void __weft_rtl_unlock_slow(uint32_t was)
{
	bool wake = was == 2;
	for (;;) {
		volatile uint32_t *waiter = __atomic_load_n(&__weft_rtl.starving, __ATOMIC_SEQ_CST);
		uint32_t free_ = 0;
		if (!waiter ||
		    !__atomic_compare_exchange_n(&__weft_rtl.word, &free_, 2, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			break;
		if (__atomic_compare_exchange_n(&__weft_rtl.starving, &waiter, NULL, false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			__weft_rtl.handovers++;
			__atomic_store_n(waiter, 1, __ATOMIC_RELEASE);
			/* the word is on the waiter's stack, which may be in use
			 * again by now: a wake there is at worst a spurious one */
			futex(waiter, FUTEX_WAKE, 1);
			return;
		}
		/* the claim read is gone: let go again (a sleeper may have come
		 * meanwhile, so wake one at the end), and look once more */
		__atomic_exchange_n(&__weft_rtl.word, 0, __ATOMIC_SEQ_CST);
		wake = true;
	}
	if (wake)
		__weft_rtl_wake();
}

void __weft_rtl_wake(void)
{
	futex(&__weft_rtl.word, FUTEX_WAKE, 1);
}

/* ---- configuration ---------------------------------------------------------- */

const char *__weft_mn_unavailable(void)
{
	if (__weft_arch_valgrind)
		return "under Valgrind, which runs one kernel thread at a time";
	if (!__weft_activations_on())
		return "kernel threads cannot be made here (a static program, or WEFT_ACTIVATIONS=off)";
	if (!__weft_tls_takeover_prepare())
		return "threads cannot have thread-local storage of their own here (WEFT_TLS=off?)";
	return NULL;
}

int __weft_mn_set_vps(unsigned n)
{
	if (n == 0 || n > WEFT_VPS_MAX)
		return EINVAL;
	if (__weft_proc.next_id != 2 || __weft_proc.mn.started)
		return n == __weft_proc.nvps ? 0 : EBUSY;
	/* a restartable sequence registered already is atomic on one VP only */
	if (n > 1 && (__weft_mn_unavailable() || __weft_ras_registered()))
		return ENOTSUP;
	/* every VP's idle stack now, while memory is to be had: the VPs
	 * start later, at the second UT, when a program may have used it up */
	for (unsigned i = 0; i < n; i++)
		if (n > 1 && __weft_mn_idle_stack(&__weft_vps[i]) != 0)
			return EAGAIN;
	__weft_proc.nvps = n;
	__weft_mn = n > 1;
	if (__weft_mn)
		__weft_arch_gs_set(&__weft_vps[0]);
	return 0;
}

int __weft_mn_idle_stack(struct vp *vp)
{
	struct ut *t = &vp->idle_ut;
	if (t->stack.hi)
		return 0;
	if (__weft_stack_get(&t->stack, IDLE_STACK_SIZE, 0) != 0)
		return EAGAIN;
	t->state = UT_BLOCKED;
	memcpy(t->name, "weft-idle", 10);
	return 0;
}

/*
 * The second UT is being made: start every VP but this one (VP 0, or in a
 * child forked after the VPs started, the VP that forked: mn_after_fork).
 * Every UT has TLS of its own from here (a UT moves between kernel
 * threads; its thread block moves with it and names the VP it runs on:
 * tls.c), glibc is told that threads exist, and each VP's first kernel
 * thread is a spare handed that VP (kthread.c's carry), which it then
 * carries like any carrier.
 */
void __weft_mn_start(void)
{
	struct weft_proc *proc = &__weft_proc;
	if (!__weft_mn || proc->mn.started)
		return;
	proc->mn.started = true;
	proc->mn.poll_owner = -1;
	__weft_tls_takeover_turn_on();
	/* The running UT (main) keeps the first kernel thread's own block,
	 * and may move to another VP while that thread idles on VP 0: the
	 * idle context and the home must not share a thread block with a UT
	 * that runs elsewhere at the same time.  (A fork's child did this
	 * in its parent: the forking kernel thread's home is apart.) */
	struct vp *v0 = __weft_vp();
	if (v0 == &__weft_vps[0])
		__weft_kt0_tcb_apart();
	__weft_kt_multiple_threads_on();
	__weft_local_queues_on(v0);       /* sets v0's mn_local, copied below */
	sigset_t kmask;
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&kmask, 8, 0, 0);
	for (unsigned i = 0; i < proc->nvps; i++) {
		struct vp *vp = &__weft_vps[i];
		if (vp == v0)
			continue;
		vp->index = i;
		/* debug_pick, trace_on, tp_on, cpu_acct, mn_local; not noswitch_set */
		vp->switch_care = v0->switch_care & ~(uint64_t)0xff;
		vp->sched_debug = v0->sched_debug;
		vp->preempt_on = v0->preempt_on;
		vp->sig_kmask = v0->sig_kmask;
		vp->prog_mask = kmask;
		vp->errnop = &vp->errno_sink;
		vp->in_weft = 1;
		vp->gone = false;
		struct kt *k = __weft_kt_spare_get();
		if (!k) {
			/* out of memory, threads or WEFT_MAX_KTHREADS: the VPs
			 * that run are the VPs there are */
			__weft_warn("weft: %u of %u virtual processors run: no kernel thread for the others",
				    i, proc->nvps);
			proc->nvps = i;
			return;
		}
		__weft_kt_give_vp(k, vp);
	}
}

/* ---- idle VPs --------------------------------------------------------------- */

static void wake_vp(struct vp *v)
{
	v->woken = 1;
	__weft_proc.mn.waking++;
	__atomic_add_fetch(&v->wake, 1, __ATOMIC_SEQ_CST);
	futex(&v->wake, FUTEX_WAKE, 1);
	const struct weft_poller *poller = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
	if (poller && __weft_proc.mn.poll_owner == (int)v->index)
		poller->wake(v);
}

/* Wake one sleeping VP if work waits that no VP is already going to take. */
static bool wake_one(const struct vp *self)
{
	struct weft_proc *proc = &__weft_proc;
	if (proc->mn.spinning || proc->mn.nidle <= proc->mn.waking)
		return false;
	for (unsigned i = 0; i < proc->nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (v != self && v->idle && !v->woken && !v->gone) {
			wake_vp(v);
			return true;
		}
	}
	return false;
}

/* The running priority of v, or -1 when it runs no UT (idle, choosing,
 * or handed on in transit: it will choose). */
static int running_prio(const struct vp *v)
{
	const struct ut *c = v->cur;
	if (v->gone || v->idle || !c || c == &v->idle_ut || c->state != UT_RUNNING || c->guest_kt)
		return -1;
	return c->prio;
}

unsigned __weft_mn_running_elsewhere(const struct vp *self)
{
	unsigned n = 0;
	for (unsigned i = 0; i < __weft_proc.nvps; i++)
		if (&__weft_vps[i] != self && running_prio(&__weft_vps[i]) >= 0)
			n++;
	return n;
}

/* The VP running the lowest priority below `below`, counting `self` at
 * its own cur's priority; NULL if none runs that low. */
static struct vp *lowest_below(struct vp *self, int below, bool count_self)
{
	struct vp *low = NULL;
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		int p = v != self ? running_prio(v) : count_self && self->cur ? self->cur->prio : -1;
		if (p >= 0 && p < below) {
			below = p;
			low = v;
		}
	}
	return low;
}

struct vp *__weft_mn_lower_vp(struct vp *self)
{
	return lowest_below(self, self->cur ? self->cur->prio : 0, false);
}

void __weft_mn_kick(struct vp *v)
{
	if (v->kicked)
		return;
	v->kicked = 1;
	__weft_preempt_kick(v);
}

void __weft_mn_readied(struct ut *t)
{
	struct vp *self = __weft_vp();
	if (wake_one(self) || __weft_proc.mn.spinning)
		return;
	/* every VP runs a UT: t takes the processor of the lowest-priority
	 * one it outranks; when that is this VP's, the caller's preemption
	 * check does it */
	struct vp *low = lowest_below(self, t->prio, true);
	if (low && low != self)
		__weft_mn_kick(low);
}

/*
 * A VP's inbox is drained by its carrier (handoff.c); under M:N no monitor
 * takes a VP whose carrier sits in a call Weft does not know blocks
 * (docs/mn.md), and a UT or a guest queued on that VP's inbox would wait
 * for the call to end (a guest queues on the VP it last carried, whose
 * carrier may be joining that very guest's kernel thread).  So every VP
 * also drains the others' inboxes when it idles and at its tick: such work
 * runs on whichever VP looks first.  Held lock; the inbox is a stack that
 * any number of VPs may empty (each exchange takes a disjoint list), and
 * the counts it settles (offvp) are those of the VP it was queued on.
 */
void __weft_mn_inboxes_take(struct vp *self)
{
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (v != self && __atomic_load_n(&v->inbox, __ATOMIC_RELAXED))
			__weft_inbox_drain_slow(v);
	}
}

/* Something was queued on an inbox from off every VP (a guest): a running
 * VP sees it at its next safe point, an idle one wakes (any of them may
 * take it). */
void __weft_mn_kick_all(void)
{
	for (unsigned i = 0; i < __weft_proc.nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (!v->gone)
			__weft_preempt_kick(v);
	}
}

void __weft_mn_wake_idle(void)
{
	wake_one(__weft_vp());
}

void __weft_mn_sleep_begin(struct vp *vp)
{
	(void)vp;
	if (!__weft_mn)
		return;
	__weft_proc.mn.nidle++;
	__weft_rtl_unlock();
}

void __weft_mn_sleep_end(struct vp *vp)
{
	if (!__weft_mn)
		return;
	__weft_rtl_lock_prompt();
	__weft_proc.mn.nidle--;
	if (vp->woken) {
		vp->woken = 0;
		__weft_proc.mn.waking--;
	}
}

bool __weft_mn_inboxes_hold(const struct vp *self)
{
	(void)self;                       /* every VP's inbox, its own among them */
	for (unsigned i = 0; i < __weft_proc.nvps; i++)
		if (__atomic_load_n(&__weft_vps[i].inbox, __ATOMIC_RELAXED))
			return true;
	return false;
}

bool __weft_mn_spin(struct vp *vp)
{
	struct weft_proc *proc = &__weft_proc;
	proc->mn.spinning++;
	__weft_rtl_unlock();
	int64_t until = __weft_now() + SPIN_NS;
	bool work = false;
	do {
		for (int i = 0; i < 64; i++) {
			if (__atomic_load_n(&__weft_rq.nready, __ATOMIC_RELAXED) || __weft_mn_inboxes_hold(vp) ||
			    vp->signals) {
				work = true;
				break;
			}
			__builtin_ia32_pause();
		}
	} while (!work && __weft_now() < until);
	__weft_rtl_lock_prompt();
	proc->mn.spinning--;
	return work;
}

/*
 * An idle VP has found level-0 work, and all of it is one UT on the list
 * of a VP that is running a UT: most likely that running UT has just made
 * it ready (a hand-off, a ping-pong, a wake-up before a wait) and its VP
 * runs it next, on warm caches, once the waker parks.  Stealing it at once
 * moved every such pair across the VPs (mn_mutex_handoff and
 * mn_cond_pingpong 10 to 40% slower once idle VPs took the lock without
 * backing off: __weft_rtl_lock_prompt).  So the idle VP gives the owner a
 * grace (Go's thieves give a P's runnext 3 us): it lets the lock go and
 * waits, for GRACE_NS at most, until that VP switches or the UT is taken,
 * and then looks again; true when it waited (the caller looks again, and
 * takes what is still there: one grace per idle spell).  Several UTs
 * waiting (a poller's VP that made four ready at once) are taken at once,
 * as is one on an idle VP's list.  Held lock; the reads of the other VP's
 * switch count and of nlocal while the lock is let go are hints.
 */
#define GRACE_NS 5000

bool __weft_mn_grace(struct vp *vp)
{
	if (vp->lq_n || __weft_rq.nlocal != 1)
		return false;
	struct vp *owner = NULL;
	for (unsigned i = 0; i < __weft_proc.nvps; i++)
		if (__weft_vps[i].lq_n)
			owner = &__weft_vps[i];
	if (!owner || owner->idle || !owner->cur || owner->gone)   /* not vp: its list is empty */
		return false;
	uint64_t sw = __atomic_load_n(&owner->stat.switches, __ATOMIC_RELAXED);
	__weft_rtl_unlock();
	int64_t until = __weft_now() + GRACE_NS;
	while (__atomic_load_n(&owner->stat.switches, __ATOMIC_RELAXED) == sw &&
	       __atomic_load_n(&__weft_rq.nlocal, __ATOMIC_RELAXED) != 0 && __weft_now() < until) {
		for (int i = 0; i < 32; i++)
			__builtin_ia32_pause();
	}
	__weft_rtl_lock_prompt();
	return true;
}

bool __weft_mn_all_idle(void)
{
	struct weft_proc *proc = &__weft_proc;
	if (proc->mn.spinning)
		return false;
	for (unsigned i = 0; i < proc->nvps; i++) {
		struct vp *v = &__weft_vps[i];
		if (v->offvp || v->inbox)
			return false;
		if (v != __weft_vp() && !v->gone && !v->idle)
			return false;
	}
	return true;
}

void __weft_mn_after_fork(struct vp *vp)
{
	struct weft_proc *proc = &__weft_proc;
	if (!__weft_mn)
		return;
	/* glibc's fork: the caller runs no Weft code (its atfork handler is
	 * here), and the lock may have been another VP's in the parent */
	__weft_rtl.word = vp->in_weft ? 1 : 0;
	__weft_rtl.starving = NULL;
	proc->mn.nidle = proc->mn.waking = proc->mn.spinning = 0;
	proc->mn.poll_owner = -1;
	/* A parent that never started its other VPs leaves them to the
	 * child's own start (its first second UT): none is gone.  One that
	 * did leaves the child the forking VP alone: the others' kernel
	 * threads do not exist there, and what they ran is gone (fork.c).
	 * They start again, as in a new process, when the child makes its
	 * next UT (__weft_mn_start), each on a kernel thread of the child's;
	 * until then they are as never started: no carrier, no identity
	 * (tp0: the monitor's "started" test; VP 0 keeps its, below),
	 * nothing queued. */
	if (!proc->mn.started)
		return;
	proc->mn.started = false;
	/* The forking VP's identity (tp0, self0: glibc's thread for its UTs)
	 * is its first kernel thread's block.  If a spare carried the VP when
	 * it forked, that kernel thread is not in the child, and glibc's fork
	 * gave its block back to glibc's cache (its tid zeroed): the child's
	 * next kernel thread may get it, and with it the identity of this
	 * VP's UTs.  The identity moves to the kernel thread that forked,
	 * whose block glibc keeps for it; the caller's own block names it
	 * (vp.c, __weft_tls_fork_child).  VP 0's identity is the main UT's
	 * block, which glibc never gives to another thread. */
	struct kt *k = vp->carrier;
	if (vp != &__weft_vps[0] && k && k->tp && k->tp != vp->tp0) {
		vp->tp0 = k->tp;
		vp->self0 = k->tp;            /* glibc's TCB is its struct pthread */
	}
	for (unsigned i = 0; i < proc->nvps; i++) {
		struct vp *v = &__weft_vps[i];
		__atomic_store_n(&v->inbox, NULL, __ATOMIC_RELAXED);  /* its UTs are gone */
		if (v == vp)
			continue;
		v->gone = true;
		v->idle = 0;
		v->woken = 0;
		v->kicked = 0;
		v->tid = 0;
		v->carrier = NULL;
		/* its next first kernel thread is the identity of its UTs —
		 * but for VP 0, whose identity is the process's first thread
		 * block, the main UT's own (tls.c; libc_cancel.c arms there):
		 * glibc never gives that block to another thread */
		if (i != 0) {
			v->tp0 = NULL;
			v->self0 = NULL;
		}
		v->offvp = 0;
		v->take = 0;
		v->tick_mode = TICK_OFF;
		v->exiting = NULL;
		v->hand_to = NULL;
		v->cancel_armed = 0;
		v->dispatch_pending = 0;
		v->async_cancel = 0;
		v->signals = 0;
		v->sig_hold = 0;
		v->deferred.pending = 0;          /* the child's pending set is empty */
		v->noswitch.lo = v->noswitch.sp = 0;
		v->noswitch.ut = NULL;
		v->noswitch_set = 0;
		__weft_cur_set(v, NULL);
	}
}

/* ---- system calls without the lock ------------------------------------------ */

/*
 * rt.h, __weft_try_syscall6.  Let go of the lock as a call out of Weft
 * does (in_weft cleared: a tick or a signal meanwhile finds the PC in
 * Weft's text and is deferred to the call's epilogue, as over any of
 * Weft's code; the monitor takes no VP whose carrier is in Weft's text),
 * and take it back as the call's entry did.  The UT stays RUNNING on this
 * VP throughout: nothing switches it, since nothing it runs can.
 */
long __weft_mn_try_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	if (!__weft_mn_may_let_go(vp, self))
		return __weft_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
	__weft_outcall_begin(vp);
	long r = __weft_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
	__weft_outcall_end();
	return r;
}

/* ---- public ------------------------------------------------------------------ */

EXPORT int weft_vps_set(unsigned n)
{
	__weft_ensure();
	return __weft_mn_set_vps(n);
}
