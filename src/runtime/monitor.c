/*
 * monitor.c — blocking that Weft did not see coming: the monitor that
 * takes the VP from a kernel thread sitting in the kernel in code Weft did
 * not wrap, and the way back of that kernel thread.
 *
 * Owns: the monitor thread; vp->take (with the carrier's vp->in_weft); the
 * slow answer to "does this kernel thread carry the VP?" that every entry
 * into Weft asks (rt.h, __weft_where); the away UTs' return path.
 *
 * The protocol (docs/architecture.md, "Unknown blocking", argues it):
 *   The monitor, every WEFT_BLOCK_THRESHOLD: it samples the carrier K from
 *     /proc (state, and the system call it sits in, with its PC and SP).
 *     Two samples alike — asleep in the kernel (S or D), the same call at
 *     the same PC and SP, the VP's switch count unchanged, not idle, not in
 *     Weft's code (in_weft clear, the PC outside Weft's text), no program
 *     handler over protected code, not a vfork's parent (in_vfork) — and
 *     the process does not trace (a tracer keeps its carriers: rt.h,
 *     __weft_carriers_pinned, read relaxed before each takeover) —, and
 *     it decides: take |= TAKE_BUSY
 *     (every entry now goes the slow way, and the slow way waits while
 *     BUSY), a full fence, and a third sample that must still be alike,
 *     read before it looks at in_weft.  K was then in the kernel after
 *     BUSY was visible everywhere: whatever K runs when it comes back, its
 *     first entry into Weft sees take != 0.  The monitor now holds the VP,
 *     no carrier runs: it marks K's UT X away (BLOCKED, WAIT_SYSCALL, off
 *     the VP), disarms K's timers, gives UTs TLS of their own if they had
 *     none (K goes on with the first kernel thread's block, the others get
 *     theirs), clears BUSY and counts X in take, and hands the VP to a
 *     spare.  If a check fails it clears BUSY and leaves K the VP.
 *   K, back from the kernel, runs X's code (what a program can observe:
 *     X runs beside the VP until it next enters Weft).  Its first entry —
 *     an exported call, a return from a call out into the program, or the
 *     fake call that the monitor's kick provokes once K is seen running —
 *     finds itself away (__weft_where_slow), and __weft_away_return
 *     switches to K's home, which queues X on the VP's inbox and parks K
 *     as a spare.  X runs again when the VP chooses it, on whichever
 *     kernel thread carries the VP then.
 *   The carrier, draining the inbox, clears X's away mark and takes one
 *     from take; at zero, entries take the fast path again.
 * A kernel thread never runs Weft's code without the VP: before the
 * decision it still carries it; after, it finds take != 0 and asks.
 * While every VP is idle the monitor sleeps without a period, until a VP
 * leaves idle or starts (monitor_sleep; rt.h, __weft_monitor_parked).
 *
 * Descriptors: the monitor opens /proc files every period, and an open
 * takes the lowest free number, which a program may count on getting
 * next.  So the monitor works in a descriptor table of its own, emptied
 * (close_range with CLOSE_RANGE_UNSHARE), and the spares a takeover needs
 * are made by its spawner, a second thread of the monitor's, made with it
 * by the same hand, that stays in the program's table (a thread shares
 * its maker's).
 *
 * Async readers: the monitor reads vp->tid, idle, in_weft, rtl_waiting,
 * kept_call, noswitch_set, cur, carrier, take, tp0, gone and the switch count without
 * the VP, only to decide whether to look closer or to park (rtl_waiting,
 * rt.h, as a hint only), and for its retirement also
 * inbox, the create count and proc.live (every
 * decision is re-checked after the fence); it writes runtime state only
 * between a successful check and the handoff, while K sleeps in the kernel
 * and nobody else carries the VP.  Any kernel thread reads take.  Of an
 * away UT it reads csys_tid and the cancel bits (a byte pthread_cancel
 * sets before it reads csys_tid), only to repeat a cancel kick.  Every
 * carrier reads __weft_monitor_parked after it leaves idle, and clears it
 * by exchange (the one that clears it wakes the monitor).
 */
#include "rt.h"
#include "../arch/valgrind_req.h"
#include "../arch/arch.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* Set once the monitor runs or cannot ever run: the create path's test. */
bool __weft_monitor_settled;

/* The monitor's own state.  Written by the monitor, and by its starter
 * before it runs; a monitor after a retired one takes it over (the start
 * lock orders them). */
static struct {
	bool started;
	unsigned attempts;
	bool can_retire;                 /* the thread may end, and membarrier has not failed */
	uint64_t alone_since;            /* monotonic ns; 0: not alone at the last look */
	uint64_t created_seen;           /* the VP's creates at the last look */
	uint64_t retired_at;             /* monotonic ns of the last retirement */
	volatile uint32_t wake;          /* futex: the monitor's sleep; bumped by an unpark */
	uint64_t period_ns;
} mon;

/* rt.h says who reads and writes it: the monitor sets it, seq_cst, and
 * clears it when it wakes; a VP leaving idle or starting clears it by
 * exchange and wakes the monitor. */
uint32_t __weft_monitor_parked;

void __weft_monitor_unpark(void)
{
	if (__atomic_exchange_n(&__weft_monitor_parked, 0, __ATOMIC_ACQ_REL)) {
		__atomic_fetch_add(&mon.wake, 1, __ATOMIC_RELEASE);
		__weft_raw_syscall6(SYS_futex, (long)&mon.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
	}
}

/* True on the monitor's own kernel thread only (its TLS; every other
 * thread, UTs included, reads false).  Initial-exec: read at a fixed
 * offset from the thread pointer, never through __tls_get_addr, which
 * ASan intercepts and answers with its record of the thread, found by
 * pthread_getspecific, which comes back here: a program built with
 * -fsanitize=address on libweft.so (or under weftrun) recursed until its
 * stack ran out, at its first call. */
static __thread bool on_monitor __attribute__((tls_model("initial-exec")));

bool __weft_on_monitor(void)
{
	return on_monitor;
}

/* What /proc says a kernel thread is doing. */
struct sample {
	bool asleep;                     /* S or D: in the kernel, off the CPU */
	long nr;                         /* the system call it sits in, -1 none */
	unsigned long a1;                /* its first argument (clone's flags) */
	uintptr_t sp, pc;
};

/* ---- /proc, with raw system calls only (no wrapper of Weft's) ---------- */

static ssize_t read_task(pid_t tid, const char *leaf, char *buf, size_t cap)
{
	char path[64] = "/proc/self/task/";
	size_t n = strlen(path);
	char digits[16];
	int d = 0;
	for (unsigned v = (unsigned)tid; d == 0 || v; v /= 10)
		digits[d++] = (char)('0' + v % 10);
	while (d)
		path[n++] = digits[--d];
	path[n++] = '/';
	size_t l = strlen(leaf);
	memcpy(path + n, leaf, l + 1);
	long fd = __weft_raw_syscall6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -1;
	long r = __weft_raw_syscall6(SYS_read, fd, (long)buf, (long)cap - 1, 0, 0, 0);
	__weft_raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return r;
}

static bool sample(pid_t tid, struct sample *s)
{
	char buf[512];
	memset(s, 0, sizeof *s);
	if (read_task(tid, "stat", buf, sizeof buf) <= 0)
		return false;
	/* "tid (comm) S ...": the name may hold anything, the state follows
	 * the last parenthesis */
	char *rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return false;
	s->asleep = rp[2] == 'S' || rp[2] == 'D';
	if (!s->asleep)
		return true;
	if (read_task(tid, "syscall", buf, sizeof buf) <= 0)
		return false;
	if (strncmp(buf, "running", 7) == 0) {
		s->asleep = false;
		return true;
	}
	/* "nr a1 .. a6 sp pc" in a call, "-1 sp pc" outside one */
	char *p = buf, *e;
	s->nr = strtol(p, &e, 10);
	if (e == p)
		return false;
	p = e;
	if (s->nr >= 0)
		for (int i = 0; i < 6; i++, p = e) {
			unsigned long a = strtoull(p, &e, 16);
			if (i == 0)
				s->a1 = a;
		}
	s->sp = (uintptr_t)strtoull(p, &e, 16);
	p = e;
	s->pc = (uintptr_t)strtoull(p, &e, 16);
	return e != p;
}

/* Asleep in Weft's own code, which the monitor leaves alone, unless it is
 * the takeable system call (takeable.S) or the cancellable one
 * (cancellable.S), which is takeable where its caller cleared in_weft
 * (handoff.c, __weft_takeable_cancellable; the blocking bracket's use of
 * it keeps in_weft set, and the decision requires it clear). */
static bool in_weft_code(uintptr_t pc)
{
	return __weft_pc_in_weft(pc) && pc != (uintptr_t)__weft_arch_takeable_ret &&
	       pc != (uintptr_t)__weft_arch_csys_end;
}

/* Asleep as the parent of a vfork: its child runs on this UT's stack, in
 * this process's memory, until it execs or exits, and the exec it makes
 * goes through Weft's wrapper (posix/exec.c), which reads the VP's
 * running UT for the mask the new image starts with.  Taking the VP
 * would give that VP to another UT under the child's feet (the image
 * started with that UT's mask: sig_exec_keeps_mask, a vfork child slower
 * than the monitor's two looks).  The wait ends when the child execs or
 * exits, as under NPTL, where the vfork also stops its thread only.
 * posix_spawn's clone3 child runs on a stack of its own and calls none
 * of Weft's entries: it may be taken. */
static bool in_vfork(const struct sample *s)
{
	return s->nr == SYS_vfork || (s->nr == SYS_clone && (s->a1 & CLONE_VFORK));
}

static bool alike(const struct sample *a, const struct sample *b)
{
	return a->asleep && b->asleep && a->nr == b->nr && a->sp == b->sp && a->pc == b->pc;
}

/* The program's signal mask on tid ("SigBlk:" in status), for the next
 * carrier: the VP carries the program's mask from one kernel thread to
 * the next.  A mask that blocks the tick's signal is not the program's
 * but libc's for a moment (posix_spawn, for one, blocks everything around
 * its clone): the VP keeps the mask it had then. */
static void read_mask(pid_t tid, sigset_t *m)
{
	char buf[2048];
	if (read_task(tid, "status", buf, sizeof buf) <= 0)
		return;
	char *p = strstr(buf, "SigBlk:");
	if (!p)
		return;
	unsigned long long bits = strtoull(p + 7, NULL, 16);
	int tick = __weft_tick_signal();
	unsigned long long classic = 0x7fffffffull & ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1)));
	if ((tick && (bits & (1ull << (tick - 1)))) || (bits & classic) == classic)
		return;
	sigemptyset(m);
	for (int s = 1; s <= 64; s++)
		if (bits & (1ull << (s - 1)))
			sigaddset(m, s);
}

/* ---- the decision -------------------------------------------------------- */

static void take_clear_busy(struct vp *vp, uint32_t add)
{
	uint32_t t = __atomic_load_n(&vp->take, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&vp->take, &t, (t & ~TAKE_BUSY) + add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED))
		;
}

/*
 * The monitor's spawner: a kernel thread of the monitor's own that stays
 * in the program's descriptor table (the monitor leaves it: monitor_main)
 * and makes spare kernel threads on the monitor's request, so that they
 * share the program's table too.  It runs only while the monitor holds
 * the VP in a takeover and waits for it; it is never a guest.
 */
/* Publication: the monitor writes req 1 (release) and waits; the spawner
 * writes made, then req 0 (release); the monitor reads made after it has
 * seen 0 (acquire).  Nobody else reads either.  req SPAWN_END: the
 * monitor retires, and the spawner answers 0 and ends. */
enum { SPAWN_ASK = 1, SPAWN_END = 2 };
static struct {
	volatile uint32_t req;           /* futex: SPAWN_ASK or SPAWN_END asked, 0 answered */
	struct kt *made;
	bool made_ok;                    /* the spawner exists (made with the monitor) */
	bool on;                         /* the monitor left the program's table: use it */
} spawn;

static void *spawner_main(void *arg)
{
	(void)arg;
	on_monitor = true;
	__weft_kt_word_claim();
	for (;;) {
		uint32_t req;
		while (!(req = __atomic_load_n(&spawn.req, __ATOMIC_ACQUIRE)))
			__weft_raw_syscall6(SYS_futex, (long)&spawn.req, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, 0, 0, 0);
		if (req == SPAWN_END) {
			/* the monitor retires (below): after the answer the
			 * spawner touches nothing of spawn's, which the next
			 * monitor's spawner may use at once */
			__weft_kt_glibc_thread_end();
			__atomic_store_n(&spawn.req, 0, __ATOMIC_RELEASE);
			__weft_raw_syscall6(SYS_futex, (long)&spawn.req, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
			return NULL;
		}
		spawn.made = __weft_kt_spare_for_monitor();
		__atomic_store_n(&spawn.req, 0, __ATOMIC_RELEASE);
		__weft_raw_syscall6(SYS_futex, (long)&spawn.req, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
	}
	return NULL;
}

/* A spare for a takeover: a parked one, else one the spawner makes (or,
 * without a spawner, which means the monitor shares the program's table,
 * one made here). */
static struct kt *kept_spare;     /* got for a takeover that backed off: the next one's */
/* A home stack got before a takeover's BUSY for a carrier that has none
 * yet (the VP's first kernel thread), kept until a takeover uses it. */
static struct ut_stack kept_home;

static void spawner_ask(uint32_t what)
{
	__atomic_store_n(&spawn.req, what, __ATOMIC_RELEASE);
	__weft_raw_syscall6(SYS_futex, (long)&spawn.req, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
	uint32_t v;
	while ((v = __atomic_load_n(&spawn.req, __ATOMIC_ACQUIRE)) != 0)
		__weft_raw_syscall6(SYS_futex, (long)&spawn.req, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, v, 0, 0, 0);
}

static struct kt *monitor_spare(void)
{
	if (kept_spare) {
		struct kt *k = kept_spare;
		kept_spare = NULL;
		return k;
	}
	struct kt *k = __weft_kt_spare_pop();
	if (k)
		return k;
	if (!spawn.on)
		return __weft_kt_spare_for_monitor();
	spawner_ask(SPAWN_ASK);
	return spawn.made;
}

static void take_over(struct vp *vp, pid_t tid, uint64_t switches, const struct sample *before)
{
	/* The spare first, before BUSY: making one is glibc's pthread_create,
	 * which may wait for a lock of libc's (malloc's arena) that K holds,
	 * and K's tick handler waits while BUSY is up (preempt.c): under BUSY
	 * that deadlocked tls_allocator_storm with WEFT_VPS=2, one run in 25.
	 * A spare got for a decision that backs off is kept for the next. */
	if (__atomic_load_n(&__weft_carriers_pinned, __ATOMIC_RELAXED))
		return;                   /* a tracer keeps its carriers (rt.h) */
	struct kt *to = monitor_spare();
	if (!to)
		return;
	/* K's home stack before BUSY too, for the same reason: getting one
	 * may map it and name it to LeakSanitizer (lsan_roots.c), whose lock
	 * K holds while it checks for leaks at exit; under BUSY that hung
	 * asan_leaks_kept_by_uts (K in its tick handler waiting for BUSY, the
	 * monitor in __lsan_register_root_region waiting for K).  Read
	 * racily: under BUSY the carrier is checked again below. */
	struct kt *k0 = __atomic_load_n(&vp->carrier, __ATOMIC_RELAXED);
	if (k0 && !__atomic_load_n(&k0->home.sp, __ATOMIC_RELAXED) && !kept_home.hi &&
	    __weft_kt_home_stack_get(&kept_home) != 0) {
		kept_spare = to;
		return;
	}
	uint32_t t = __atomic_load_n(&vp->take, __ATOMIC_RELAXED);
	if ((t & TAKE_BUSY) ||
	    !__atomic_compare_exchange_n(&vp->take, &t, t | TAKE_BUSY, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		kept_spare = to;
		return;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* K must still sleep in the same call now that BUSY is visible; only
	 * then are its stores (in_weft, cur, ...) visible to what follows */
	struct sample now;
	if (!sample(tid, &now) || !alike(before, &now))
		goto back_off;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	struct kt *k = vp->carrier;
	struct ut *x = vp->cur;
	if (__atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE) != tid || !k || k->tid != tid ||
	    vp->stat.switches != switches || vp->in_weft || vp->idle || vp->noswitch_set || !x ||
	    x == &k->home || x->state != UT_RUNNING || in_weft_code(now.pc) || vp->kept_call == KEPT_CALL_PLAIN)
		goto back_off;
	/* K goes home when it comes back: the VP's first kernel thread gets
	 * its home stack the first time, the one got above (nothing here
	 * may get one: BUSY) */
	if (!k->home.sp) {
		if (!kept_home.hi)
			goto back_off;
		__weft_kt_home_adopt(k, &kept_home);
		memset(&kept_home, 0, sizeof kept_home);
	}
	/* The VP is the monitor's until the spare takes it.  M:N: the other
	 * VPs read and write the runtime's shared state (X among it: a
	 * signal, a cancel, a priority change for it) under the runtime
	 * lock, so the monitor writes under it too; K holds it not (asleep
	 * outside Weft).  It never waits for the lock while it holds BUSY:
	 * K's tick handler waits for BUSY to clear, and K may hold a lock of
	 * libc's (malloc's arena, taken once K woke) that the lock's holder
	 * waits for (a pthread_create's calloc).  A busy lock backs the
	 * decision off; the next period looks again. */
	if (__weft_mn && !__weft_rtl_take_briefly(256))
		goto back_off;
	x->away = 1;
	WEFT_STATE(x, UT_BLOCKED);
	x->wait_kind = WAIT_SYSCALL;
	x->wait_obj = NULL;
	vp->offvp++;
	vp->stat.takeovers++;
	read_mask(tid, &vp->prog_mask);
	__weft_tls_takeover_turn_on();
	__weft_kt_multiple_threads_on();
	/* x may go on with the first kernel thread's own block (it ran on it
	 * without TLS of its own): that thread's home must then use another,
	 * K's too when K is the first kernel thread — it goes home, and x
	 * goes on on that block on the next carrier */
	if (x->tp == vp->tp0)
		__weft_kt0_tcb_apart();
	__weft_preempt_release(k);
	__atomic_store_n(&k->away, x, __ATOMIC_RELEASE);
	__weft_cur_set(vp, NULL);
	__atomic_store_n(&vp->tid, 0, __ATOMIC_RELEASE);
	take_clear_busy(vp, 1);
	if (__weft_mn)
		__weft_rtl_unlock();              /* the spare takes it with the VP */
	__weft_kt_give_vp(to, vp);
	return;
back_off:
	kept_spare = to;
	take_clear_busy(vp, 0);
}

/* A kernel thread away from the VP that runs again (not asleep in the call
 * it was taken in) but has not entered Weft: the tick's signal sends it
 * home at its next safe point (preempt.c, __weft_preempt_away). */
static void kick_one(struct kt *k)
{
	struct sample s;
	struct ut *x = __atomic_load_n(&k->away, __ATOMIC_ACQUIRE);
	if (!x)
		return;
	/* its UT cancelled while in a cancellable call (handoff.c): the kick
	 * again, every period, in case pthread_cancel's own was merged with
	 * a tick's signal pending on k (one signal number, not queued) */
	if (__weft_cancel_due(x) && (__atomic_load_n(&x->csys_tid, __ATOMIC_ACQUIRE) == k->tid ||
				     __weft_tls_glibc_marked(x->tp)))
		__weft_preempt_cancel_kick(k->tid);
	if (sample(k->tid, &s) && !s.asleep)
		__weft_preempt_kick_away(k);
}

static void kick_away(struct vp *vp)
{
	if (TAKE_AWAY_COUNT(__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE)))
		__weft_kt_each(kick_one);
}

/* What the monitor saw of one VP at its last look. */
struct watch {
	struct sample last;
	pid_t tid;
	uint64_t switches;
	bool have;
};

/* The last look at every VP (M:N: those not started yet have no carrier,
 * tid 0).  The monitor's. */
static struct watch watch[WEFT_VPS_MAX];

/* M:N: has a VP other than vp started (had a carrier: its tp0 is set once,
 * kthread.c's take_vp), and not gone?  Not its tid, which is 0 for the
 * instant of every handoff. */
static bool another_vp_started(const struct vp *vp)
{
	unsigned n = __atomic_load_n(&__weft_proc.nvps, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++) {
		const struct vp *o = &__weft_vps[i];
		if (o != vp && !o->gone && __atomic_load_n(&o->tp0, __ATOMIC_ACQUIRE) != NULL)
			return true;
	}
	return false;
}

/* One look at vp: a takeover when its carrier sat in the same unwrapped
 * call at this look and the last. */
static void look(struct vp *vp, struct watch *w)
{
	kick_away(vp);
	pid_t tid = __atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE);
	uint64_t switches = __atomic_load_n(&vp->stat.switches, __ATOMIC_RELAXED);
	struct sample s;
	/* nobody else to run: neither a second UT nor a request waiting on
	 * an inbox (a foreign thread's, a UT's back from the kernel) */
	bool alone = __atomic_load_n(&__weft_proc.live, __ATOMIC_RELAXED) < 2 &&
		     !__atomic_load_n(&vp->inbox, __ATOMIC_ACQUIRE);
	if (tid == 0 || vp->idle || vp->in_weft || vp->rtl_waiting || alone ||
	    vp->kept_call == KEPT_CALL_PLAIN || !sample(tid, &s) || !s.asleep || in_weft_code(s.pc) ||
	    in_vfork(&s)) {
		w->have = false;
		return;
	}
	/* M:N: a futex wait inside libc is, on a carrier, almost always a
	 * wait for glibc's own lock (stdio's, the loader's) held by another
	 * VP's UT — glibc names a VP's UTs as one thread (tls.c, rehome).
	 * Taking that VP would let its next UT in while the sleeper, once
	 * woken, runs the lock's critical section away from the VP under the
	 * same name: two kernel threads inside one FILE (the lock's count
	 * went to -1 and mn_stdio_putc_locked hung).  Such a wait ends when
	 * the other VP's UT unlocks, so the VP waits, as in stage 1 — when
	 * another VP is carried: it runs the rest meanwhile, and takes what
	 * was queued on this one (mn.c, inbox stealing).  With no other VP
	 * started yet (one UT, waiting in glibc's pthread_join for a foreign
	 * thread that needs a VP to end) it is taken as in M:1. */
	if (__weft_mn && s.nr == SYS_futex && another_vp_started(vp)) {
		w->have = false;
		return;
	}
	if (w->have && tid == w->tid && switches == w->switches && alike(&w->last, &s)) {
		take_over(vp, tid, switches, &s);
		w->have = false;
		return;
	}
	w->have = true;
	w->last = s;
	w->tid = tid;
	w->switches = switches;
}

/* Nothing for the monitor to watch: every VP that ever ran is idle (its
 * carrier waits in Weft's idle loop, in the kernel or about to be), none
 * is between two carriers, and no kernel thread is away (take: an away
 * one may need a kick).  A VP that never started is left out: its start
 * unparks the monitor (kthread.c, take_vp).  Read without the VPs, as
 * look() reads; the caller looks twice, around its store of the flag. */
static bool quiet(void)
{
	unsigned n = __atomic_load_n(&__weft_proc.nvps, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++) {
		const struct vp *vp = &__weft_vps[i];
		if (vp->gone)
			continue;
		if (__atomic_load_n(&vp->take, __ATOMIC_SEQ_CST) != 0)
			return false;
		if (__atomic_load_n(&vp->tid, __ATOMIC_SEQ_CST) == 0) {
			if (__atomic_load_n(&vp->tp0, __ATOMIC_SEQ_CST) != NULL)
				return false;     /* between two carriers */
			continue;                 /* never started */
		}
		if (!__atomic_load_n(&vp->idle, __ATOMIC_SEQ_CST))
			return false;
	}
	return true;
}

/* The monitor's sleep until its next look: one period, or — while every
 * VP is idle — until a VP leaves idle or starts.  Go's sysmon does the
 * same (sysmonwait while every P is idle): an idle process must not wake
 * a thousand times a second.  The flag is stored before the second look,
 * a VP stores its state before it reads the flag (rt.h): either the
 * second look sees the VP busy, or the VP sees the flag and wakes. */
static void monitor_sleep(uint64_t retire_in_ns)
{
	struct timespec ts = { (time_t)(mon.period_ns / 1000000000u), (long)(mon.period_ns % 1000000000u) };
	const struct timespec *tp = &ts;
	bool parked = false;
	uint32_t seen = __atomic_load_n(&mon.wake, __ATOMIC_ACQUIRE);
	if (quiet()) {
		__atomic_store_n(&__weft_monitor_parked, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (quiet()) {
			parked = true;
			/* alone: until the retirement is due (below), no longer */
			ts = (struct timespec){ (time_t)(retire_in_ns / 1000000000u),
						(long)(retire_in_ns % 1000000000u) };
			tp = retire_in_ns ? &ts : NULL;
		} else {
			__atomic_store_n(&__weft_monitor_parked, 0, __ATOMIC_RELAXED);
		}
	}
	__weft_raw_syscall6(SYS_futex, (long)&mon.wake, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, (long)tp, 0, 0);
	if (parked) {
		/* woken (the waker cleared the flag), timed out, or a spurious return */
		__atomic_store_n(&__weft_monitor_parked, 0, __ATOMIC_RELAXED);
	}
}

/* The start lock: see __weft_monitor_start, below. */
static uint32_t start_lock;

static void start_lock_take(void)
{
	while (__atomic_exchange_n(&start_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static void start_lock_give(void)
{
	__atomic_store_n(&start_lock, 0, __ATOMIC_RELEASE);
}

/* ---- retirement ------------------------------------------------------------
 * A process of NPTL's that is down to one thread is one kernel thread
 * again, and programs count on it: /proc/self/task has one entry (glibc's
 * support_wait_for_thread_exit waits for that), and unshare(CLONE_NEWUSER)
 * refuses a process with several.  So the monitor and its spawner end once
 * the process has been alone for RETIRE_NS, and the next create (or a
 * foreign thread's first call) starts them again, as the first time
 * (__weft_monitor_start).  RETIRE_NS keeps a program that creates a
 * thread now and then from paying two kernel threads' start (about 100 us)
 * more than once per RETIRE_NS.
 *
 * Alone: M:1 (M:N's other VPs keep their kernel threads), one UT
 * (proc.live < 2) and none made since the last look (unless asked), no
 * request on the VP's inbox, no kernel thread away
 * (take == 0), no spare kept, and the process has no kernel thread but
 * the first, the monitor and the spawner (/proc/self/status: a spare, a
 * foreign thread or a helper of a library's keeps the process
 * multithreaded anyway, and may need the monitor).  All read without the
 * VP, as look() reads; they only propose, the decision looks again.
 *
 * The race with a start.  A create writes proc.live, then reads settled
 * (lifecycle.h; only a compiler barrier between); a foreign thread's
 * first call reads settled, and its kernel thread exists before it does.
 * The monitor, holding the start lock, writes settled false, then calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full fence on every
 * thread of the process that runs meanwhile (one that does not run has
 * passed the kernel's own), which makes the carrier's pair of plain
 * accesses a fenced one without a fence on the create path (the
 * asymmetric fence of userspace RCU).  Then it looks again.  Either the
 * create's read of settled came after the fence and saw false, and it
 * starts a monitor (waiting for the start lock until this one has ended
 * or stayed), or its write of live came before, and the look sees two
 * UTs: the monitor stays and writes settled true again.  A foreign thread
 * that read true exists, and the count of kernel threads sees it.
 * Without membarrier (before Linux 4.14, a seccomp filter) or glibc's
 * pthread_detach, and in the sanitizer builds (kthread.c), the monitor
 * never ends.
 */
#define RETIRE_NS (50ull * 1000000u)


static uint64_t mono_ns(void)
{
	struct timespec ts;
	if (__weft_raw_syscall6(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The process's kernel threads (/proc/self/status), -1 unknown. */
static long kernel_threads(void)
{
	char buf[2048];
	long fd = __weft_raw_syscall6(SYS_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY | O_CLOEXEC,
				      0, 0, 0);
	if (fd < 0)
		return -1;
	long r = __weft_raw_syscall6(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
	__weft_raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	char *p = strstr(buf, "\nThreads:");
	if (!p)
		return -1;
	char *e;
	long n = strtol(p + 9, &e, 10);
	return e == p + 9 ? -1 : n;
}

static bool alone(bool asked)
{
	if (__weft_mn || __atomic_load_n(&__weft_proc.nvps, __ATOMIC_RELAXED) != 1)
		return false;
	const struct vp *vp = &__weft_vps[0];
	/* a thread made since the last look, even one already gone: a
	 * program that makes threads now and then at a high rate is not
	 * alone (it would pay a monitor's start each time it makes one) */
	uint64_t created = __atomic_load_n(&vp->stat.created, __ATOMIC_RELAXED);
	if (created != mon.created_seen) {
		mon.created_seen = created;
		if (!asked)
			return false;
	}
	if (__atomic_load_n(&__weft_proc.live, __ATOMIC_SEQ_CST) >= 2 ||
	    __atomic_load_n(&vp->inbox, __ATOMIC_SEQ_CST) != NULL ||
	    __atomic_load_n(&vp->take, __ATOMIC_SEQ_CST) != 0 || kept_spare)
		return false;
	return kernel_threads() == 2 + (spawn.made_ok ? 1 : 0);
}

/* A retirement asked for now (__weft_monitor_retire_now): ASK_NOW by the
 * asker, then the monitor's answer, ASK_DONE (it has ended) or ASK_STAYED,
 * a futex word the asker waits on.  Written by the asker (release) and by
 * the monitor (release, after its last write of mon and spawn); read by
 * the monitor after each look. */
enum { ASK_NONE, ASK_NOW, ASK_DONE, ASK_STAYED };
static volatile uint32_t retire_ask;

static void answer_ask(uint32_t how)
{
	if (__atomic_load_n(&retire_ask, __ATOMIC_ACQUIRE) != ASK_NOW)
		return;
	__atomic_store_n(&retire_ask, how, __ATOMIC_RELEASE);
	__weft_raw_syscall6(SYS_futex, (long)&retire_ask, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
}

/* After a look: true if the monitor has retired (its caller returns). */
static bool retire(void)
{
	bool asked = __atomic_load_n(&retire_ask, __ATOMIC_ACQUIRE) == ASK_NOW;
	if (!mon.can_retire || !alone(asked)) {
		mon.alone_since = 0;
		answer_ask(ASK_STAYED);
		return false;
	}
	uint64_t now = mono_ns();
	if (!asked) {
		if (!mon.alone_since) {
			mon.alone_since = now ? now : 1;
			return false;
		}
		if (now - mon.alone_since < RETIRE_NS)
			return false;
	}
	mon.alone_since = 0;
	/* registered here, not at the start: the first registration waits
	 * for an RCU grace period (12 ms here), which would hold back the
	 * monitor's first look; again, it returns at once (and a fork's
	 * child, whose process is new, registers afresh) */
	if (__weft_raw_syscall6(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) != 0) {
		mon.can_retire = false;
		answer_ask(ASK_STAYED);
		return false;
	}
	start_lock_take();
	__atomic_store_n(&__weft_monitor_settled, false, __ATOMIC_SEQ_CST);
	if (__weft_raw_syscall6(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) != 0 ||
	    !alone(asked)) {
		__atomic_store_n(&__weft_monitor_settled, true, __ATOMIC_RELEASE);
		start_lock_give();
		answer_ask(ASK_STAYED);
		return false;
	}
	if (spawn.made_ok)
		spawner_ask(SPAWN_END);
	spawn.made_ok = false;
	spawn.on = false;
	mon.started = false;
	mon.attempts = 0;
	mon.retired_at = mono_ns();
	__weft_kt_glibc_thread_end();
	start_lock_give();
	answer_ask(ASK_DONE);
	return true;
}

bool __weft_monitor_retire_now(void)
{
	if (__weft_mn || __atomic_load_n(&__weft_proc.live, __ATOMIC_RELAXED) >= 2)
		return false;
	start_lock_take();
	bool running = mon.started;
	/* a monitor that has just retired may not have ended yet */
	uint64_t now = mono_ns();
	bool ending = !running && mon.retired_at && now - mon.retired_at < 1000000000u;
	if (running)
		__atomic_store_n(&retire_ask, ASK_NOW, __ATOMIC_RELEASE);
	start_lock_give();
	if (running) {
		__atomic_fetch_add(&mon.wake, 1, __ATOMIC_RELEASE);
		__weft_raw_syscall6(SYS_futex, (long)&mon.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
		uint32_t v;
		while ((v = __atomic_load_n(&retire_ask, __ATOMIC_ACQUIRE)) == ASK_NOW)
			__weft_raw_syscall6(SYS_futex, (long)&retire_ask, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, v, 0, 0, 0);
		__atomic_store_n(&retire_ask, ASK_NONE, __ATOMIC_RELAXED);
		if (v != ASK_DONE)
			return false;
	} else if (!ending) {
		return false;
	}
	/* the two threads have returned from their routines: wait (at most
	 * 100 ms) until the kernel has ended them as well */
	const struct timespec pause = { 0, 50000 };
	for (int i = 0; i < 2000; i++) {
		if (kernel_threads() == 1)
			return true;
		__weft_raw_syscall6(SYS_nanosleep, (long)&pause, 0, 0, 0, 0, 0);
	}
	return false;
}

/* How long the monitor may sleep while every VP is idle: until its
 * retirement is due if it is alone, else without end (0). */
static uint64_t retire_in(void)
{
	if (!mon.alone_since)
		return 0;
	uint64_t now = mono_ns(), due = mon.alone_since + RETIRE_NS;
	return now < due ? due - now : 1;
}

static void *monitor_main(void *arg)
{
	(void)arg;
	on_monitor = true;
	__weft_kt_word_claim();
	/* The monitor opens /proc files all the time, and an open takes the
	 * lowest free descriptor: in the program's table it would take, for
	 * an instant, the number a program counts on getting next (close(1)
	 * then open to redirect stdout; a test that expects pipe() to reuse
	 * a number).  So it works in a table of its own, empty (it needs none
	 * of the program's files, and a copy would keep them open: a pipe's
	 * reader would never see its end).  Without close_range (Linux < 5.9)
	 * it shares the program's table, as glibc threads do.  The spare
	 * kernel threads it needs are made by its spawner, which stays in
	 * the program's table (a thread shares its maker's table). */
	if (spawn.made_ok &&
	    __weft_raw_syscall6(SYS_close_range, 0, 0xffffffffl, CLOSE_RANGE_UNSHARE, 0, 0, 0) == 0)
		spawn.on = true;
	mon.can_retire = __weft_kt_glibc_thread_can_end();
	mon.alone_since = 0;
	mon.created_seen = 0;
	/* a monitor after a retired one starts with no look behind it */
	memset(watch, 0, sizeof watch);
	for (;;) {
		monitor_sleep(retire_in());
		unsigned n = __atomic_load_n(&__weft_proc.nvps, __ATOMIC_RELAXED);
		for (unsigned i = 0; i < n; i++)
			look(&__weft_vps[i], &watch[i]);
		if (retire())
			return NULL;
	}
	return NULL;
}

/*
 * Started by the carrier when a second UT is made, or by a kernel thread
 * Weft did not make on its first call (guest.c), which then waits for the
 * VP: the carrier may sit in an unwrapped call with nothing else to run,
 * and only the monitor can take the VP from it.  Either may come first,
 * so the start runs under a lock of its own; what it writes (mon, the TLS
 * takeover's scan) nobody reads before the monitor runs or the lock is
 * let go.  From a foreign thread it leaves the TCBs alone (they belong to
 * whoever carries the VP): the carrier tells them at the first guest's
 * request, the monitor at its first takeover (kthread.c).  A monitor that
 * retired (above) is started again here, the same way.
 */
static void monitor_start_locked(bool foreign)
{
	unsigned us = __weft_cfg()->block_threshold_us;
#if WEFT_TSAN
	/* The ThreadSanitizer build has no monitor: its suite has no takeover
	 * program TSan can run clean, so takeovers there are untried
	 * (docs/debugging.md).  The ASan build has it: ASan's thread state is
	 * per kernel thread (sync/key.c), and its suite runs the takeovers. */
	us = 0;
#endif
	if (mon.started || us == 0 || !__weft_activations_on()) {
		__atomic_store_n(&__weft_monitor_settled, true, __ATOMIC_RELEASE);
		return;
	}
	/* a kernel thread back from a takeover must not share libc's thread
	 * state with the next carrier (tls.c) */
	if (!__weft_tls_takeover_prepare()) {
		__atomic_store_n(&__weft_monitor_settled, true, __ATOMIC_RELEASE);
		__weft_warn("weft: no monitor for blocking in unwrapped calls: threads cannot have "
			    "thread-local storage of their own here (WEFT_TLS=off?)");
		return;
	}
	mon.period_ns = (uint64_t)us * 1000u;
	/* Helgrind and DRD: the monitor's and the spawner's handshakes are
	 * atomics and futexes they do not model (vp.c says the same of the
	 * VPs' tables), and so is the parked flag the VPs read */
	if (__weft_arch_valgrind) {
		WEFT_VG_UNCHECKED(&mon, sizeof mon);
		WEFT_VG_UNCHECKED(&spawn, sizeof spawn);
		WEFT_VG_UNCHECKED(&__weft_monitor_parked, sizeof __weft_monitor_parked);
		/* and so are the retirement's: the start lock, settled
		 * (membarrier is the create path's fence) and the ask word */
		WEFT_VG_UNCHECKED(&start_lock, sizeof start_lock);
		WEFT_VG_UNCHECKED(&__weft_monitor_settled, sizeof __weft_monitor_settled);
		WEFT_VG_UNCHECKED((void *)&retire_ask, sizeof retire_ask);
		WEFT_VG_UNCHECKED(&kept_spare, sizeof kept_spare);
		WEFT_VG_UNCHECKED(watch, sizeof watch);
	}
	/* Out of memory or mappings now: tried again at the next few creates,
	 * quietly (the process may be starved on purpose); then one line. */
	/* the spawner first, by the same hand: a thread the monitor made
	 * would be the monitor's first allocation (glibc's thread set-up
	 * allocates), and so give it a malloc arena of its own */
	if (!spawn.made_ok)
		spawn.made_ok = __weft_kt_glibc_thread(spawner_main, NULL, foreign) == 0;
	if (__weft_kt_glibc_thread(monitor_main, NULL, foreign) == 0) {
		mon.started = true;
		__atomic_store_n(&__weft_monitor_settled, true, __ATOMIC_RELEASE);
	} else if (++mon.attempts == 16) {
		__atomic_store_n(&__weft_monitor_settled, true, __ATOMIC_RELEASE);
		__weft_warn("weft: cannot start the monitor thread; blocking in unwrapped calls stops every thread");
	}
}

void __weft_monitor_tls_on(void)
{
	start_lock_take();
	__weft_tls_takeover_prepare();
	__weft_tls_takeover_turn_on();
	start_lock_give();
}

void __weft_monitor_start(bool foreign)
{
	start_lock_take();
	if (!__atomic_load_n(&__weft_monitor_settled, __ATOMIC_ACQUIRE))
		monitor_start_locked(foreign);
	start_lock_give();
}

void __weft_monitor_after_fork(struct vp *vp)
{
	/* the monitor and every kernel thread away are the parent's */
	mon.started = false;
	mon.attempts = 0;
	start_lock = 0;
	spawn.on = false;
	spawn.made_ok = false;
	spawn.req = 0;
	kept_spare = NULL;                /* the parent's kernel thread */
	retire_ask = ASK_NONE;
	mon.alone_since = 0;
	__weft_monitor_parked = 0;
	__weft_monitor_settled = false;
	__atomic_store_n(&vp->take, 0, __ATOMIC_RELAXED);
}

/* ---- the entries' slow path ---------------------------------------------- */

enum weft_where __weft_where_slow(void)
{
	struct vp *vp = __weft_vp();
	if (!__weft_started)
		return WHERE_NONE;
	/* No carrier: start-up has not made the VP yet (the first kernel
	 * thread, inside __weft_init: the VP's tid is its own, or not yet
	 * set and the process's pid neither) — or, in a fork's child forked
	 * on another VP, VP 0 has none until the child's VPs start again
	 * (mn.c, __weft_mn_after_fork, __weft_mn_start), and a kernel thread
	 * whose word names no VP reads VP 0: a thread of the child's that
	 * Weft did not make, or not yet (a spare in glibc's start-up, which
	 * ASan's thread start makes call pthread_self: it took itself for
	 * the start-up and pthread_self read a NULL UT). */
	pid_t me;
	if (!vp->carrier) {
		me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
		if (__atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE) == me)
			return WHERE_NONE;
		goto off_vp;
	}
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	/* the monitor itself (a sanitizer's hooks in the glibc calls it makes
	 * while it decides) never carries the VP and never waits for itself */
	if (on_monitor)
		return WHERE_FOREIGN;
	/* a decision in progress: wait for it (it takes a /proc read) —
	 * unless the caller is another process, whose copy of the word was
	 * taken while the parent's monitor decided: the child of a fork by a
	 * kernel thread Weft did not make (vp.c, fork_foreign), where no
	 * handler cleared it and no monitor will (it spun here for good) */
	if (unlikely(__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE) & TAKE_BUSY)) {
		if ((pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != __weft_proc.pid)
			return WHERE_NONE;
		while (__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE) & TAKE_BUSY)
			__builtin_ia32_pause();
	}
	/* a UT's vfork child, on that UT's stack: its calls are plain ones
	 * (vfork.c).  The bit is tested here, inline, so that the common case
	 * makes no call; __weft_vfork_child tests it again for its other
	 * caller (signal.c's sigaction). */
	if (unlikely(__atomic_load_n(&vp->take, __ATOMIC_ACQUIRE) & TAKE_VFORK) && __weft_vfork_child(vp))
		return WHERE_NONE;
	struct ut *c = __atomic_load_n(&vp->cur, __ATOMIC_ACQUIRE);
	if (c && !c->away && __weft_sp_in(c, sp))
		return WHERE_VP;
	me = (pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (__atomic_load_n(&vp->tid, __ATOMIC_ACQUIRE) == me)
		return WHERE_VP;              /* on a signal stack, or home */
off_vp:;
	struct kt *k = __weft_kt_by_tid(me);
	if (k && __atomic_load_n(&k->away, __ATOMIC_ACQUIRE))
		return WHERE_AWAY;
	/* A task that shares this memory but is another process (clone
	 * without CLONE_THREAD: LeakSanitizer's tracer, which stops every
	 * thread of this one and then calls pipe) can never be given a VP —
	 * the carriers it stopped would have to hand it over — so its calls
	 * are the plain calls. */
	if ((pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0) != __weft_proc.pid)
		return WHERE_NONE;
	return WHERE_FOREIGN;
}

void __weft_settle_slow(void)
{
	if (__weft_where_slow() != WHERE_AWAY)
		return;
	__weft_away_return(__weft_kt_by_tid((pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0)));
	/* The carrier that ran the UT again switched to it from Weft's code:
	 * in_weft set, and under M:N the runtime lock held.  The caller goes
	 * on in the program's code (an entry without a whole WEFT_CALL:
	 * pthread_getspecific's), so it leaves Weft here, as a call's end
	 * does; its epilogue's work waits for the next call.  Left set, the
	 * flag made the monitor take the UT's next unknown blocking call for
	 * one of Weft's (it never took the VP), and under M:N the lock was
	 * held over the program's code until the next call's end. */
	__weft_outcall_begin(__weft_vp());
}

uint8_t __weft_enter_slow(void)
{
	struct vp *vp = __weft_vp();
	switch (__weft_where_slow()) {
	case WHERE_NONE:
		/* before start-up: 0 (the call starts Weft if it needs it);
		 * once started, another process in this memory: its calls
		 * that would park or switch are the kernel's (rt.h) */
		return __weft_started && vp->carrier ? WEFT_PLAIN : 0;
	case WHERE_FOREIGN:
		return __weft_guest_enter();
	case WHERE_AWAY:
		/* back on a VP (the carrier that runs it holds the runtime
		 * lock), maybe another one under M:N */
		__weft_away_return(__weft_kt_by_tid((pid_t)__weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0)));
		vp = __weft_vp();
		break;
	case WHERE_VP:
		if (vp->in_weft)
			return WEFT_NESTED;       /* rt.h, __weft_enter */
		/* taken away while it waited for the lock: the away case */
		if (unlikely(__weft_mn) && !__weft_rtl_lock_entry(vp))
			return __weft_enter_slow();
		break;
	}
	vp->in_weft = 1;
	return 1;
}

void __weft_away_return(struct kt *k)
{
	struct ut *x = k->away;
	/* home code takes no signal; the UT gets the VP's mask back when a
	 * carrier runs it */
	sigset_t all;
	__weft_sigset_home(&all);
	__weft_raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0, 0);
	__weft_preempt_away_done(k);
	__atomic_store_n(&k->away, NULL, __ATOMIC_RELEASE);
	__weft_kt_go_home(k, x);
}
