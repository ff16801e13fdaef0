/*
 * rt.h — the runtime's internal interface.  Nothing here is exported.
 *
 * The runtime owns user threads (UTs) and their life cycle, the virtual
 * processor (VP) that runs them, the ready queues and the one function that
 * chooses the next UT, wait queues (park/unpark), timers, stacks,
 * preemption and the signal contract.  It knows nothing of POSIX object
 * layouts and never calls up into sync or posix: where an upper layer must
 * act (a thread's keys and cancellation at exit, who holds what a UT waits
 * on), the runtime calls through the one hook table `__weft_hooks`.
 * docs/architecture.md is the design of record; this header is where its
 * rules are kept, next to the state they protect.
 *
 * Model.  M:1 by default: one VP on one kernel thread; M:N (WEFT_VPS > 1):
 * N VPs sharing one set of ready queues (struct weft_runq).  Exactly one UT
 * is RUNNING per VP: the VP's `cur`.  Every other live UT is in exactly one of
 *   READY    linked on the ready queue of its priority;
 *   BLOCKED  linked on one wait queue (or none, while it sleeps), and in the
 *            timer heap iff it has a deadline;
 *   EXITING  exited and switched away from for the last time; the next UT
 *            to run releases its stack (lifecycle.c);
 *   ZOMBIE   exited, joinable, waiting for pthread_join; no stack;
 *   DEFERRED a copy-stack UT that was chosen while its run stack was busy
 *            (copystack.c): linked on that run stack's list until it is
 *            free, then READY again at the head of its level.
 * A UT's q_next/q_prev links belong to whichever queue holds it, so a UT is
 * never on two queues.  UT state machine (checked in WEFT_DEBUG builds):
 *   FREE -> READY (spawn) -> RUNNING <-> READY, RUNNING -> BLOCKED -> READY,
 *   RUNNING -> EXITING -> ZOMBIE -> FREE (reap) or EXITING -> FREE (detached).
 *
 * Who touches runtime state (the signal contract, docs/architecture.md):
 *   - the mainline: code running on the VP's kernel thread on behalf of
 *     the current UT.  Weft's own text is never interrupted midway by
 *     anything that changes runtime state, so the mainline needs no lock and
 *     no atomic instruction in M:1: every sequence runs to completion.
 *   - asynchronous handlers on the VP's kernel thread: the preemption tick
 *     (preempt.c), the program's signal handlers run through Weft's
 *     dispatcher (signal.c), and the fault handler (fault.c).  Each first
 *     decides from the interrupted PC and stack pointer alone whether it may
 *     act; it reads nothing else of the scheduler before that.  What each
 *     may read and write is written next to each field below ("async:").
 *   - other VPs (M:N, mn.c): each VP's mainline runs Weft's code only
 *     under the runtime lock, so "VP-local" below means "this VP's
 *     mainline, or another VP's while it holds the lock".  Beyond that,
 *     another VP reads this VP's cur, idle, woken, kicked, offvp and inbox
 *     (under the lock) to choose whom to wake or preempt, sets its
 *     `signals` for a UT running there (sigdeliver.c, notify) and its
 *     async_cancel (posix/cancel.c), and a spinning idle VP reads
 *     __weft_rq.nready, its own inbox and signals without the lock (hints).
 * *     The activations monitor and foreign kernel threads read only what is
 *     marked at each field.
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "lockorder.h"
#include "../arch/arch.h"

void *__weft_arch_thread_self(void) __attribute__((visibility("hidden")));   /* arch/<isa>/arch.c */

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
/* An entry whose uncontended path is a few instructions starts a cache
 * line, so the whole path is fetched at once wherever the linker puts the
 * rest: mutex lock+unlock measured 5.2 ns aligned, 5.7 ns when a layout
 * change left the lock's fast path across a line. */
#define WEFT_HOT_ENTRY __attribute__((aligned(64)))
/* An exported call's slow part, apart from its fast path so that the fast
 * path saves no register and makes no frame (the slow part is a tail
 * call).  Sanitizer builds inline it back: their epilogue asks for the
 * exported function's own return address (WEFT_CALL_EPILOGUE). */
#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
#define WEFT_SLOW_PART static inline __attribute__((always_inline))
#else
#define WEFT_SLOW_PART static __attribute__((noinline))
#endif
/* The body an exported call's two entries share (M:1's fast entry,
 * __weft_m1_enter, and WEFT_CALL's): inlined into both in an optimised
 * build; a function of its own in the sanitizer builds, where two inlined
 * copies doubled the exported function's frame (pthread_join's, 168 -> 344
 * bytes under ASan) and a parked UT's stack came to touch another page
 * (threads_100k_alive_rss: 34 KiB a UT against its 32 KiB). */
#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
#define WEFT_SHARED_BODY static __attribute__((noinline))
#else
#define WEFT_SHARED_BODY static inline __attribute__((always_inline))
#endif
/* The call of such a slow part from its exported function when the
 * slow part may park: not a tail call, so that the exported function's
 * frame stays on a parked UT's stack, where the thread dump names the
 * UT's call into Weft by its outermost frame in Weft's text, and dladdr
 * knows only exported names (dump.c).  The fast path still saves no
 * register (at most it moves the stack pointer). */
#define WEFT_SLOW_CALL(call)                                  \
	({                                                    \
		__typeof__(call) weft_r_ = (call);            \
		__asm__ volatile("" : "+r"(weft_r_));         \
		weft_r_;                                      \
	})
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Priorities: SCHED_OTHER is level 0, SCHED_FIFO/RR are 1..99. */
#define WEFT_NPRIO 100
#define WEFT_PRIO_MAX 99

enum ut_state {
	UT_FREE = 0,   /* slot unused */
	UT_READY,      /* on a ready queue */
	UT_RUNNING,    /* the VP's cur */
	UT_BLOCKED,    /* parked */
	UT_ZOMBIE,     /* exited, joinable, stack released */
	UT_EXITING,    /* exited; stack and slot await release by the next UT */
	UT_DEFERRED,   /* a copy-stack UT chosen to run while its run stack was
			* busy (copystack.c): ready, but waiting on that run
			* stack's list, not a ready queue, until it is free */
};

/* Why a UT is parked: kept for deadlock reports and debuggers. */
enum wait_kind {
	WAIT_NONE = 0, WAIT_SLEEP, WAIT_JOIN, WAIT_MUTEX, WAIT_COND, WAIT_RWLOCK,
	WAIT_BARRIER, WAIT_SEM, WAIT_ONCE, WAIT_EVENT, WAIT_MAILBOX, WAIT_SPIN,
	WAIT_FUTEX, WAIT_FUTEX_SHARED, WAIT_PAUSE, WAIT_SYSCALL, WAIT_OTHER,
};

struct ut;

/*
 * A wait queue: a circular doubly linked list of parked UTs, highest
 * priority first and FIFO within a priority.  `head` NULL means empty.  It is
 * one word so that it fits inside glibc's object layouts; a zeroed waitq is
 * a valid empty queue (static initialisers).  Under M:N its lock is bit 0
 * of `head` (docs/architecture.md, "Locks in glibc's objects").
 */
struct waitq {
	struct ut *head;
};

/* A runtime lock.  M:1 has no lock to take: every operation is empty and
 * costs nothing; WEFT_DEBUG builds check the written lock order. */
struct weft_lock {
	uint8_t cls;          /* enum lock_class, for the order check */
};

/* Stack of one UT.  `lo` is the lowest usable byte, `hi` one past the top. */
enum stack_kind { STACK_NONE = 0, STACK_POOLED, STACK_MAPPED, STACK_USER, STACK_PROCESS,
		  STACK_COPY /* a copy-stack UT: lo..hi is its VP's run stack, shared
			      * (copystack.c); `index` names the run stack */ };

/* A UT's kind of stack, as asked (an attribute, WEFT_STACK_MODE): 0 is
 * "the process default" in an attribute; the values are weft.h's. */
enum weft_stack_mode_internal { CS_MODE_DEFAULT = 0, CS_MODE_SEPARATE = 1, CS_MODE_COPY = 2 };

struct ut_stack {
	char *lo, *hi;
	size_t guard;          /* bytes reserved as guard below lo (0: none) */
	uint8_t kind;
	bool canary;           /* the guard could not be protected: a canary
				* word sits at lo (checked at every switch) */
	bool mprotected;       /* guard made by mprotect (owes two mappings) */
	uint8_t index;         /* STACK_POOLED: its place in its slab */
	bool zeroed;           /* handed out with every page reading zero (a
				* fresh mapping, or given back since): whoever
				* fills it need not clear it, nor read it first
				* (a read maps the zero page, and the write
				* after it is a second fault that flushes the
				* TLB on every CPU the process runs on) */
	uint32_t slab;         /* STACK_POOLED: its slab's number */
	uint32_t vg_id;        /* Valgrind's number for it while registered
				* (stack.c), else 0 (Valgrind's own main
				* stack is its number 0) */
};

struct tsd;                /* thread-specific data (sync/key.c) */

/*
 * A copy-stack UT's own state, kept apart from struct ut so that separate-
 * stack UTs do not pay for it (copystack.c, Marovich's second variant):
 * where its frames are while they are not on its run stack — its save
 * area holds the live
 * part [top - len, top) of the run stack as it was when another UT needed
 * that stack (and, in ASan builds, the shadow of those bytes after them).
 * len 0: its frames are on the run stack (it is the run stack's occupant),
 * or it has none.  offstack: while it runs a signal handler on another
 * stack (its sigaltstack, the kernel thread's), the lowest byte of the run
 * stack its interrupted frames use; 0 otherwise.  VP-local.
 */
struct ut_copy {
	char *save;
	uint32_t len;
	uint8_t cls;               /* the save area's size class (0: none) */
	uint8_t detached;          /* in a blocking call its kernel thread makes from
				    * its home stack (handoff.c): off the run stack */
	uint8_t scratch_busy;      /* `scratch` is lent out (__weft_wait_mem) */
	uintptr_t offstack;
	void *scratch;             /* __weft_wait_mem's block (malloc'd), or NULL */
	size_t scratch_size;
	long result;               /* a detached call's result, written by its kernel
				    * thread before it queues the UT (handoff.c) */
};

/*
 * A user thread.  Descriptors live in the UT table for ever (ut_table.c),
 * so a pointer to one is always safe to read.  Every field is VP-local:
 * only the mainline of the VP the UT belongs to touches it, except where
 * marked.  Upper layers own the fields marked with their file.
 */
struct ut {
	void *sp;                     /* saved stack pointer: must stay first */
	struct ut *q_next, *q_prev;   /* ready queue or wait queue links */
	struct waitq *wq;             /* queue it is parked on, or NULL */
	uint8_t state;                /* enum ut_state */
	uint8_t policy;               /* SCHED_OTHER / SCHED_FIFO / SCHED_RR */
	uint8_t prio;                 /* effective priority, the queue index */
	uint8_t base_prio;            /* priority before any boost */
	uint8_t detached;
	uint8_t wait_kind;            /* enum wait_kind, while BLOCKED */
	uint8_t explicit_sched;       /* created with PTHREAD_EXPLICIT_SCHED */
	uint8_t mbox_full;            /* mailbox (sync/mailbox.c) holds a word */
	uint8_t cancel;               /* CANCEL_* bits (posix/cancel.c).  Written by the
				       * UT itself and by pthread_cancel (PENDING: a
				       * seq_cst RMW).  Read without the VP, to stop a
				       * call in the kernel: by cancellable.S on the kernel
				       * thread making the UT's call, by the cancel kick's
				       * handler there (preempt.c: csys_stop, away_cancel)
				       * and by the monitor (monitor.c, kick_one), which
				       * only decide whether to end or kick a call */
	uint8_t cancel_point;         /* enum cancel_point, while parked */
	uint8_t fresh;                /* made, not yet run: set by spawn, cleared by its
				       * first code (__weft_ut_main); only such a UT is
				       * run ahead of its level by a join (the fork-join
				       * hand-off, sched.c) */
	uint8_t rq_vp;                /* M:N, READY at level 0: the index of the VP whose
				       * list (vp->lq) holds it (sched.c) */
	uint8_t calls_nested;         /* exported calls it has made from inside Weft's own
				       * code and not yet ended (WEFT_CALL's WEFT_NESTED):
				       * while non-zero an outer Weft sequence is under way,
				       * and the runtime lock must not be let go in the
				       * middle of it (__weft_try_syscall6) */
	uint8_t files_held;           /* FILEs it holds by flockfile (posix/stdio_lock.c),
				       * saturating at 255; written by the UT itself,
				       * read by __weft_tls_rehome while it is switched
				       * out (non-zero: glibc's locks follow it) */
	uint8_t in_loader;            /* its dlopen, dlmopen and dlclose calls under way
				       * (posix/dlopen.c), saturating at 255; the same
				       * writer and reader as files_held */
	struct kt *guest_kt;          /* a guest: the kernel thread Weft did not make that
				       * this UT stands for, which alone runs it (guest.c) */
	uint8_t away;                 /* taken off the VP by the monitor while its kernel
				       * thread sat in the kernel (monitor.c); set by the
				       * monitor holding the VP, cleared by the carrier */
	uint8_t sig_ready;            /* sig_pend & ~sig_mask != 0: a handler is due
				       * (sigdeliver.c); tested at every switch-in */
	uint8_t sig_restart;          /* the handlers last run on it all had SA_RESTART */
	uint8_t sig_woken;            /* the signal whose delivery ended its wait */
	uint8_t sig_intr;             /* its wait (not a cancellation point) may end
				       * with EINTR for a handler: the caller waits
				       * again (a mutex) or decides (the I/O waits) */
	uint8_t libc_cancel;          /* its kernel thread, away in one of libc's own
				       * cancellable calls, ended it for a cancel
				       * (preempt.c, away_cancel): the fake call's
				       * trampoline acts once it is back on the VP.
				       * Written by that kernel thread's handler while
				       * away, read and cleared by the UT itself */
	int wake;                     /* result handed over by unpark */
	int saved_errno;              /* errno while not running */
	pid_t csys_tid;               /* the kernel thread making its cancellable system call
				       * (handoff.c, posix/aio.c), 0 when none.  Written by
				       * the UT on that thread (seq_cst), read by
				       * pthread_cancel on any thread after it published the
				       * request (posix/cancel.c), which then kicks that
				       * thread, by the monitor (kick_one: repeat the kick)
				       * and by the kick's handler (away_cancel: a call of
				       * Weft's ends by itself); a stale tid only costs a
				       * kick the handler finds nothing for. */
	uint32_t slot, gen;           /* handle = gen << 32 | slot */
	uint32_t tindex;              /* timer-heap index + 1; 0: no timer */
	int64_t deadline;             /* CLOCK_MONOTONIC ns, valid iff tindex */
	uint64_t id;                  /* 1 for main, then 2, 3, ...; never reused */
	void *wait_obj;               /* what it waits on, while BLOCKED */
	void *tp;                     /* its thread pointer (tls.c); NULL: none of its own yet */
	struct tls_ctx *tls;          /* its TLS context from the pool (tls.c), or NULL */
	void *(*start)(void *);
	void *arg;
	void *retval;
	struct waitq joinq;           /* the (one) joiner parks here */
	struct ut *joiner;
	struct ut_stack stack;
	struct ut_copy *cs;           /* copy-stack UTs only (copystack.c): made with the UT */
	struct tsd *tsd;              /* sync/key.c */
	uintptr_t mbox_msg;           /* sync/mailbox.c */
	void *robust_head;            /* robust mutexes held (sync/robust.c) */
	void *once_frames;            /* pthread_once routines running (sync/once.c) */
	void *cleanup_bufs;           /* pthread_cleanup_push buffers, innermost first (posix/cleanup.c) */
	void *cleanup_old;            /* _pthread_cleanup_push buffers, innermost first */
	void *unwind_exc;             /* pthread_exit's unwind exception, while exiting */
	uint32_t pct_prio;            /* PCT debug scheduler's priority */
	uint32_t switch_points;       /* its epilogues seen by a debug scheduler */
	/* Signals (sigdeliver.c).  Written by the VP's mainline, or by the
	 * dispatcher when it interrupted the program's own code (never Weft's
	 * text, so never a half-done change of these). */
	uint64_t sig_mask;            /* bit s-1: s blocked (pthread_sigmask) */
	uint64_t sig_pend;            /* bit s-1: s pending for this UT */
	struct sig_rec *sig_q;        /* their siginfo, oldest first */
	uint64_t sig_wait;            /* the set it waits for in sigwait & co (0: none) */
	struct sig_frame *sig_frames; /* handlers Weft runs on it, innermost first */
	stack_t sig_alt;              /* its sigaltstack (ss_flags SS_DISABLE: none) */
	uint32_t sig_handled;         /* handlers run on it (pause, sigsuspend) */
	uint8_t sig_counted;          /* its mask is in the process's tally */
	uint8_t sync_held;            /* the synchronous signals its fault handlers hold
				       * (signal.c's sync_entry: set and put back around
				       * the handler, on its carrier while it runs, and
				       * cleared by a longjmp out, sigdeliver.c) */
	int64_t cpu_ns;               /* CPU time it ran, while vp->cpu_acct (cpuclock.c) */
	char name[16];
#if defined(__SANITIZE_ADDRESS__)
	void *asan_fake;              /* ASan's fake-stack handle while switched out */
	void *asan_fake_root;         /* the frames of asan_fake named to LeakSanitizer */
	size_t asan_fake_root_size;   /* (lsan_roots.c; NULL: none), on its VP's mainline */
#endif
#if WEFT_TSAN
	void *tsan_fiber;             /* its ThreadSanitizer fiber (tsan.c; NULL: made at first switch-in) */
	bool tsan_borrowed;           /* a kernel thread's own, never destroyed */
#endif
};

/* Timer heap: a binary min-heap of UTs keyed by deadline. */
struct timer_heap {
	struct ut **v;
	uint32_t n, cap;
};

struct weft_counters {
	uint64_t switches, created, exited, parks, unparks, timer_wakeups;
	uint64_t idle_sleeps, stacks_mapped, stacks_reused;
	uint64_t preemptions;          /* UTs switched out by a fake call */
	uint64_t dispatches;           /* deferred ticks that switched when leaving Weft */
	uint64_t seeded_switches;      /* switches chosen by a debug scheduler */
	uint64_t switch_points;        /* epilogues run while the exit hook was set */
	uint64_t signals_deferred;     /* program signals that found Weft's text running */
	uint64_t handoffs;             /* the VP handed on before a blocking call (handoff.c) */
	uint64_t rejoins;              /* UTs back from a blocking call, queued again */
	uint64_t takeovers;            /* the VP taken from a kernel thread blocked in code
					* Weft did not wrap (monitor.c) */
	uint64_t cs_saves, cs_restores, cs_bytes;   /* copy-stack frames moved (copystack.c) */
	uint64_t steals;               /* level-0 UTs taken from another VP's list (sched.c) */
};

/* Debug schedulers (Mueller's "perverted scheduling"), WEFT_SCHED. */
enum sched_debug { SD_NONE = 0, SD_MUTEXSWITCH, SD_RRSWITCH, SD_RANDOM, SD_PCT };

/* Where a Weft call returns to its caller (for the debug schedulers). */
enum exit_point { EXIT_MUTEX_LOCK, EXIT_OTHER };

/* The preemption timer's state (runtime/preempt.c). */
enum tick_mode { TICK_OFF = 0, TICK_PERIODIC, TICK_ONESHOT };

/*
 * What this VP's asynchronous handlers write: single writer (the handlers,
 * which nest but never run beside each other on the one kernel thread), read
 * by the mainline as plain loads.  Counters only grow.
 */
struct vp_async {
	volatile uint64_t ticks;          /* tick signals, retries included */
	volatile uint64_t deferrals;      /* ticks that found the PC protected */
	volatile uint64_t retries;        /* ticks that came with a dispatch pending */
	volatile uint64_t fake_calls;     /* ticks turned into a fake call */
	volatile uint64_t ras_rollbacks;  /* restartable sequences restarted */
	volatile uint64_t caught;         /* program signals the dispatcher saw */
	volatile uint8_t retry_armed;     /* the retry timer is running (handler-owned) */
	/* the PC a fake call interrupted, when it lay in code the range table
	 * had no object for; else 0.  Written by the tick handler just before
	 * its fake call, read and cleared by that fake call's trampoline on
	 * the same kernel thread (preempt.c, late_code_protected). */
	volatile uintptr_t unknown_pc;
};

/*
 * "No switch here": a program's signal handler is running over code that
 * must not lose the processor midway (libc, the loader, Weft itself).  Set by
 * the dispatcher (signal.c) for the handler's duration; read by the tick,
 * the dispatcher and every mainline switch point.  It names the stack range
 * the handler runs in, so a handler that leaves by longjmp is seen as gone.
 */
struct vp_noswitch {
	volatile uintptr_t lo, sp;        /* in force while lo <= sp < this sp */
	struct ut *volatile ut;           /* on this UT */
};

/* Signals that arrived while Weft's own text ran: delivered at the next
 * epilogue (signal.c).  One instance per signal: a deferred signal stays
 * blocked in the kernel until its handler has run, so further instances
 * (queued real-time signals) wait in the kernel's queue, not here.
 * Written by the dispatcher, consumed by the mainline with the program's
 * signals blocked, and by the carrier's retry handler (preempt.c, on_tick;
 * signal.c, __weft_sig_redispatch: it hands them back to the kernel), which
 * runs with every signal blocked and only where the mainline is outside
 * Weft's text. */
struct vp_deferred {
	volatile uint64_t pending;        /* bit s-1: signal s waits */
	siginfo_t info[64];               /* its siginfo */
	/* the carrier's mainline is setting its kernel mask (sigdeliver.c,
	 * kset): a signal the new mask lets in arrives at that call's return,
	 * in Weft's work, which goes on to an epilogue or the idle loop's
	 * look; the dispatcher arms no retry for it (signal.c) */
	volatile uint8_t in_kset;
};

/*
 * The ready queues and the timer heap: one for the whole process, shared by
 * every VP (M:N: under the runtime lock, below), so the one chooser always
 * sees every ready UT and the N running UTs are the N best (POSIX
 * priorities across VPs).  One circular list per priority level 0..99 and a
 * 128-bit bitmap of the non-empty levels (sched.c keeps the invariants).
 * Level 0 alone (SCHED_OTHER, BATCH, IDLE: POSIX leaves their order to the
 * implementation) is kept per VP once several VPs run (vp->lq, mn_local):
 * a UT made ready goes to the list of the VP that readied it, and a VP
 * takes from its own list first and steals from the others' (sched.c,
 * "level 0 per VP").  The levels above stay shared, one FIFO each.
 */
struct weft_runq {
	uint64_t ready_bits[2];           /* bit p set iff rq[p] non-empty; bit 0
					   * under M:N: iff nlocal != 0 */
	uint32_t nready;                  /* UTs on the queues; M:N: read without the
					   * lock by spinning idle VPs (a hint only) */
	uint32_t nlocal;                  /* M:N: UTs on the VPs' level-0 lists (vp->lq);
					   * read without the lock by an idle VP's
					   * grace (mn.c, __weft_mn_grace: a hint) */
	struct ut *rq[WEFT_NPRIO];        /* circular lists, head = next to run;
					   * M:N: rq[0] stays empty (vp->lq instead) */
	struct timer_heap timers;
};
extern struct weft_runq __weft_rq HIDDEN;

/*
 * A virtual processor: the right to run UTs, carried by one kernel thread.
 * Field rules: "VP-local" fields are touched only by this VP's mainline;
 * "async" fields as stated; "start-up" fields are written once before the
 * first UT is created and read-only after.
 */
struct vp {
	/* ---- VP-local ---- */
	struct ut *cur;                   /* the RUNNING UT; async: read by handlers
					   * only after the PC test said "unprotected";
					   * by every entry on any kernel thread (the slow
					   * __weft_where: a pointer load, its stack bounds
					   * compared only), and so by sigaltstack, which
					   * makes no entry (sigdeliver.c, altstack_caller);
					   * by the monitor to decide,
					   * re-checked after its fence (monitor.c).  Written
					   * only through __weft_cur_set. */
	/* cur's stack as the entries' fast test reads it: [cur_lo, cur_lo +
	 * cur_span), span 0 when cur is NULL.  Written with cur (same
	 * writer); read by every entry on any kernel thread, beside take, to
	 * answer "am I the carrier?" without a load that depends on cur. */
	uintptr_t cur_lo, cur_span;
	/* ---- unknown blocking (monitor.c) ----
	 * take: TAKE_BUSY while the monitor decides whether to take the VP
	 * | TAKE_VFORK while a UT's vfork child runs (vfork.c: set and
	 * cleared by the carrier around its vfork call)
	 * | the number of UTs away (taken off the VP while their kernel thread
	 * sat in the kernel, not yet queued again).  Non-zero sends every
	 * entry into Weft down the slow path ("am I the carrier?").  The
	 * monitor sets BUSY and adds, the carrier subtracts (atomic); read by
	 * every entry, on any kernel thread.
	 * in_weft: the carrier runs Weft's code (set at every entry, cleared
	 * where Weft returns to the program's code).  Never set while the
	 * program's code runs: an entry that finds it set is nested (rt.h,
	 * __weft_enter) and leaves it, and the tick defers while it is set.
	 * Written by the carrier; read by the tick on the carrier and by the
	 * monitor after it has seen the carrier asleep in the kernel, when
	 * its stores are visible (docs/architecture.md).
	 * Both sit beside cur: every entry reads and writes this line.
	 * rtl_waiting: a kernel thread whose %gs names this VP sleeps, or is
	 * about to, waiting for the runtime lock (mn.c, rtl_lock_wait: set
	 * after the spin, cleared once it holds the lock).  Read by the
	 * monitor alone, as a hint (look): that carrier waits in Weft's own
	 * code, where no takeover follows, so its /proc files are not read.
	 * A value set by another kernel thread of the VP (one coming back
	 * from away) delays a takeover by a look or two, no more: it is
	 * cleared as soon as that thread holds the lock. */
	volatile uint32_t take;
	volatile uint8_t in_weft;
	volatile uint8_t rtl_waiting;
	/* kept_call: the carrier is making a kept blocking call (handoff.c,
	 * kept_call: the VP blocks with its UT), in cancellable.S's stretch.
	 * Written by the mainline around the call; read by this kernel
	 * thread's dispatcher and tick handler (signal.c, preempt.c), which
	 * end the call there for a program signal the running UT takes, so
	 * that its handler runs while the call waits, as under NPTL, and the
	 * call is made again after it if the kernel would restart it.  One
	 * kernel thread: volatile is the whole protocol.  Also read by the
	 * monitor (a hint, looked at again under its decision's fence): a
	 * KEPT_CALL_PLAIN call (no cancellation point) stays with its VP, as
	 * it did when it was made outside the stretch; a cancellable one may
	 * be taken at the stretch's end, as any cancellable call. */
	volatile uint8_t kept_call;
	struct ut *exiting;               /* exited UT whose stack awaits release */
	/* What a switch must look at beyond the plain queues, in one load
	 * (the monitor also reads noswitch_set: it leaves a VP alone whose
	 * handler runs over protected code):
	 * noswitch_set mirrors noswitch.sp != 0 (written with it, by the
	 * dispatcher; cleared by the mainline when stale); debug_pick says a
	 * debug scheduler chooses within a level, mn_local that level 0 is
	 * kept per VP (sched.c), trace_on that WEFT_TRACE
	 * records switches (both start-up); tp_on that some UT carries a
	 * thread pointer of its own (the TLS seam; set once, never cleared). */
	union {
		struct {
			volatile uint8_t noswitch_set;
			uint8_t debug_pick;
			uint8_t mn_local;          /* level 0 is kept per VP (vp->lq: several
						    * VPs run, mn.c; set before they start,
						    * never cleared) */
			uint8_t tp_on;
			uint8_t trace_on;
			uint8_t cpu_acct;          /* per-UT CPU clocks are kept (cpuclock.c;
						    * set once, never cleared) */
			uint8_t cs_on;             /* a copy-stack UT exists (copystack.c;
						    * set once, never cleared) */
			uint8_t libc_cancel;       /* some UT has a cancel request pending:
						    * glibc's view is armed for the UT that
						    * runs (libc_cancel.c).  Written for every
						    * VP by the caller that counts a request
						    * (M:N: under the runtime lock); read by
						    * __weft_cur_set, also the monitor's as it
						    * takes a VP (a hint: it disarms only what
						    * libc_armed names) */
		};
		volatile uint64_t switch_care;
	};
#define VP_YIELD_CARE 0xffffffull  /* switch_care's first three bytes: what a
				    * yield looks at (sched.c, __weft_yield_level) */
	/* UTs back from a blocking call made off the VP (handoff.c): pushed
	 * by any kernel thread (atomic, linked through q_next), taken whole by
	 * the carrier's mainline (__weft_inbox_drain); under M:N also by any
	 * other VP's carrier, under the runtime lock, when it idles or ticks
	 * (mn.c, __weft_mn_inboxes_take: each exchange takes a disjoint list),
	 * and read as a hint without the lock by spinning VPs and the monitor.
	 * Tested beside timers. */
	struct ut *volatile inbox;
	uint32_t offvp;                   /* UTs in a blocking call off the VP (BLOCKED,
					   * WAIT_SYSCALL); VP-local */
	/* The carrier sleeps on this futex word in the idle loop; a kernel
	 * thread that pushed to the inbox bumps it and wakes it (async: any
	 * kernel thread, atomic), and so does the dispatcher on the carrier
	 * when it defers a signal while `idle` is set (signal.c, defer). */
	volatile uint32_t wake;
	volatile uint8_t tick_mode;       /* enum tick_mode: the tick timer's state, written by
					   * the mainline; async: the tick reads it to pace retries */
	volatile uint8_t idle;            /* the VP waits in the kernel with no UT to run;
					   * async: read by the tick (nothing to preempt) and
					   * by a kernel thread that pushed to the inbox
					   * (handoff's kick: wake it, seq_cst, sched.c);
					   * by the monitor, which leaves an idle VP alone
					   * and parks while every VP is idle (idle_end
					   * then wakes it: __weft_monitor_parked);
					   * by the dispatcher, which bumps `wake` when it
					   * defers a signal meanwhile (signal.c) */
	bool preempt_on;                  /* time slicing enabled and possible */
	uint64_t cur_since;               /* async.ticks when cur was switched in */
	/* The fork-join hand-off (sched.c, __weft_hand_to): the UT the
	 * running one names to run next when it parks or ends — the thread
	 * a join waits for, the joiner of a thread that ends.  Set by the
	 * mainline just before it switches away, cleared by the next choice
	 * (__weft_schedule), which honours it only where POSIX leaves the
	 * order free.  VP-local, no async reader; a stale one (its park
	 * returned at once) is checked again, never trusted: descriptors are
	 * never freed (ut_table.c). */
	struct ut *hand_to;
	uint8_t rejoined_first;           /* the inbox put a SCHED_OTHER UT back from the
					   * kernel at the head of its level: the next
					   * dispatch (a kick) lets it run (handoff.c) */
	uint32_t cancel_armed;            /* UTs with CANCEL_ARMED set (posix/cancel.c) */
	struct weft_counters stat;        /* VP-local, but the monitor and another VP's
					   * idle grace (mn.c, __weft_mn_grace) read
					   * stat.switches (a relaxed load: "has the VP
					   * moved?"), the monitor also
					   * stat.created (a relaxed load: "a UT made since
					   * its last look?", monitor.c, retirement), and
					   * writes takeovers while it holds the VP */
	/* ---- the exit hook: work for the epilogue, tested with one load ----
	 * dispatch_pending: set by the tick, by switch points that had to
	 * decline (noswitch) and by a fake call that found its PC in a library
	 * loaded since the range table's scan (preempt.c,
	 * late_code_protected); cleared by the mainline *before* it acts, so a tick
	 * that sets it again meanwhile is acted on next time, never lost.
	 * signals: set by the dispatcher for every program signal it takes
	 * (deferred or run), cleared by the mainline (signal.c).
	 * sched_debug: start-up.  async_cancel: VP-local. */
	union {
		struct {
			volatile uint8_t dispatch_pending;
			uint8_t sched_debug;               /* enum sched_debug */
			volatile uint8_t async_cancel;     /* cancel_armed != 0 */
			volatile uint8_t signals;          /* deferred program signals wait */
		};
		volatile uint32_t exit_hook;
	};
	/* ---- M:N, under the runtime lock, by any VP ----
	 * Level 0's ready UTs readied on this VP, while mn_local (sched.c,
	 * "level 0 per VP"): a circular list like rq[p], head next to run,
	 * and its length.  Linked to by this VP only; unlinked by any VP that
	 * takes from it (a steal, a hand-off, a priority change). */
	struct ut *lq __attribute__((aligned(64)));
	uint32_t lq_n;
	/* ---- async ---- */
	struct vp_async async;
	struct vp_noswitch noswitch;
	struct vp_deferred deferred;
	/* ---- start-up ---- */
	/* The kernel thread carrying this VP (kthread.c, handoff.c).  Written
	 * by the carrier: 0 while the VP is handed on, the new carrier's tid
	 * before it runs a UT.  Async: read by the tick and the dispatcher on
	 * any kernel thread to tell whether they run on the carrier. */
	volatile pid_t tid;
	struct kt *carrier;               /* async: read by the monitor to decide (re-checked
					   * against tid after its fence) */
	sigset_t prog_mask;               /* the program's signal mask, carried from one
					   * carrier to the next at a handoff */
	int64_t cpu_mark;                 /* the carrier's CPU clock at cur's switch-in,
					   * while cpu_acct (cpuclock.c) */
	uint64_t sig_kmask;               /* what the carrier's kernel mask blocks for
					   * the UTs: the signals no UT could take now
					   * (sigdeliver.c).  Written by the mainline, or
					   * by the dispatcher routing over the program's
					   * code (never both at once); async: the
					   * dispatcher reads it for the mask sigreturn
					   * puts back (signal.c, context_mask) */
	uint64_t sig_hold;                /* standard signals taken from the kernel
					   * whose handler the running UT is about to
					   * run: kept in the kernel mask until it
					   * starts (sigdeliver.c).  Written by the
					   * mainline only, between
					   * __weft_sig_kmask_sync and the end of
					   * __weft_sig_run_cur (under M:N under the
					   * runtime lock; cleared by the UT whose
					   * handler took it on to another VP).  Async
					   * reader: the dispatcher on this carrier,
					   * routing over a program handler's code
					   * (kmask_apply): a plain load on the same
					   * kernel thread, which sees either value
					   * whole. */
	int *errnop;                      /* errno to save and restore at a switch: the kernel
					   * thread's; errno_sink once UTs have TLS of their own */
	int errno_sink;
	void *tp0;                        /* the VP's first kernel thread's own thread pointer:
					   * UTs without TLS of their own run on it, whichever
					   * kernel thread carries the VP (handoff.c) */
	void *self0;                      /* and glibc's THREAD_SELF for it.  Both set
					   * once, under the runtime lock, when the VP is
					   * first carried (kthread.c, take_vp); the monitor
					   * reads tp0 without the lock only to know the VP
					   * has started (monitor.c, another_vp_started and
					   * quiet; take_vp fences after it for quiet) */
	unsigned index;                   /* 0 .. nvps-1 */
	/* ---- M:N (mn.c); all under the runtime lock unless said ----
	 * idle_ut: the VP's idle context (M:N only): a VP with nothing to run
	 * switches to it rather than wait on the stack of the UT that gave up
	 * the processor, which another VP may resume at once; its stack and
	 * frame are made afresh each time (never resumed).
	 * woken: a waker chose this sleeping VP and bumped its `wake`; it
	 * clears it when it runs again (counted in proc.mn.waking).
	 * kicked: a cross-VP preemption signal is on its way to the carrier;
	 * cleared by the VP's __weft_preempted.
	 * gone: no kernel thread carries it (in a child forked after the VPs
	 * started, until the child's next UT starts them again; mn_start
	 * clears it as it gives a VP a carrier). */
	struct ut idle_ut;
	/* Copy-stack UTs (copystack.c): the mover, a context of the VP's own
	 * (a small stack, a frame made afresh each time, never resumed) that
	 * saves the outgoing UT's frames and restores the incoming one's when
	 * both use one run stack, since neither may do it standing on it;
	 * cs_out and cs_in are its two UTs for one switch.  VP-local. */
	struct ut_stack cs_mover;
	struct ut *cs_out, *cs_in, *cs_next;
	struct ut *cs_trim;               /* its save area may be larger than it needs */
	/* M:N: another VP deferred a UT for the run stack this VP's UT stands
	 * on; set by that VP under the runtime lock (then a kick), acted on
	 * by this VP's __weft_preempted (preempt.c) */
	bool cs_release;
	bool cs_evict;                    /* debug builds: cs_out's frames leave at once */
	volatile uint8_t woken;
	volatile uint8_t kicked;
	bool gone;                        /* no kernel thread carries it (a fork's child);
					   * read without the lock by the monitor and by
					   * __weft_mn_kick_all: cleared when the VP starts,
					   * before its tid is published; set in a fork's
					   * child while it is its only kernel thread */
	/* glibc's own cancellation armed for libc_armed (libc_cancel.c):
	 * libc_tp the thread block whose cleanup_jmp_buf slot holds the
	 * landing (or the UT's innermost cleanup buffer), libc_saved_jb what
	 * the slot held before.  Written by the mainline, and by the monitor
	 * when it takes the VP from the armed UT (the carrier is then asleep
	 * in the kernel, off the VP), and under M:N by another VP's
	 * pthread_cancel under the runtime lock, for the UT this VP runs;
	 * read by glibc's unwinder only on the armed UT's own stack. */
	struct ut *libc_armed;            /* the UT it is armed for, or NULL; every
					   * change of cur that leaves it disarms
					   * (__weft_cur_set, while libc_cancel) */
	void *libc_tp;
	void *libc_saved_jb;
	__pthread_unwind_buf_t libc_landing;
#ifdef WEFT_DEBUG
	uint8_t held[16];                 /* lock classes held, for the order check */
	uint8_t nheld;
#endif
};

/* Configuration: every WEFT_* variable, read once at start-up (config.c). */
struct weft_config {
	size_t stack_size;                /* WEFT_STACK_SIZE (0: built-in default) */
	uint64_t timeslice_ns;            /* WEFT_TIMESLICE (0: no slicing) */
	int preempt_signal;               /* WEFT_PREEMPT_SIGNAL */
	const char *nopreempt;            /* WEFT_NOPREEMPT (in environ) */
	const char *sched;                /* WEFT_SCHED, if a debug policy */
	bool deadlock_report;             /* WEFT_DEADLOCK=report */
	const char *trace_path;           /* WEFT_TRACE */
	unsigned vps;                     /* WEFT_VPS */
	const char *tls;                  /* WEFT_TLS: auto (unset), on, off */
	int dump_signal;                  /* WEFT_DUMP_SIGNAL (0: none; signal.c owns it) */
	bool activations_off;             /* WEFT_ACTIVATIONS=off: never hand the VP on */
	unsigned max_kthreads;            /* WEFT_MAX_KTHREADS: spare kernel threads at most */
	unsigned block_threshold_us;      /* WEFT_BLOCK_THRESHOLD: the monitor takes the VP from
					   * a kernel thread this long in the kernel (0: no monitor) */
	bool dump_exit;                   /* ... with :exit: end after the dump */
	uint8_t stack_mode;               /* WEFT_STACK_MODE: CS_MODE_SEPARATE or _COPY */
};

/*
 * Process-wide state.  Start-up fields are written before the first UT is
 * created; the rest are, in M:1, VP-local to the one VP (and become
 * lock- or atomic-protected under M:N: docs/architecture.md).
 */
struct weft_proc {
	struct weft_config cfg;           /* start-up */
	uint32_t live;                    /* UTs not yet exited (incl. main) */
	uint64_t next_id;                 /* next UT id */
	struct trace_buf *trace;          /* WEFT_TRACE (debug_sched.c) */
	uint32_t libc_cancel_pending;     /* UTs with a cancel request, not yet exiting
					   * (libc_cancel.c; M:N: under the runtime lock) */
	unsigned nvps;                    /* start-up: WEFT_VPS or weft_vps_set (1..WEFT_VPS_MAX),
					   * fixed before a second UT is made */
	/* M:N bookkeeping, under the runtime lock (mn.c). */
	struct {
		uint32_t nidle;           /* VPs asleep in the idle loop (vp->idle) */
		uint32_t waking;          /* of them, woken and not yet running */
		volatile uint32_t spinning;   /* VPs looking for work without sleeping:
					       * written under the lock, read by wakers
					       * (under it) */
		int poll_owner;           /* the VP waiting in the poller, or -1 */
		bool started;             /* the VPs beyond the first run */
	} mn;
	/* Cold, last (the fields above are create's): in a fork's child, the
	 * forking kernel thread's tid in the parent (vp.c; sync/key.c's
	 * per-kernel-thread values follow it). */
	pid_t fork_parent_tid;
	/* Cold: in the child of a fork by a kernel thread Weft did not make
	 * (vp.c, fork_foreign), a process that is not the runtime's: the
	 * forking thread's tid in the parent and the child's one kernel
	 * thread's tid; 0 elsewhere.  Written by the child handler, before
	 * the child has a second thread; read by sync/key.c (the forking
	 * thread's per-kernel-thread values) and pthread_self (guest.c). */
	pid_t foreign_fork_parent_tid, foreign_fork_child;
	/* This process's id (vp.c: at start-up and in a fork's child); read by
	 * __weft_where_slow on any kernel thread, written before a second one
	 * exists in either case. */
	pid_t pid;
};

extern struct weft_proc __weft_proc HIDDEN;
#define WEFT_VPS_MAX 64
extern struct vp __weft_vps[WEFT_VPS_MAX] HIDDEN;
extern bool __weft_started HIDDEN;
/* More than one VP (M:N): set before the second UT is made, never changed
 * after; every M:N path is behind a test of it, so M:1 pays one
 * well-predicted branch and no atomic instruction. */
extern bool __weft_mn HIDDEN;

void __weft_init(void) HIDDEN;
void __weft_settle_slow(void) HIDDEN;
/* The VP the caller runs on: the one accessor.  M:1: the only VP.  M:N:
 * the %gs base of the kernel thread (set when it is given a VP: mn.c,
 * kthread.c), 0 on a kernel thread Weft never gave one (a foreign thread:
 * VP 0's guest).  Always inline: gcc kept an out-of-line copy for the
 * thread's start and exit (paths it takes for cold), called six times a
 * create + join. */
static inline __attribute__((always_inline)) struct vp *__weft_vp(void)
{
	if (likely(!__weft_mn))
		return &__weft_vps[0];
	struct vp *v = __weft_arch_gs_get();
	return v ? v : &__weft_vps[0];
}
/* Every exported call's first step: Weft is started, and a kernel thread
 * whose UT the monitor took off the VP (monitor.c) is back on it before
 * the call reads anything of the runtime.  `take` is non-zero while any
 * UT is away: one load on the usual path. */
static inline void __weft_ensure(void)
{
	if (unlikely(!__weft_started))
		__weft_init();
	if (unlikely(__atomic_load_n(&__weft_vp()->take, __ATOMIC_RELAXED)))
		__weft_settle_slow();
}
static inline struct ut *__weft_self(void) { return __weft_vp()->cur; }
static inline const struct weft_config *__weft_cfg(void) { return &__weft_proc.cfg; }

/* ---- the hook table: the only calls from the runtime up into sync/posix ----
 * Defined once, by the top layer (posix/hooks.c).  Each hook runs on the
 * mainline, at a point named below, never from a signal handler. */
struct weft_hooks {
	/* The running UT is exiting (after its stack was unwound): run its
	 * thread-specific destructors, mark the robust mutexes it holds, free
	 * pthread_once controls it was running.  It may still block. */
	void (*ut_exiting)(struct ut *self);
	/* t's slot is about to be freed (joined or detached after exit). */
	void (*ut_reaped)(struct ut *t);
	/* Unwind the running UT for a cancellation request; never returns. */
	void (*cancel_act)(void) __attribute__((noreturn));
	/* An epilogue found async_cancel set: act if the caller is armed. */
	void (*cancel_async_point)(void);
	/* The UT that holds what t waits on (mutex owner, rwlock writer).
	 * A pure read, no lock and no allocation: the thread dump calls it
	 * from the dump signal's handler (signal.c, dump.c).  A new wait kind
	 * needs its name in dump.c's table too. */
	struct ut *(*wait_holder)(const struct ut *t);
	/* A wait of `kind` on `obj` is about to end for a signal's handler
	 * (sigdeliver.c's wake with EINTR, or park() finding one due): the
	 * object may count the waiter as away from its queue until it waits
	 * again (cond.c: a condition wait resumes after the handler). */
	void (*wait_interrupted)(enum wait_kind kind, void *obj);
	/* The timer of t, parked WAIT_FUTEX_SHARED, ran out at `now`
	 * (timer.c's __weft_timers_run: under the runtime lock, on any VP,
	 * from a switch, the idle loop or a tick's deferred work, never from
	 * a signal handler over Weft's code).  The wait polls what it waits
	 * for while it stays on its queue, so that no wake passes it by:
	 * return the next deadline (> now) to stay parked until, or -1 to end
	 * the wait with *result (posix/futex.c).  No allocation, no switch. */
	int64_t (*wait_poll)(struct ut *t, int64_t now, int *result);
	/* M:N: t, which holds FILEs by flockfile (t->files_held) or is inside
	 * the loader (t->in_loader), is about to run under another VP's
	 * identity (tls.c, __weft_tls_rehome: on the new VP's carrier, in
	 * switch_to, t switched out).  glibc's recursive locks it holds name
	 * the old identity as their owner (a FILE's by THREAD_SELF, old_self;
	 * the loader's by tid, old_tid) and must name the new one, or t's next
	 * stdio call on such a FILE, or its next dlsym, waits for itself
	 * (posix/stdio_lock.c, posix/dlopen.c).  No allocation, no lock, no
	 * switch. */
	void (*ut_rehomed)(struct ut *t, void *old_self, void *new_self, pid_t old_tid, pid_t new_tid);
};
extern const struct weft_hooks __weft_hooks HIDDEN;

/* ---- configuration (config.c) ---- */
void __weft_config_init(struct weft_config *cfg) HIDDEN;
/* Print one warning line on stderr (no stdio: safe before main). */
void __weft_warn(const char *fmt, ...) HIDDEN __attribute__((format(printf, 1, 2)));

/* vp->kept_call: none, a kept call that is no cancellation point, or one
 * that is (handoff.c, kept_call). */
enum { KEPT_CALL_NONE = 0, KEPT_CALL_PLAIN = 1, KEPT_CALL_CANCELLABLE = 2 };

/* ---- M:N (mn.c) ----
 * The runtime lock.  Under M:N (__weft_mn), a kernel thread holds it
 * exactly while it runs Weft's code on a VP (vp->in_weft set: taken by
 * __weft_enter, let go by __weft_outcall_begin, or released around a
 * sleep in the idle loop), so that Weft's text runs on one VP at a time
 * and every sequence of the runtime and the sync layer runs to completion
 * as it does in M:1, while the program's own code runs on every VP at
 * once.  It passes with the VP at a switch (the next UT goes on holding
 * it) and may be let go by another kernel thread than the one that took
 * it (a UT that moved between VPs).  Its acquire and release order every
 * access to runtime and sync state: the one memory-ordering argument for
 * every object (docs/architecture.md, "M:N").  A spin, a backoff (mn.c
 * says why), then a futex wait (0 free, 1 held, 2 held with sleepers).
 * Never taken in M:1.  Also
 * taken, by a kernel thread that does not hold it (in_weft clear), by the
 * dump signal's handler over the program's code (signal.c, on_dump), by
 * clock_gettime of a CPU clock (cpuclock.c) and by weft_stats_get
 * (stats.c), to read other VPs' state, by the io layer's fork parent
 * handler (io/poller.c), which glibc's fork calls over the program's code,
 * and by the dispatcher to route a signal over the program's code
 * (signal.c).  Only tried, never waited for (__weft_rtl_take_briefly), by
 * the dispatcher over libc's code and by the monitor's takeover: the
 * kernel thread they interrupted or decide about may hold a lock of
 * libc's (malloc's, which glibc's fork holds around the system call) that
 * the holder waits for in a malloc under this lock.  The lock is `word`
 * in struct weft_rtl_line below.
 *
 * Starvation.  The lock is not fair: a holder that lets it go and takes it
 * again at once (a VP whose UTs live in Weft's text: a yield loop, a join)
 * wins over a waiter the futex has only begun to wake, every time.  An
 * idle VP that waited in sleep_end so took no work and ran no deferred
 * signal for as long as another VP stayed busy (a dump asked by kill()
 * came after the program's exit).  So a waiter that has waited
 * RTL_STARVE_NS puts the address of a word of its own in `starving` (one
 * at a time), and the next unlock hands the lock to it: it takes the lock back
 * at once and wakes that word, so no newcomer can barge in between (Go's
 * sync.Mutex, starvation mode).  Written by the waiter (claimed, and
 * withdrawn once it took the lock itself) and by the unlocker that hands
 * over, while it holds the lock; read by every unlock, after its release,
 * in the one total order of sequentially consistent operations: either
 * the unlock sees the waiter's word, or the waiter's own attempt sees the
 * lock free (mn.c). */
struct weft_rtl_line {
	volatile uint32_t word;                 /* the lock: 0, 1 or 2 (above) */
	volatile uint32_t *volatile starving;   /* the hand-over slot (above) */
	volatile uint64_t handovers;            /* how many, for tests; under the lock */
} __attribute__((aligned(64)));
/* Alone on its cache line: every lock and unlock writes it, from every VP,
 * and read-mostly words beside it (__weft_mn, read by every Weft call)
 * missed in every other VP's cache each time (skynet under two VPs spent
 * a third of its time in the lock's wait). */
extern struct weft_rtl_line __weft_rtl HIDDEN;
void __weft_rtl_lock_slow(void) HIDDEN;
/* The lock for an idle VP that has work to take (its spin saw a UT ready,
 * or it woke from its sleep): spin, then wait on the word, without the
 * backoff's unasked sleeps (mn.c says why). */
void __weft_rtl_lock_prompt(void) HIDDEN;
void __weft_rtl_unlock_slow(uint32_t was) HIDDEN;
void __weft_rtl_wake(void) HIDDEN;
#ifdef WEFT_DEBUG
/* WEFT_DEBUG: the kernel thread that holds the lock, by its %gs base (its
 * VP; 0 off every VP), written only by the holder; the checks compare it
 * with the caller's wherever in_weft says the caller holds the lock. */
extern void *volatile __weft_rtl_owner HIDDEN;
extern void *volatile __weft_rtl_where HIDDEN;  /* the code that last took or let it go */
void __weft_rtl_check_held(const char *where) HIDDEN;
/* An outcall names the caller's own VP, and that VP's lock if in_weft. */
void __weft_rtl_check_outcall(const struct vp *vp) HIDDEN;
#define WEFT_RTL_OWNER_SET(v)                                                  \
	({                                                                     \
		void *pc_;                                                     \
		__asm__ volatile("lea 0(%%rip), %0" : "=r"(pc_));              \
		__weft_rtl_owner = (v);                                        \
		__weft_rtl_where = pc_;                                        \
	})
#else
#define WEFT_RTL_OWNER_SET(v) ((void)0)
#endif
static inline void __weft_rtl_lock(void)
{
	uint32_t free_ = 0;
	if (unlikely(!__atomic_compare_exchange_n(&__weft_rtl.word, &free_, 1, false, __ATOMIC_ACQUIRE,
						  __ATOMIC_RELAXED)))
		__weft_rtl_lock_slow();
	WEFT_RTL_OWNER_SET(__weft_arch_gs_get());
}
/* Take it only if it is free now: true if taken. */
static inline bool __weft_rtl_trylock(void)
{
	uint32_t free_ = 0;
	if (!__atomic_compare_exchange_n(&__weft_rtl.word, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	WEFT_RTL_OWNER_SET(__weft_arch_gs_get());
	return true;
}
/* Take it if it is free within `spins` pauses (a holder keeps it for a
 * Weft call's length): for a caller that must not wait for a holder that
 * may itself wait for a lock the caller's kernel thread holds. */
static inline bool __weft_rtl_take_briefly(int spins)
{
	for (int i = 0; i < spins; i++) {
		if (__weft_rtl_trylock())
			return true;
		__builtin_ia32_pause();
	}
	return false;
}
static inline void __weft_rtl_unlock(void)
{
	WEFT_RTL_OWNER_SET((void *)-1);
	uint32_t was = __atomic_exchange_n(&__weft_rtl.word, 0, __ATOMIC_SEQ_CST);
	if (unlikely(was == 2 || __atomic_load_n(&__weft_rtl.starving, __ATOMIC_SEQ_CST)))
		__weft_rtl_unlock_slow(was);
}
/* For the takers outside Weft's text named above (over the program's
 * code, in_weft clear): take the lock under M:N unless this VP holds it
 * already; true if taken, for __weft_rtl_unlock_outside.  Empty in M:1. */
static inline bool __weft_rtl_lock_outside(void)
{
	if (!__weft_mn || __weft_vp()->in_weft)
		return false;
	__weft_rtl_lock();
	return true;
}
static inline void __weft_rtl_unlock_outside(bool taken)
{
	if (taken)
		__weft_rtl_unlock();
}
/* Start the VPs beyond the first (the first time a second UT is made). */
void __weft_mn_start(void) HIDDEN;
/* t was made ready (sched.c): wake a sleeping VP for it, or preempt the
 * VP that runs the lowest priority if t outranks it. */
void __weft_mn_readied(struct ut *t) HIDDEN;
/* A new nearest deadline, or more ready UTs than VPs about to take them:
 * wake a sleeping VP, unless one is already looking for work. */
void __weft_mn_wake_idle(void) HIDDEN;
/* Drain the other VPs' inboxes (idle loop, tick): work queued on a VP
 * whose carrier is stuck in an unknown blocking call runs elsewhere. */
void __weft_mn_inboxes_take(struct vp *self) HIDDEN;
bool __weft_mn_inboxes_hold(const struct vp *self) HIDDEN;   /* any VP's inbox non-empty */
/* Kick every VP: something was queued from off every VP (a guest). */
void __weft_mn_kick_all(void) HIDDEN;
/* A ready UT outranks the running one: the VP that runs the lowest
 * priority, if that is not this one (whose UT the caller preempts). */
struct vp *__weft_mn_lower_vp(struct vp *self) HIDDEN;
/* How many other VPs run a UT now (weft_stats_get's threads_ready; under
 * the lock, where no UT is between the ready queue and a VP). */
unsigned __weft_mn_running_elsewhere(const struct vp *self) HIDDEN;
/* Send vp's carrier a kick (the tick's signal) to act on its ready queues. */
void __weft_mn_kick(struct vp *vp) HIDDEN;
/* Nothing ready: the VP goes to its idle context (sched.c). */
void __weft_mn_sleep_begin(struct vp *vp) HIDDEN;
void __weft_mn_sleep_end(struct vp *vp) HIDDEN;
/* The idle loop may spin a little before it sleeps: true if work came. */
bool __weft_mn_spin(struct vp *vp) HIDDEN;
/* An idle VP found one level-0 UT, on a busy VP's list: give that VP a few
 * microseconds to run it first (mn.c); true when it waited. */
bool __weft_mn_grace(struct vp *vp) HIDDEN;
/* Every live VP idle: nothing but a timer or a signal can make work. */
bool __weft_mn_all_idle(void) HIDDEN;
/* The VP's idle context's stack (made at start). */
int __weft_mn_idle_stack(struct vp *vp) HIDDEN;
/* fork's child: only the caller's VP has a kernel thread. */
void __weft_mn_after_fork(struct vp *vp) HIDDEN;
/* weft_vps_set's work: 0, EINVAL, EBUSY, ENOTSUP or EAGAIN (no memory
 * for the VPs' idle stacks). */
int __weft_mn_set_vps(unsigned n) HIDDEN;
/* Why M:N cannot run here, or NULL. */
const char *__weft_mn_unavailable(void) HIDDEN;
/* A restartable sequence has been registered (preempt.c): one VP only. */
bool __weft_ras_registered(void) HIDDEN;

/* ---- locks (lockorder.h): empty in M:1 ---- */
static inline void __weft_lock_init(struct weft_lock *l, enum lock_class c) { l->cls = (uint8_t)c; }
#ifdef WEFT_DEBUG
void __weft_lock(struct weft_lock *l) HIDDEN;
void __weft_unlock(struct weft_lock *l) HIDDEN;
#else
static inline void __weft_lock(struct weft_lock *l) { (void)l; }
static inline void __weft_unlock(struct weft_lock *l) { (void)l; }
#endif

/* ---- UT table (ut_table.c) ---- */
struct ut *__weft_ut_alloc(void) HIDDEN;           /* NULL: out of slots/memory */
void __weft_ut_free(struct ut *t) HIDDEN;          /* bumps generation */
struct ut *__weft_ut_lookup(pthread_t h) HIDDEN;   /* NULL unless live handle */
static inline pthread_t __weft_handle(const struct ut *t)
{
	return (pthread_t)(((uint64_t)t->gen << 32) | t->slot);
}
/* Call fn for every UT that is not FREE (deadlock reports, debuggers). */
void __weft_ut_foreach(void (*fn)(struct ut *, void *), void *ctx) HIDDEN;
uint32_t __weft_ut_slots(void) HIDDEN;

/* ---- stacks (stack.c) ---- */
/* size 0 means the default size.  0, EINVAL (size or guard overflows when
 * rounded to pages or added) or EAGAIN (no memory, address space or
 * mappings for it). */
int __weft_stack_get(struct ut_stack *s, size_t size, size_t guard) HIDDEN;
void __weft_stack_put(struct ut_stack *s) HIDDEN;
/* The same, but a mapping of its own, never a pooled stack: for the
 * runtime's own long-lived stacks (copy-stack run stacks and movers), which
 * would otherwise hold a slab of their class (and whose `index` the owner
 * may use). */
int __weft_stack_map(struct ut_stack *s, size_t size, size_t guard) HIDDEN;
/* Under Valgrind: tell it s is a UT's stack until __weft_stack_put (for a
 * stack the program supplied; __weft_stack_get does it for its own). */
void __weft_stack_vg_register(struct ut_stack *s) HIDDEN;
size_t __weft_stack_default_size(void) HIDDEN;
/* Would __weft_stack_get take this size and guard (0 or EINVAL)?  For a
 * stack not made now (a copy-stack UT's). */
int __weft_stack_check(size_t size, size_t guard) HIDDEN;
void __weft_stack_set_default_size(size_t size) HIDDEN;
/* A canary stack's canary word is intact or unreadable (the program has
 * protected that page itself); never faults.  Checked at every switch. */
bool __weft_stack_canary_ok(const struct ut_stack *s) HIDDEN;
size_t __weft_page_size(void) HIDDEN;

/* ---- life cycle (lifecycle.c) ---- */
/* What a new UT is made of (pthread_create fills it from the attributes). */
struct ut_spawn {
	void *(*start)(void *);
	void *arg;
	int policy, prio;
	bool detached, explicit_sched;
	void *stackaddr;                  /* caller's stack, or NULL */
	size_t stacksize, guardsize;      /* 0: defaults */
	uint8_t stack_mode;               /* enum weft_stack_mode_internal */
	const sigset_t *sigmask;          /* its signal mask; NULL: the creator's */
};
/* Make a UT and make it READY (running it at once if it outranks the
 * caller).  0, or EAGAIN when out of slots or memory. */
int __weft_ut_spawn(const struct ut_spawn *how, struct ut **out) HIDDEN;
/* End the running UT with `retval`: hooks.ut_exiting, wake the joiner, and
 * switch away for good; the process exits with status 0 after the last UT. */
void __weft_ut_exit(void *retval) HIDDEN __attribute__((noreturn));
/* Free the slot of an exited UT (a join collected it, or detach after exit). */
void __weft_ut_reap(struct ut *t) HIDDEN;
/* The entry of every new UT (sched.c): switch-in work, epilogue, start. */
void __weft_ut_main(void *t) HIDDEN __attribute__((noreturn));

/* ---- copy-stack UTs (copystack.c) ----
 * Marovich's second variant: UTs that share their VP's run stack, whose
 * live part is saved to a right-sized area when another UT needs the run
 * stack, and restored when the UT runs again.  The process default is
 * WEFT_STACK_MODE; an attribute may choose per UT. */
static inline bool __weft_is_copy(const struct ut *t) { return t->stack.kind == STACK_COPY; }
/* Make t a copy-stack UT on vp's run stack, its first frame in its save
 * area.  0, EINVAL (a stack size larger than the run stack) or EAGAIN. */
int __weft_cs_spawn(struct ut *t, struct vp *vp, size_t stacksize, size_t guardsize) HIDDEN;
/* t is gone (its exit's stack release, fork's child): its save area back
 * to the pool, and its run stack free if its frames were there. */
void __weft_cs_release(struct ut *t) HIDDEN;
/* next (copy-stack, chosen) cannot run now: its run stack holds the
 * frames of a UT that runs (on another VP) or is away in the kernel. */
bool __weft_cs_busy(const struct ut *next) HIDDEN;
/* UTs deferred now (weft_stats_get counts them ready). */
extern uint32_t __weft_cs_deferred HIDDEN;
/* ... so it waits (UT_DEFERRED) until that run stack is free. */
void __weft_cs_defer(struct ut *t) HIDDEN;
/* Before prev gives the VP to next: next's frames are made present on its
 * run stack, or, when prev stands on that very run stack, the switch must
 * go through the VP's mover (true: __weft_cs_switch_moved). */
bool __weft_cs_prepare(struct vp *vp, struct ut *prev, struct ut *next) HIDDEN;
void __weft_cs_switch_moved(struct vp *vp, struct ut *prev, struct ut *next) HIDDEN;
/* t, a copy-stack UT, no longer runs on its run stack (it switched away
 * to another run stack or a separate stack, or came back from the kernel):
 * the UTs deferred for that run stack are ready again (true if any). */
bool __weft_cs_left(struct ut *t) HIDDEN;
/* A handler runs over a copy-stack UT on another stack: the frames it
 * interrupted end at sp (its red zone below).  Returns the old mark. */
uintptr_t __weft_cs_offstack_enter(struct ut *t, uintptr_t sp) HIDDEN;
static inline void __weft_cs_offstack_leave(struct ut *t, uintptr_t old)
{
	if (t && __weft_is_copy(t))
		t->cs->offstack = old;
}
/* Memory for records other UTs reach while the caller waits (the I/O
 * waits', the futex emulation's, sigwait's): a copy-stack UT's stack holds
 * another UT's bytes while it waits, so its records live here instead.
 * NULL for a separate-stack UT (its stack is the place); else at least n
 * bytes, the caller's until __weft_wait_mem_put; ENOMEM-free: dies only
 * when malloc fails.  Mainline. */
void *__weft_wait_mem(struct ut *t, size_t n) HIDDEN;
void __weft_wait_mem_put(struct ut *t, void *p) HIDDEN;
/* Is p on t's stack (a copy-stack UT's run stack)? */
static inline bool __weft_cs_on_stack(const struct ut *t, const void *p)
{
	return __weft_is_copy(t) && (uintptr_t)p - (uintptr_t)t->stack.lo < (uintptr_t)t->stack.hi - (uintptr_t)t->stack.lo;
}
/* pthread_create from copy-stack UT t was given an argument on t's stack:
 * say why it is refused (once). */
void __weft_cs_refuse_arg(const struct ut *t, const void *arg) HIDDEN;
/* The address ThreadSanitizer's happens-before edges between the UTs of
 * t's run stack use (tsan.c): t's run stack. */
void *__weft_cs_hb(const struct ut *t) HIDDEN;
/* fork's child: the caller is the only UT; run stacks forget the rest. */
void __weft_cs_after_fork(struct ut *self) HIDDEN;
/* Run fn(arg) with t's frames present at their own addresses (a thread
 * dump of a parked copy-stack UT), then put back what was there.  Where
 * that cannot be done (its run stack busy on another VP), fn is not run:
 * false. */
bool __weft_cs_inspect(struct ut *t, void (*fn)(void *), void *arg) HIDDEN;

/* ---- per-UT thread-local storage (tls.c) ---- */
void __weft_tls_init(void) HIDDEN;
/* Modules were loaded (dlopen): TLS may have to become per UT. */
void __weft_tls_modules_changed(void) HIDDEN;
bool __weft_tls_per_ut(void) HIDDEN;
/* Can UTs get TLS of their own at a takeover?  Made ready on a carrier. */
bool __weft_tls_takeover_prepare(void) HIDDEN;
/* The monitor, holding the VP: turn per-UT TLS on (the running UT keeps
 * the first kernel thread's block). */
void __weft_tls_takeover_turn_on(void) HIDDEN;
/* glibc's cancellation word of the calling context (THREAD_SELF's
 * cancelhandling), or NULL when its layout is not known to hold; its
 * CANCELTYPE bit (GLIBC_CANCELTYPE) is set while libc makes one of its own
 * cancellable system calls (LIBC_CANCEL_ASYNC, glibc 2.36).  Async-signal-
 * safe. */
volatile int *__weft_tls_glibc_cancelhandling(void) HIDDEN;
/* The same word under the thread pointer tp (the monitor's look at a UT
 * away: its own thread block). */
volatile int *__weft_tls_glibc_cancelhandling_of(const void *tp) HIDDEN;
/* glibc's mark is up in that word: one of libc's own cancellable calls is
 * being made under tp (by its UT or, the word being the VP's, another). */
bool __weft_tls_glibc_marked(const void *tp) HIDDEN;
#define GLIBC_CANCELTYPE 0x02
#define GLIBC_CANCELED 0x08
#define GLIBC_EXITING 0x10
/* The slot of glibc's cleanup_jmp_buf under the thread pointer tp (read
 * through %fs by glibc's cancellation: THREAD_GETMEM), NULL when the
 * layout is not known to hold (runtime/libc_cancel.c). */
void **__weft_tls_glibc_cleanup_jmp_buf(void *tp) HIDDEN;
/* Mark the thread block tp as a threaded process's (header.multiple_threads,
 * which glibc's cancellation points test first), as glibc's pthread_cancel
 * does when a single-threaded process cancels itself. */
void __weft_tls_glibc_threaded(void *tp) HIDDEN;
/* The top of t's stack below its thread block, if the block is on the
 * stack: every frame t runs is below it. */
uintptr_t __weft_tls_stack_floor(const struct ut *t) HIDDEN;
/* Give a new UT its thread block at the top of its stack; *stack_top is
 * where its stack then starts.  0, EAGAIN or EINVAL (no room). */
int __weft_tls_attach(struct ut *t, char **stack_top) HIDDEN;
/* M:N: t's thread block names vp as glibc's thread before t runs there. */
void __weft_tls_rehome(struct ut *t, const struct vp *vp) HIDDEN;
/* A fork's child: the forking VP's identity block names the child's
 * forking kernel thread (tls.c). */
void __weft_tls_fork_identity(const struct vp *vp, pid_t parent_pid) HIDDEN;
/* A forked child: the caller's own block names the child's thread. */
void __weft_tls_fork_child(struct ut *self, const struct vp *vp) HIDDEN;
/* A UT made before UTs had TLS of their own, about to run. */
void __weft_tls_attach_late(struct ut *t) HIDDEN;
/* A new UT's thread block apart from its stack (a copy-stack UT's stack
 * is shared): 0 or EAGAIN. */
int __weft_tls_attach_apart(struct ut *t) HIDDEN;
/* A guest whose kernel thread shares another thread's block (a clone
 * without CLONE_SETTLS, guest.c): a block of its own, made apart like a
 * late UT's but naming itself as glibc's thread (THREAD_SELF is the
 * block, its tid the guest's kernel thread's), so libc's recursive locks
 * tell it from every VP's UTs.  EAGAIN without memory. */
int __weft_tls_guest_block(struct ut *g, pid_t tid) HIDDEN;
/* tp is the block of a thread glibc made for kernel thread tid: it names
 * itself and holds that tid.  A clone without CLONE_SETTLS finds its
 * creator's block (a UT's names its VP's thread, and holds its carrier's
 * tid). */
bool __weft_tls_glibc_own_block(const void *tp, pid_t tid) HIDDEN;
/* errno in the thread block tp (per-UT TLS on). */
int *__weft_tls_errno_of(void *tp) HIDDEN;
/* At exit, in the UT's own TLS: C++ thread_local destructors first ... */
void __weft_tls_exit_dtors(struct ut *self) HIDDEN;
/* ... and, after its keys' destructors, its context back to the pool. */
void __weft_tls_detach(struct ut *self) HIDDEN;
/* Is the calling kernel thread this VP's?  (glibc's THREAD_SELF for it) */
static inline bool __weft_on_vp_thread(const struct vp *vp);

/* ---- scheduler (sched.c) ---- */
/* Make t READY at the tail of its priority; no switch. */
void __weft_ready(struct ut *t) HIDDEN;
/* M:N: level 0 kept per VP from now on (mn.c, before the other VPs
 * start); a fork's child empties every VP's list (fork.c). */
void __weft_local_queues_on(struct vp *v0) HIDDEN;
void __weft_local_queues_clear(void) HIDDEN;
/* Ready at the head of its level (a SCHED_OTHER UT back from the kernel:
 * handoff.c), to run before the UTs that were already ready there. */
void __weft_ready_first(struct ut *t) HIDDEN;
/* If a ready UT outranks cur, cur goes to the head of its level and the
 * better UT runs (POSIX: a preempted thread heads its list). */
void __weft_preempt_check(void) HIDDEN;
/* Yield: cur to the tail of its level if a UT of equal or higher priority
 * is ready.  Returns at once otherwise (inline: no call when nothing is
 * ready and no timer is due). */
void __weft_yield_slow(void) HIDDEN;
/* The part after timers have run: give way to level p (>= cur's). */
void __weft_yield_level(struct vp *vp, int p) HIDDEN;
static inline int __weft_highest_ready(void);
static inline bool __weft_timers_maybe_due(void);
/* The yield itself; vp is the caller's VP (sched_yield's M:1 entry names
 * it without asking again). */
static inline void __weft_yield_on(struct vp *vp)
{
	if (unlikely(vp->inbox != NULL || (__weft_rq.timers.n != 0 && __weft_timers_maybe_due()))) {
		__weft_yield_slow();
		return;
	}
	int p = __weft_highest_ready();
	if (p >= (int)vp->cur->prio)
		__weft_yield_level(vp, p);
}
static inline void __weft_yield(void)
{
	__weft_yield_on(__weft_vp());
}
/* Run `t` next if it is READY and not of lower priority than cur; cur goes
 * to the tail of its level.  0, EAGAIN (t not ready), EPERM (lower prio). */
int __weft_yield_to(struct ut *t) HIDDEN;
/* Give up the processor: cur must already be off the ready queues
 * (BLOCKED or EXITING).  Returns when cur runs again. */
void __weft_schedule(void) HIDDEN;
/* The fork-join hand-off: name t to run next when the caller parks or
 * ends now (a join names the thread it waits for, an exit its joiner).
 * Only a hint, for the caller's next __weft_schedule on this VP: it is
 * honoured when t is still READY and the choice is free (sched.c says
 * when), and dropped by that choice either way. */
static inline void __weft_hand_to(struct vp *vp, struct ut *t)
{
	vp->hand_to = t;
}
/* Change policy/priority of any live UT, moving it within its queue as
 * pthread_setschedparam (setprio false) or pthread_setschedprio does. */
void __weft_set_sched(struct ut *t, int policy, int prio, bool setprio) HIDDEN;
/* A mutex protocol's boost or its end (sync/prio.c): t runs at `prio`
 * without a change of policy or base priority.  READY: to the head of its
 * new level if `to_head`, else the tail; BLOCKED: re-placed in its wait
 * queue; RUNNING: the number only.  Never switches: the caller calls
 * __weft_preempt_check() when done. */
void __weft_set_effective_prio(struct ut *t, int prio, bool to_head) HIDDEN;
/* Rotate cur behind the other UTs of its priority (RR slice expiry). */
void __weft_rotate(void) HIDDEN;
static inline int __weft_highest_ready(void)
{
	if (__weft_rq.ready_bits[1])
		return 127 - __builtin_clzll(__weft_rq.ready_bits[1]);
	if (__weft_rq.ready_bits[0])
		return 63 - __builtin_clzll(__weft_rq.ready_bits[0]);
	return -1;
}

/* ---- park / unpark (park.c) ---- */
/* Insert t in priority order (after every UT of its priority). */
void __weft_waitq_insert(struct waitq *q, struct ut *t) HIDDEN;
void __weft_waitq_remove(struct waitq *q, struct ut *t) HIDDEN;
/* Highest-priority, longest-waiting UT, or NULL; does not remove it. */
static inline struct ut *__weft_waitq_first(const struct waitq *q) { return q->head; }
/*
 * Block the calling UT on q (q may be NULL: a plain sleep) until
 * __weft_unpark or, when deadline >= 0, until CLOCK_MONOTONIC passes
 * deadline (ns).  Returns the value given to unpark, or ETIMEDOUT.
 * A deadline already past returns ETIMEDOUT without blocking.
 * `release`, if not NULL, is a lock the caller holds on q's object: it is
 * released once the UT is queued, so a waker that takes it finds the UT
 * there (no lost wake-up under M:N; nothing to release in M:1).
 */
int __weft_park(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj) HIDDEN;
int __weft_park_release(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj,
			struct weft_lock *release) HIDDEN;
/* Wake a parked UT with `result`; takes it off its wait queue and timer.
 * Switches at once if t outranks the caller. */
void __weft_unpark(struct ut *t, int result) HIDDEN;
/* Same, without the switch: call __weft_preempt_check after a batch. */
void __weft_unpark_nopreempt(struct ut *t, int result) HIDDEN;
/* Wake every waiter; return how many woke. */
int __weft_wake_all(struct waitq *q, int result) HIDDEN;
int __weft_wake_all_nopreempt(struct waitq *q, int result) HIDDEN;

/* ---- time and timers (timer.c) ---- */
int64_t __weft_now(void) HIDDEN;                     /* CLOCK_MONOTONIC ns */
/* Convert an absolute time on clock `clk` (REALTIME or MONOTONIC) into a
 * monotonic deadline, saturating: any time a caller can pass is "past" or
 * "never".  EINVAL for a bad clock or tv_nsec out of range. */
int __weft_abs_deadline(clockid_t clk, const struct timespec *abs, int64_t *out) HIDDEN;
int __weft_rel_deadline(const struct timespec *rel, int64_t *out) HIDDEN;
/* The time from now until `deadline` (CLOCK_MONOTONIC ns), never below
 * zero, as a relative timespec. */
static inline struct timespec __weft_time_left(int64_t deadline)
{
	int64_t left = deadline - __weft_now();
	if (left < 0)
		left = 0;
	return (struct timespec){ .tv_sec = left / 1000000000, .tv_nsec = left % 1000000000 };
}
/* Room in the timer heap for n UTs' deadlines, so that a timed wait never
 * fails for memory: EAGAIN if it cannot grow.  The check inline (every
 * create asks for one more), the growth apart. */
int __weft_timer_grow(uint32_t n) HIDDEN;
static inline int __weft_timer_reserve(uint32_t n)
{
	return likely(n <= __weft_rq.timers.cap) ? 0 : __weft_timer_grow(n);
}
void __weft_timer_add(struct ut *t, int64_t deadline) HIDDEN;
void __weft_timer_del(struct ut *t) HIDDEN;
/* Unpark every UT whose deadline has passed; returns how many. */
int __weft_timers_run(int64_t now) HIDDEN;
static inline bool __weft_timers_pending(void) { return __weft_rq.timers.n != 0; }
static inline int64_t __weft_timers_next(void) { return __weft_rq.timers.v[0]->deadline; }
/* The switch path's look at the heap (call with timers pending): -1 when
 * the earliest deadline cannot have passed yet, known from the cycle
 * counter alone; else the precise time (__weft_now) to run timers by.
 * Never late (timer.c says why). */
int64_t __weft_timers_due_now(void) HIDDEN;
/* The gate's "not yet" without a call (timer.c): while the cycle counter
 * is below this, no deadline can have passed; 0 when the gate must be
 * asked (then the counter is not read here: the gate reads it, and where
 * the gate is off for good every look is the gate's clock read anyway).
 * A yield with a sleeper pending: 42 -> 32 ns on the Xeon guest. */
extern uint64_t __weft_timer_due_cycles HIDDEN;
static inline bool __weft_timers_maybe_due(void)
{
	uint64_t due = __weft_timer_due_cycles;
	return due == 0 || __weft_arch_cycles() >= due;
}
/* At start-up: the first reading of the gate's calibration. */
void __weft_timer_gate_begin(void) HIDDEN;

/* ---- preemption (preempt.c) ---- */
void __weft_preempt_init(void) HIDDEN;
/* A UT became ready while the tick was off: start slicing. */
void __weft_preempt_arm_slow(void) HIDDEN;
/* A module was loaded (posix/dlopen.c, outside every Weft lock): rebuild
 * the table of code the tick must not preempt. */
void __weft_preempt_modules_changed(void) HIDDEN;
static inline void __weft_preempt_arm(struct vp *vp)
{
	if (unlikely(vp->tick_mode != TICK_PERIODIC) && vp->preempt_on)
		__weft_preempt_arm_slow();
}
/* A UT was just made ready (sched.c, rq_link_as): slice only if it
 * contends for the VP, with the running UT or with another ready one.
 * One made ready while the current UT parks or ends, or the VP idles,
 * runs alone next: arming, then stopping the tick at its first epilogue
 * was two timer_settime calls a wake-up (~5 us a signal from another
 * process, sig_external).  Where it is not alone after all, the switch
 * that follows sees nready (the idle context's and a home's switch arm
 * then; a UT that parked and is chosen again was linked second, nready
 * 2).  M:N keeps every VP ticking (mn.c). */
static inline void __weft_preempt_arm_ready(struct vp *vp)
{
	if (unlikely(vp->tick_mode != TICK_PERIODIC) && vp->preempt_on &&
	    (__weft_rq.nready > 1 || __weft_mn || (vp->cur && vp->cur->state == UT_RUNNING)))
		__weft_preempt_arm_slow();
}
/* A kernel thread away from the VP (monitor.c), running again: send it
 * the tick's signal, which sends it home at its next safe point. */
void __weft_preempt_kick_away(struct kt *k) HIDDEN;
/* k, away, is going home: its retry timer is stopped. */
void __weft_preempt_away_done(struct kt *k) HIDDEN;
/* A signal was deferred (signal.c, defer), and no epilogue may come for it:
 * arm the carrier's retry, which delivers it at a safe point.  Async-safe. */
void __weft_preempt_signal_deferred(struct vp *vp) HIDDEN;
/* The retry, in its handler at a PC outside Weft with no call under way:
 * hand the deferred signals back to the kernel for dispatch (signal.c).
 * True when none is left deferred. */
bool __weft_sig_redispatch(struct vp *vp, ucontext_t *uc) HIDDEN;
/* The program installed a handler (signal.c): deferred signals will want
 * the retry timer; make it where the caller carries the VP. */
void __weft_preempt_signals_installed(void) HIDDEN;
/* In a forked child: the parent's timers are gone; make new ones on use. */
void __weft_preempt_after_fork(void) HIDDEN;
/* No UT can run (each pass of the idle loop): stop the retry, and the tick
 * from the loop's second pass on (preempt.c says why not at the first). */
void __weft_preempt_idle(bool first_pass) HIDDEN;
/* The running UT parks until deadline: tick by then if a lower priority runs. */
void __weft_preempt_deadline(int64_t deadline) HIDDEN;
/* Act on a tick: called by the trampoline of a fake call, and by the
 * epilogue when a deferred tick is pending. */
void __weft_preempted(void) HIDDEN;
/* Is pc in code the tick must never interrupt (Weft, libc, ld.so, ...)?
 * Published: safe from any handler. */
bool __weft_pc_protected(uintptr_t pc) HIDDEN;
/* Is pc in no object the range table knows (a library loaded since its
 * last rebuild, past Weft's dlopen wrapper, or a JIT's code)?  Such code
 * may be a protected library's: the tick rebuilds the table before it
 * switches there (preempt.c, late_code_protected); signal delivery lets no
 * handler switch over it (signal.c).  Published: safe from any handler. */
bool __weft_pc_unknown(uintptr_t pc) HIDDEN;
/* Is pc in Weft's own text? */
bool __weft_pc_in_weft(uintptr_t pc) HIDDEN;
/* weft_timeslice_set for the runtime's own use. */
int __weft_timeslice_set(uint64_t ns) HIDDEN;
/* The tick's signal, or 0 when Weft does not slice (its handler is not
 * installed, and the signal is the program's like any other). */
int __weft_tick_signal(void) HIDDEN;

/* ---- the epilogue (epilogue.c) ----
 * Every exported call that touches runtime state runs the epilogue exactly
 * once, where it returns to its caller: it acts on a deferred tick, delivers
 * deferred signals, gives the debug schedulers their switch points and acts
 * on an armed asynchronous cancel.  One load and a branch when there is
 * nothing to do.  By construction: WEFT_CALL() at the top of the exported
 * function declares a guard whose cleanup runs the epilogue on every return
 * path (GCC's cleanup attribute; the library is built without -fexceptions,
 * so a forced unwind through the frame does not run it).  Internal callers
 * use internal functions, never exported ones, so nothing runs it twice.
 */
void __weft_epilogue_slow(enum exit_point p) HIDDEN;
static inline void __weft_epilogue(enum exit_point p)
{
	if (unlikely(__weft_vp()->exit_hook))
		__weft_epilogue_slow(p);
}
static inline void __weft_outcall_begin(struct vp *vp);
static inline uint8_t __weft_enter(void);
struct weft_call {
	uint8_t point;                    /* enum exit_point */
	uint8_t on_vp;                    /* __weft_enter's answer */
};
#define WEFT_NESTED 3                     /* __weft_enter's answer from inside Weft (below) */
/* A guest gives the VP back: true when it did (a spare carries it now). */
bool __weft_guest_leave(void) HIDDEN;
/* Weft's mappings that hold pointers to heap blocks (stacks, the UT
 * table, copy-stack areas), named to LeakSanitizer as roots when it is
 * in the process; nothing otherwise (lsan_roots.c). */
void __weft_lsan_root(const void *p, size_t size) HIDDEN;
void __weft_lsan_unroot(const void *p, size_t size) HIDDEN;
/* ---- a sanitizer runtime in the process (san_text.c) ----
 * [__weft_san_lo, __weft_san_hi): the executable range of a sanitizer
 * runtime that is a shared object of its own; 0, 0 otherwise.  Written
 * once at start-up (__weft_san_runtime_find, in __weft_init, which also
 * points that runtime's own sched_yield at the kernel's) before a second
 * kernel thread exists, read by every VP after, never written again. */
extern uintptr_t __weft_san_lo HIDDEN, __weft_san_hi HIDDEN;
void __weft_san_runtime_find(void) HIDDEN;
/* True if ra, a return address, is in the sanitizer runtime's code: the
 * call was the runtime's own, not the program's. */
static inline bool __weft_called_by_san(const void *ra)
{
	return (uintptr_t)ra - __weft_san_lo < __weft_san_hi - __weft_san_lo;
}
#if defined(__SANITIZE_ADDRESS__)
void __weft_lsan_root_fake_stack(struct ut *t, void *fake) HIDDEN;
void __weft_lsan_unroot_fake_stack(struct ut *t) HIDDEN;
#endif
#if defined(__SANITIZE_ADDRESS__) || WEFT_TSAN
/* Sanitizer builds: the epilogue of a call the sanitizer's own runtime
 * made (its symboliser's open, read, fcntl and close while it reports)
 * acts on nothing deferred — no tick, no debug switch point, no signal, no
 * cancel — and leaves it all for the next call from the program: the
 * runtime holds its locks there (the thread registry), and a UT switched
 * away holding them stops every VP at its next fiber's start or end
 * (epilogue.c).  ra: the exported function's return address. */
void __weft_epilogue_from(enum exit_point p, const void *ra) HIDDEN;
#define WEFT_CALL_EPILOGUE(p)                                            \
	do {                                                             \
		if (unlikely(__weft_vp()->exit_hook))                    \
			__weft_epilogue_from((p), __builtin_return_address(0)); \
	} while (0)
#else
#define WEFT_CALL_EPILOGUE(p) __weft_epilogue(p)
#endif
static inline __attribute__((always_inline)) void __weft_call_end(struct weft_call *c)
{
	if (likely(c->on_vp == 1)) {
		WEFT_CALL_EPILOGUE((enum exit_point)c->point);
		__weft_outcall_begin(__weft_vp());   /* back to the program's code */
	} else if (unlikely(c->on_vp == WEFT_NESTED)) {
		__weft_vp()->cur->calls_nested--;
	} else if (unlikely(c->on_vp == 2)) {
		WEFT_CALL_EPILOGUE((enum exit_point)c->point);
		if (__weft_mn) {
			/* M:N: the lock goes with the VP if the guest gives it back */
			if (!__weft_guest_leave())
				__weft_outcall_begin(__weft_vp());
			return;
		}
		__weft_outcall_begin(__weft_vp());
		__weft_guest_leave();                /* a guest gives the VP back */
	}
	/* 0: off every VP; WEFT_NESTED: the outer call leaves Weft;
	 * WEFT_PLAIN: another process in this memory */
}
static inline uint8_t __weft_enter(void);
/* WEFT_CALL's entry: __weft_enter, counting a nested call on the UT
 * (calls_nested; __weft_call_end counts it off, on whichever VP the UT
 * ends it). */
static inline __attribute__((always_inline)) uint8_t __weft_call_enter(void)
{
	uint8_t on = __weft_enter();
	if (unlikely(on == WEFT_NESTED))
		__weft_vp()->cur->calls_nested++;
	return on;
}
#define WEFT_CALL() \
	struct weft_call __weft_call __attribute__((cleanup(__weft_call_end), unused)) = { EXIT_OTHER, __weft_call_enter() }
/* After WEFT_CALL: true when the caller is not a UT on a VP but before
 * start-up or another process in this memory (the call is the kernel's:
 * nothing of the runtime may be touched, and Weft is not started). */
#define WEFT_CALL_OFF_VP() (__weft_call.on_vp == 0 || __weft_call.on_vp == WEFT_PLAIN)
/* ... true only for another process in this memory (WEFT_PLAIN). */
#define WEFT_CALL_PLAIN() (unlikely(__weft_call.on_vp == WEFT_PLAIN))
/* Return from a mutex lock: one that succeeded is mutexswitch's cue. */
#define WEFT_RETURN_LOCK(r)                                      \
	do {                                                     \
		int weft_r_ = (r);                               \
		if (weft_r_ == 0)                                \
			__weft_call.point = EXIT_MUTEX_LOCK;     \
		return weft_r_;                                  \
	} while (0)

/* ---- signals (signal.c): the program's handlers under the contract ---- */
/* sigaction for the program: its handler is run through the dispatcher. */
int __weft_sigaction(int sig, const struct sigaction *act, struct sigaction *old) HIDDEN;
/* The mask of Weft's own handlers: every signal but the synchronous ones. */
void __weft_signal_block_all(sigset_t *m) HIDDEN;
/* The kernel's sigaction, for Weft's own handlers (the tick, faults). */
int __weft_kernel_sigaction(int sig, const struct sigaction *act, struct sigaction *old) HIDDEN;
/* The program's action for sig, if it has a handler (for the tick's
 * forwarding of a same-numbered program signal). */
void __weft_signal_forward(int sig, siginfo_t *si, void *uc) HIDDEN;
/* Queue sig with `value` to kernel thread tid of this process, as
 * sigqueue does (SI_QUEUE, this pid and uid).  Raw system calls only: any
 * kernel thread may call it, from a home context or a handler.  0 or
 * -errno. */
long __weft_sigqueue_tid(pid_t tid, int sig, union sigval value) HIDDEN;
/* Install the dump signal's handler, if WEFT_DUMP_SIGNAL named one (init). */
void __weft_dump_signal_init(void) HIDDEN;
/* Deliver signals deferred while Weft's text ran (epilogue, idle). */
void __weft_signals_deliver(struct vp *vp) HIDDEN;
/* A program handler runs over protected code on this stack pointer. */
static inline bool __weft_noswitch_at(const struct vp *vp, uintptr_t sp)
{
	return vp->noswitch.sp && vp->noswitch.ut == vp->cur &&
	       sp >= vp->noswitch.lo && sp < vp->noswitch.sp;
}
/* The same for the mainline, here.  A stale mark (its handler left by
 * longjmp) is cleared when seen. */
bool __weft_noswitch_slow(struct vp *vp) HIDDEN;
static inline bool __weft_noswitch(struct vp *vp)
{
	return unlikely(vp->noswitch_set) && __weft_noswitch_slow(vp);
}
/* A program handler over protected code leaves by longjmp to `sp`. */
void __weft_noswitch_leave(uintptr_t sp) HIDDEN;
/* The program's action for sig as it set it (SIG_DFL if never). */
void __weft_sig_action(int sig, struct sigaction *a) HIDDEN;
/* Is sig's program action a handler the dispatcher runs? */
bool __weft_sig_dispatched(int sig) HIDDEN;
/* Run the program's handler for sig now, on the running UT, as a call
 * from Weft's code (sigdeliver.c does the masks around it). */
void __weft_sig_call_handler(const struct sigaction *a, int sig, siginfo_t *si, ucontext_t *uc) HIDDEN;
/* Install the dispatcher for sig although the program's action is SIG_DFL
 * or SIG_IGN (a sigwait-family call waits for it); idempotent. */
void __weft_sig_intercept(int sig) HIDDEN;
/* sig's action is SIG_DFL: do what the kernel would (ignore, stop, end). */
void __weft_sig_default(int sig) HIDDEN;
/* SA_RESETHAND fired for a delivery Weft made: the program's action is
 * SIG_DFL from now on. */
void __weft_sig_reset(int sig) HIDDEN;

/* ---- per-UT signals (sigdeliver.c): Mueller's masks, pending sets and
 * delivery by fake call.  Every call here runs on the VP's mainline (or in
 * the dispatcher when it interrupted the program's own code). ---- */
struct sig_rec {
	struct sig_rec *next;
	siginfo_t info;
	bool shared;                      /* process-directed: another UT's if this one exits */
};
struct sig_frame {                        /* a handler Weft runs on a UT */
	struct sig_frame *outer;
	uintptr_t sp;                     /* its caller's stack pointer */
	uint64_t mask;                    /* the UT's mask before it */
};
/* The main UT's signal state at start-up (its mask is the kernel's). */
void __weft_sig_init_main(struct ut *t) HIDDEN;
/* A new UT's mask: its creator's, or the attribute's; counted. */
void __weft_sig_born_slow(struct ut *t) HIDDEN;
extern uint32_t __weft_sig_masked_uts HIDDEN;   /* counted UTs with a non-empty mask */
extern uint32_t __weft_sig_counted HIDDEN;      /* UTs in the tally (every UT but guests) */
static inline void __weft_sig_born(struct ut *t, const struct ut *creator, const sigset_t *attr_mask)
{
	t->sig_mask = creator->sig_mask;
	t->sig_alt.ss_flags = SS_DISABLE;
	if (unlikely(attr_mask != NULL || t->sig_mask != 0 || __weft_sig_masked_uts != 0)) {
		if (attr_mask)
			memcpy(&t->sig_mask, attr_mask, sizeof t->sig_mask);
		__weft_sig_born_slow(t);
	} else {
		t->sig_counted = 1;
		__weft_sig_counted++;
	}
}
/* An exiting UT leaves the tally; its pending signals are dropped. */
void __weft_sig_gone(struct ut *t) HIDDEN;
/* ---- per-UT CPU clocks (cpuclock.c) ---- */
/* Charge prev its CPU time since its switch-in (switch path, cpu_acct). */
void __weft_cpu_switch(struct vp *vp, struct ut *prev) HIDDEN;
/* A new carrier: its own CPU clock is the mark from now. */
void __weft_cpu_carry(struct vp *vp) HIDDEN;
/* The clock id pthread_getcpuclockid gives for t. */
clockid_t __weft_ut_clock(const struct ut *t) HIDDEN;
/* glibc's clock_gettime (Weft exports its own, for the CPU clocks). */
int __weft_libc_clock_gettime(clockid_t clk, struct timespec *ts) HIDDEN;
/* The UT in a slot, or NULL if the slot is free or out of range. */
struct ut *__weft_ut_by_slot(uint32_t slot) HIDDEN;

/* fork's child: the caller is the process's only thread (fork.c); its
 * signal state is a new process's (nothing pending, its mask kept). */
void __weft_fork_child(struct vp *vp) HIDDEN;
void __weft_sig_fork_child(struct ut *self) HIDDEN;
/* A UT the child of fork does not have: its pending signals dropped. */
void __weft_sig_forget(struct ut *t) HIDDEN;
/* pthread_sigmask for the running UT: 0 or EINVAL. */
int __weft_sig_setmask(int how, const sigset_t *set, sigset_t *old) HIDDEN;
/* A SIGEV_THREAD_ID timer (kernel id kid) armed by UT t for itself: its
 * signal goes to t (t NULL: the timer is gone). */
void __weft_sig_timer_owner(int kid, struct ut *t) HIDDEN;
/* sigpending: the running UT's and the process's. */
void __weft_sig_pending(sigset_t *set) HIDDEN;
/* A thread-directed signal for t (pthread_kill, pthread_sigqueue, raise):
 * 0, EAGAIN (no room to queue it) or EINVAL. */
int __weft_sig_send(struct ut *t, int sig, const siginfo_t *si) HIDDEN;
/* A signal the kernel gave the carrier, with the runtime's state whole:
 * to its UT, by Mueller's rules.  uc: the dispatcher's context (the
 * handler may run at once on the running UT), or NULL (mainline). */
void __weft_sig_route(struct vp *vp, int sig, siginfo_t *si, ucontext_t *uc) HIDDEN;
/* The carrier's kernel mask as Weft keeps it (what no UT could take, what
 * is deferred, and a running handler's mask), set with no window; the
 * standard signals of `taken` (just routed from the kernel) that wait for
 * the running UT's handler stay blocked until it starts. */
void __weft_sig_kmask_sync(struct vp *vp, uint64_t taken) HIDDEN;
/* M:N: bring this carrier's kernel mask up to the process's tally, which
 * another VP may have changed (the idle loop, before it sleeps). */
void __weft_sig_kmask_refresh(struct vp *vp) HIDDEN;
/* Run the running UT's due handlers (a fake call at a safe point).  True
 * if one ran. */
bool __weft_sig_run_cur(struct vp *vp) HIDDEN;
/* A parked UT was woken with EINTR: run its handlers (park.c). */
void __weft_sig_woken(struct ut *self) HIDDEN;
/* Would the VP's running UT take sig, delivered to its carrier by the
 * kernel (it does not block it, and no UT waits for it in sigwait)?  For
 * the dispatcher over a kept blocking call (signal.c); under M:N the
 * sigwait set is another VP's to change: a hint. */
bool __weft_sig_running_takes(const struct vp *vp, int sig) HIDDEN;
/* sigwait family: the signal number taken (info filled), or -errno
 * (EAGAIN: deadline passed; EINTR: a handler ran, if `eintr`). */
int __weft_sig_wait(const sigset_t *set, siginfo_t *info, int64_t deadline, bool eintr) HIDDEN;
/* Some UT waits for a signal (sigwait & co, sigsuspend, pause). */
bool __weft_sig_waiting(void) HIDDEN;
/* sigsuspend (mask NULL: pause): park until a handler has run; EINTR. */
int __weft_sig_suspend(const sigset_t *mask) HIDDEN;
/* Swap the running UT's mask for a call's duration (ppoll, pselect,
 * epoll_pwait): set `mask`, returning the old one in *old. */
void __weft_sig_mask_swap(const sigset_t *mask, uint64_t *old) HIDDEN;
void __weft_sig_mask_restore(uint64_t old) HIDDEN;
/* sigaltstack for the running UT: 0 or an errno value. */
int __weft_sig_altstack(const stack_t *ss, stack_t *old) HIDDEN;
/* exec: the kernel thread's mask becomes the running UT's before glibc's
 * call, and the carrier's again if the call returns (posix/exec.c). */
void __weft_sig_exec_mask(void) HIDDEN;
void __weft_sig_exec_failed(void) HIDDEN;
/* A handler Weft ran on the UT leaves by longjmp to `sp`: its mask back. */
void __weft_sig_longjmp(uintptr_t sp) HIDDEN;
/* Would the last handlers run on the caller have its call restarted? */
static inline bool __weft_sig_restartable(void) { return __weft_vp()->cur->sig_restart; }
/* The signal that ended the caller's last wait (0: none known). */
static inline int __weft_sig_woken_by(void) { return __weft_vp()->cur->sig_woken; }

/* ---- debug schedulers, traces, deadlock reports (debug_sched.c) ---- */
/* Parse a WEFT_SCHED value: true if it names a policy. */
bool __weft_sched_debug_parse(const char *v) HIDDEN;
void __weft_sched_debug_init(void) HIDDEN;
/* The ready list vp takes level p's next UT from (p the top ready level):
 * rq[p], or under M:N for level 0 a VP's list (sched.c). */
struct ut *__weft_level_head(struct vp *vp, int p) HIDDEN;
/* Under SD_RANDOM / SD_PCT: choose among the UTs of the (non-empty)
 * ready list `head` (a level's list; M:N, level 0: a VP's, sched.c). */
struct ut *__weft_debug_pick(struct vp *vp, struct ut *head) HIDDEN;
void __weft_debug_created(struct ut *parent, struct ut *child) HIDDEN;
void __weft_trace_switch(struct ut *from, struct ut *to) HIDDEN;
/* The debug schedulers' switch point (the epilogue's part). */
void __weft_debug_switch_point(struct vp *vp, enum exit_point p) HIDDEN;
/* Every UT is blocked and nothing can wake one: report (if asked) and
 * abort; returns when no report is wanted. */
void __weft_deadlock(void) HIDDEN;

/* ---- invariant checks (check.c; WEFT_DEBUG builds) ---- */
#ifdef WEFT_DEBUG
void __weft_check_switch(struct vp *vp, struct ut *prev, struct ut *next) HIDDEN;
void __weft_check_state(struct ut *t, enum ut_state from, enum ut_state to) HIDDEN;
#define WEFT_STATE(t, to) (__weft_check_state((t), (enum ut_state)(t)->state, (to)), (t)->state = (uint8_t)(to))
#else
#define WEFT_STATE(t, to) ((t)->state = (uint8_t)(to))
#endif

/* ---- cancellation (posix/cancel.c owns the bits; the runtime parks) ----
 * A request sets CANCEL_PENDING; it is acted on (a forced unwind with
 * PTHREAD_CANCELED) at a cancellation point while enabled, or, for the
 * asynchronous type, as soon as the target runs: pthread_cancel sets
 * CANCEL_ARMED (counted in vp->cancel_armed, which sets vp->async_cancel
 * and so the exit hook) and the target acts when a Weft call or the
 * preemption trampoline returns into it, or inside __weft_park if it was
 * parked.  CANCEL_EXITING: acting on it or exiting; never acted on again. */
enum {
	CANCEL_PENDING = 1,      /* pthread_cancel was called */
	CANCEL_DISABLED = 2,     /* PTHREAD_CANCEL_DISABLE */
	CANCEL_ASYNC = 4,        /* PTHREAD_CANCEL_ASYNCHRONOUS */
	CANCEL_EXITING = 8,      /* unwinding or exiting */
	CANCEL_ARMED = 16,       /* async: act as soon as it runs */
};
/* Where a parked UT stands, for pthread_cancel. */
enum cancel_point {
	CP_NONE = 0,             /* not a cancellation point: only async wakes it */
	CP_WAITING,              /* at one: pthread_cancel wakes it with ECANCELED */
	CP_SATISFIED,            /* its wait is over (a condition waiter moved
				  * onto its mutex): finish without interruption */
};
static inline bool __weft_cancel_due(const struct ut *t)
{
	return (t->cancel & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_EXITING)) == CANCEL_PENDING;
}
/* A cancellation point (the caller has run __weft_ensure). */
static inline void __weft_testcancel(void)
{
	if (unlikely(__weft_cancel_due(__weft_self())))
		__weft_hooks.cancel_act();
}
/*
 * glibc's own cancellation points (libc_cancel.c): while the running UT has
 * a deferred request due, glibc's view of the VP's thread says "cancelled",
 * so a cancellation point inside libc that Weft does not wrap (the write
 * under printf) acts on it, and glibc's unwind ends in the UT's innermost
 * cleanup buffer or at the top of its stack.
 */
/* A request was made (+1) or its UT began to exit (-1). */
void __weft_libc_cancel_pending(int by) HIDDEN;
/* cur's cancellation state changed: arm or disarm for it. */
void __weft_libc_cancel_eval(struct vp *vp) HIDDEN;
void __weft_libc_cancel_disarm(struct vp *vp) HIDDEN;
/* cur becomes t (__weft_cur_set): disarm unless t is the armed UT. */
void __weft_libc_cancel_left(struct vp *vp, struct ut *t) HIDDEN;
/* M:N: t, not the caller, got a request: if another VP runs it, arm
 * there (under the runtime lock; that VP runs the program's code, and its
 * UT's libc reads the word the RMW sets after the slot). */
void __weft_libc_cancel_eval_running(struct ut *t) HIDDEN;
/* The switch's seam (sched.c, while vp->libc_cancel): next is armed once
 * its thread block names the VP (prev was disarmed as cur changed). */
void __weft_libc_cancel_switch_in(struct vp *vp, struct ut *next) HIDDEN;
/* t registered or unregistered a cleanup buffer. */
void __weft_libc_cancel_bufs_changed(struct ut *t) HIDDEN;
/* glibc's unwind reached t's innermost cleanup buffer, whose handler then
 * went on (posix/cleanup.c, __pthread_unwind_next): glibc's view is put
 * back as it was before the request. */
void __weft_libc_cancel_unwound(struct vp *vp) HIDDEN;
/* __weft_park at a cancellation point: ECANCELED at once if a request is
 * due, or when pthread_cancel wakes it; the caller then tidies up (a
 * condition wait relocks its mutex) and acts on it. */
int __weft_park_cancellable(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj) HIDDEN;

/* ---- entries into Weft and unknown blocking (monitor.c) ----
 * Every entry into Weft's code asks "does this kernel thread carry the
 * VP?": on the fast path, no takeover is under way and the stack pointer
 * lies in the running UT's stack (two loads and a compare).  The slow
 * path answers exactly: the carrier (on another stack: a signal stack, its
 * home); a kernel thread whose UT the monitor took off the VP while it sat
 * in the kernel, now back (it queues its UT and parks, and the UT goes on
 * when the VP runs it again); or a kernel thread Weft did not make
 * (glibc's pthread_create, clone). */
#define TAKE_BUSY 0x80000000u
/* A UT's vfork child runs on the VP's running UT's stack (vfork.c): every
 * entry goes the slow way, where the child's calls become plain calls. */
#define TAKE_VFORK 0x40000000u
#define TAKE_AWAY_COUNT(t) ((t) & ~(TAKE_BUSY | TAKE_VFORK))
struct kt;
enum weft_where { WHERE_VP, WHERE_AWAY, WHERE_FOREIGN, WHERE_NONE };
enum weft_where __weft_where_slow(void) HIDDEN;
/* vfork (vfork.c, arch/<isa>/vfork.S): the window's two ends, and "is the
 * caller a UT's vfork child?" (a system call, asked only on slow paths). */
int __weft_vfork_begin(void) HIDDEN;
long __weft_vfork_end(int token, long r, void *sp) HIDDEN;
void __weft_vfork_child_start(int token) HIDDEN;
bool __weft_vfork_child(const struct vp *vp) HIDDEN;
static inline bool __weft_sp_in(const struct ut *t, uintptr_t sp)
{
	return sp - (uintptr_t)t->stack.lo < (uintptr_t)t->stack.hi - (uintptr_t)t->stack.lo;
}
static inline enum weft_where __weft_where(const struct vp *vp)
{
	/* the stack pointer, not the frame address: asking for a frame made
	 * every entry set one up (a push and a move on each fast path) */
	uintptr_t sp = __weft_arch_sp_now();
	if (likely(__atomic_load_n(&vp->take, __ATOMIC_RELAXED) == 0 &&
		   sp - vp->cur_lo < vp->cur_span))
		return WHERE_VP;
	return __weft_where_slow();
}
/* cur and the stack bounds the entries test, stored together.  Only
 * __weft_cur_set, and the switch (sched.c, switch_finish), which makes
 * __weft_cur_set's libc_cancel test inside its one test of switch_care
 * (libc_cancel is one of its bytes). */
static inline void __weft_cur_store(struct vp *vp, struct ut *t)
{
	vp->cur = t;
	vp->cur_lo = t ? (uintptr_t)t->stack.lo : 0;
	vp->cur_span = t ? (uintptr_t)t->stack.hi - (uintptr_t)t->stack.lo : 0;
}
/* The one way cur changes: with the stack bounds the entries test.  A
 * UT that leaves the VP takes glibc's armed cancellation with it. */
static inline void __weft_cur_set(struct vp *vp, struct ut *t)
{
	if (unlikely(vp->libc_cancel))
		__weft_libc_cancel_left(vp, t);
	__weft_cur_store(vp, t);
}
static inline bool __weft_on_vp_thread(const struct vp *vp)
{
	return __weft_where(vp) == WHERE_VP;
}
/* Entry of an exported call (WEFT_CALL): 1 when the call runs on the VP
 * (a kernel thread back from a takeover rejoins first), 0 before start-up
 * and on kernel threads Weft did not make, 2 for such a thread given the
 * VP (guest.c), and WEFT_NESTED for a call made from inside Weft's own
 * code, in_weft set: Weft's malloc reaching an allocator that takes a
 * pthread mutex (jemalloc).  (The program's code, destructors and
 * handlers among it, runs with in_weft clear: __weft_outcall_begin.)  A
 * nested call's end does nothing:
 * the outer call's end runs the epilogue and leaves Weft.  (Its end used
 * to let the runtime lock go in the middle of the outer call, which then
 * went on beside the other VPs without it: WEFT_DEBUG's check found it in
 * tls_allocator_storm_jemalloc under two VPs.)  WEFT_NESTED is defined
 * above, beside struct weft_call. */
/* ... and WEFT_PLAIN for a call made by another process that shares this
 * memory (a UT's vfork child, runtime/vfork.c; LeakSanitizer's tracer):
 * its end does nothing, and a call that would park or switch is the
 * kernel's instead (WEFT_CALL_PLAIN). */
#define WEFT_PLAIN 4
uint8_t __weft_enter_slow(void) HIDDEN;
/*
 * M:N: the runtime lock for an entry that found the caller on its VP, in_weft
 * clear.  Until in_weft is set the monitor may take the VP (monitor.c: a
 * carrier asleep in a call that is not Weft's, in_weft clear, the lock
 * free), and the wait for the lock can sleep in such a call: under ASan a
 * new UT's first fake frame, in the lock's own functions, maps its fake
 * stack, and an mmap that waited for the kernel's mmap lock over two of
 * the monitor's looks was taken for a blocking call.  The UT then took the
 * lock away from the VP, set the in_weft of a VP another kernel thread
 * carried, and went home with the lock held: every VP waited for it for
 * good (mn_sync_across_vps under ASan, no FSGSBASE, one run in 50).  So
 * once it holds the lock, which the monitor needs to take a VP, the caller
 * asks again: false if the VP was taken meanwhile (the lock let go again;
 * the caller goes the slow way, back to a VP by __weft_away_return).
 */
static inline bool __weft_rtl_lock_entry(const struct vp *vp)
{
	__weft_rtl_lock();
	if (likely(__weft_where(vp) == WHERE_VP))
		return true;
	__weft_rtl_unlock();
	return false;
}
static inline uint8_t __weft_enter(void)
{
	struct vp *vp = __weft_vp();
	if (unlikely(__weft_where(vp) != WHERE_VP))
		return __weft_enter_slow();
	if (unlikely(vp->in_weft)) {
#ifdef WEFT_DEBUG
		if (__weft_mn)
			__weft_rtl_check_held("entry");
#endif
		return WEFT_NESTED;
	}
	if (unlikely(__weft_mn) && unlikely(!__weft_rtl_lock_entry(vp)))
		return __weft_enter_slow();
	vp->in_weft = 1;
	return 1;
}
/*
 * M:1's fast entry, for an exported call whose common case is a few loads
 * and stores of one object (an uncontended mutex): the running UT when
 * __weft_enter would find the caller its carrier on VP 0 with nothing away
 * (and so Weft started), else NULL, and the call takes the whole entry
 * (WEFT_CALL).  It writes nothing: in_weft stays clear, because its
 * readers do not need it here — the tick and the signal dispatcher test
 * the PC first, which is in Weft's text throughout such a path, and the
 * monitor looks only at a carrier asleep in the kernel, which such a path
 * never is.  It must end with WEFT_FAST_EPILOGUE, and sit in the exported
 * function itself, as WEFT_CALL does.
 */
static inline __attribute__((always_inline)) struct ut *__weft_m1_fast_self(void)
{
	struct vp *vp = &__weft_vps[0];
	if (likely(!__weft_mn && __atomic_load_n(&vp->take, __ATOMIC_RELAXED) == 0 &&
		   __weft_arch_sp_now() - vp->cur_lo < vp->cur_span)) {
		struct ut *cur = vp->cur;
		/* the span is 0 while cur is NULL (same writer, the carrier
		 * we are): the callers' NULL test folds into the one above */
		if (!cur)
			__builtin_unreachable();
		return cur;
	}
	return NULL;
}
/* The end of a call that took __weft_m1_fast_self: the epilogue, as
 * WEFT_CALL's end runs it (with in_weft set around it) when something
 * was deferred into the call. */
#define WEFT_FAST_EPILOGUE(p)                                     \
	do {                                                      \
		struct vp *vp_ = &__weft_vps[0];                  \
		if (unlikely(vp_->exit_hook)) {                   \
			vp_->in_weft = 1;                         \
			WEFT_CALL_EPILOGUE(p);                    \
			__weft_outcall_begin(__weft_vp());        \
		}                                                 \
	} while (0)
/*
 * M:1's entry for an exported call that may park or switch (a yield, a
 * create, a join, a condition or semaphore wait or wake-up), from the
 * program's code: VP 0 when __weft_m1_fast_self finds the caller its
 * carrier with nothing away, and the caller is not inside Weft already
 * (in_weft clear: WEFT_CALL would count such a call as nested).  It sets
 * in_weft, as WEFT_CALL's entry does, for the tick's and the dispatcher's
 * sake while the call's UT is switched away and back; WEFT_M1_LEAVE ends
 * it with the epilogue and clears in_weft.  That is WEFT_CALL's work
 * without its questions (its entry's M:N, guest and nested answers, its
 * cleanup's branches on them), which were a tenth of a create + join.
 * NULL: the call takes the whole entry.  Both sit in the exported
 * function itself, as WEFT_CALL does.
 */
/* __weft_m1_enter's second half, for a caller that has had
 * __weft_m1_fast_self's answer already (a fast path that found it had to
 * wait or wake someone): VP 0 with in_weft set, or NULL for a call from
 * inside Weft (WEFT_CALL then counts it as nested). */
static inline __attribute__((always_inline)) struct vp *__weft_m1_enter_known(void)
{
	struct vp *vp = &__weft_vps[0];
	if (likely(!vp->in_weft)) {
		vp->in_weft = 1;
		return vp;
	}
	return NULL;
}
static inline __attribute__((always_inline)) struct vp *__weft_m1_enter(void)
{
	return likely(__weft_m1_fast_self() != NULL) ? __weft_m1_enter_known() : NULL;
}
#define WEFT_M1_LEAVE(vp, p)                  \
	do {                                  \
		WEFT_FAST_EPILOGUE(p);        \
		(vp)->in_weft = 0;            \
	} while (0)
/*
 * The whole M:1 fast entry of an exported int call, in one place: when
 * __weft_m1_enter answers, evaluate expr (the call's body) inside the
 * entry, leave, and return its value from the exported function; else
 * fall through to the call's full entry below the macro.
 */
#define WEFT_M1_FAST_RETURN(expr)                                  \
	do {                                                       \
		struct vp *m1vp_ = __weft_m1_enter();              \
		if (likely(m1vp_)) {                               \
			int m1r_ = (expr);                         \
			WEFT_M1_LEAVE(m1vp_, EXIT_OTHER);          \
			return m1r_;                               \
		}                                                  \
	} while (0)
/* Around a call out of Weft into the program's code (a start routine, a
 * once routine, a destructor, a cleanup or signal handler): the monitor
 * may take the VP while it blocks, so Weft asks again when it returns. */
static inline void __weft_outcall_begin(struct vp *vp)
{
#ifdef WEFT_DEBUG
	if (__weft_mn)
		__weft_rtl_check_outcall(vp);
#endif
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__weft_mn) && vp->in_weft) {
		vp->in_weft = 0;
		__weft_rtl_unlock();
	} else {
		vp->in_weft = 0;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void __weft_outcall_end(void)
{
	(void)__weft_enter();
}
/* M:N: a system call that cannot block (an I/O try: RWF_NOWAIT,
 * MSG_DONTWAIT), made without the runtime lock so that the VPs' system
 * calls overlap — they are most of an I/O call's time, and under the lock
 * two VPs doing I/O ran one at a time (mn.c).  The lock is let go only by
 * the UT's outermost exported call (not while calls_nested says an outer
 * Weft sequence is under way) and on its own VP's carrier, not a guest's
 * kernel thread; the caller must hold nothing of Weft's across it but
 * what stays valid (descriptor entries are never freed: io/fd.c), and
 * reads again after it whatever another VP may have changed.  M:1: the
 * raw call. */
long __weft_mn_try_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) HIDDEN;
/* M:N: may self's call let the runtime lock go around a system call (the
 * try above, a blocking call kept on its VP: handoff.c)?  Only the UT's
 * outermost call, holding the lock, on its own VP's carrier. */
static inline bool __weft_mn_may_let_go(const struct vp *vp, const struct ut *self)
{
	return __weft_mn && vp->in_weft && __weft_on_vp_thread(vp) && !self->calls_nested && !self->guest_kt;
}
static inline long __weft_try_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	if (likely(!__weft_mn))
		return __weft_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
	return __weft_mn_try_syscall6(nr, a1, a2, a3, a4, a5, a6);
}
/* A system call on the program's behalf that may block for long where
 * Weft cannot tell ahead (a regular file, syscall() with any number): the
 * monitor may take the VP while it sleeps there, and the caller asks again
 * after it.  Carrier only; costs two stores and the entry's test. */
long __weft_arch_takeable_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) HIDDEN;
static inline long __weft_takeable_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct vp *vp = __weft_vp();
	__weft_outcall_begin(vp);
	long r = __weft_arch_takeable_syscall6(nr, a1, a2, a3, a4, a5, a6);
	__weft_outcall_end();
	return r;
}
/* Guests (guest.c): a kernel thread Weft did not make enters Weft.  2 once
 * it carries the VP as its guest UT; 0 when it cannot (it then runs the
 * call as before, unprotected: no TLS of their own for UTs here). */
uint8_t __weft_guest_enter(void) HIDDEN;
extern bool __weft_guests_ok HIDDEN;     /* start-up: guests can be made here */
/* The switch's seam for guests (sched.c, from switch_to with cur = next
 * already): prev gives the VP to next where one of them is a guest. */
void __weft_guest_switch(struct vp *vp, struct ut *prev, struct ut *next) HIDDEN;
/* M:N: the running guest parks and no UT is ready: the VP idles on a
 * spare (a guest's kernel thread runs nothing but its guest), and the
 * guest waits until it is chosen again. */
void __weft_guest_idle(struct vp *vp) HIDDEN;
/* The inbox held a guest's first request: make its UT (carrier). */
void __weft_guest_request(struct vp *vp, struct kt *k) HIDDEN;
/* A guest's handle for pthread_self (any thread). */
pthread_t __weft_guest_self(void) HIDDEN;
/* The caller is the child of a fork by a kernel thread Weft did not make
 * (__weft_proc.foreign_fork_child): true, and *self the handle that thread
 * had in the parent (its guest's, else glibc's own), as POSIX's fork
 * keeps it; false for any other caller. */
bool __weft_foreign_child_self(pthread_t *self) HIDDEN;
/* The guest UT that stands for the calling foreign kernel thread, for its
 * thread-specific values (key.c): read and written only by that kernel
 * thread, so without the VP.  Made (two handoffs) when `make` and it has
 * none yet; NULL where guests cannot be had. */
struct ut *__weft_guest_ut(bool make) HIDDEN;
/* k ends (a guest's kernel thread, after it let the VP go): its timers
 * are deleted (preempt.c). */
void __weft_preempt_forget(struct kt *k) HIDDEN;
/* Is the caller the monitor's kernel thread (never a guest)? */
bool __weft_on_monitor(void) HIDDEN;
/* The monitor: started once a second UT exists (the carrier, foreign
 * false) or a kernel thread Weft did not make first asks for the VP (that
 * thread, foreign true); until it runs, or cannot ever run, every create
 * tries (settled says it is done).  The monitor retires when the process
 * is down to one thread (monitor.c, "retirement") and writes settled false
 * then: the next create starts it again. */
extern bool __weft_monitor_settled HIDDEN;
void __weft_monitor_start(bool foreign) HIDDEN;
/* The only UT, M:1, asks the monitor to retire at once (for a call Linux
 * refuses a multithreaded process: posix/namespace.c); true once the
 * monitor and its spawner have ended, false if they stayed (not alone:
 * monitor.c) or none runs.  Waits in the kernel meanwhile. */
bool __weft_monitor_retire_now(void) HIDDEN;
/* Per-UT TLS on for a first guest (carrier), under the start's lock: a
 * foreign thread may be scanning the modules for the start meanwhile. */
void __weft_monitor_tls_on(void) HIDDEN;
void __weft_monitor_after_fork(struct vp *vp) HIDDEN;
/* The monitor sleeps without a period while every VP is idle (monitor.c,
 * quiet): nothing can block in an unwrapped call then.  Set by the
 * monitor, seq_cst, before its second look at the VPs; a VP that leaves
 * idle (sched.c, idle_end) or starts (kthread.c, take_vp) stores that,
 * fences, reads this, and if set calls __weft_monitor_unpark, which
 * clears it and wakes the monitor.  Dekker's pattern: the monitor sees
 * the VP busy, or the VP sees the monitor parked. */
extern uint32_t __weft_monitor_parked HIDDEN;
void __weft_monitor_unpark(void) HIDDEN;
static inline void __weft_monitor_check_parked(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(&__weft_monitor_parked, __ATOMIC_RELAXED)))
		__weft_monitor_unpark();
}
/* The kernel thread k (the caller) is back with its UT away: queue the UT
 * on the VP's inbox from k's home and park; returns as the UT, on the VP. */
void __weft_away_return(struct kt *k) HIDDEN;

/* ---- kernel threads and activations (kthread.c, handoff.c) ----
 * A VP is the right to run UTs; a kernel thread (struct kt) carries it.
 * docs/architecture.md ("Activations") is the design; the rules:
 *   - Exactly one kernel thread carries the VP at a time (vp->carrier,
 *     vp->tid); only the carrier's mainline touches runtime state.
 *   - A UT about to make a call known to block (__weft_blocking_begin)
 *     gives the VP to a spare kernel thread and makes the call on its own
 *     kernel thread, off the VP, with every signal blocked there and
 *     nothing of the runtime touched; back from the kernel
 *     (__weft_blocking_end) its kernel thread switches to its home
 *     context, queues the UT on the VP's inbox, wakes the carrier, and
 *     parks as a spare.  The carrier runs the UT again like any other.
 *   - glibc sees one thread per VP: UTs without TLS of their own run on
 *     the first kernel thread's thread pointer (vp->tp0) on every carrier,
 *     UTs with TLS name it as THREAD_SELF.  The carrier's own TCB is used
 *     only by its home context.
 * Timers of one kernel thread (preempt.c): the tick and retry timers
 * target it; only it programs them while it carries the VP, and it
 * disarms them before it hands the VP on. */
struct kt_timers {
	timer_t tick, retry;
	/* written once by the maker, tick and retry before it (release): the
	 * carrier's mainline, or under M:N sigaction's caller for another VP's
	 * carrier under the runtime lock (preempt.c, make_kt_timers); read by
	 * the carrier's tick handler before it arms the retry */
	bool made;
	volatile uint8_t retry_armed;     /* async: written by its tick handler */
	/* its tick handler, away, fake-called from code in no object the
	 * range table knew (preempt.c, away_tick); read and cleared by the
	 * fake call on the same kernel thread (away_late_code_protected) */
	volatile uintptr_t unknown_pc;
	int64_t first;                    /* when the tick fires first (ns) */
	uint64_t interval;                /* then every this many ns (0: one-shot) */
};

struct kt {
	pid_t tid;
	void *tp;                         /* its own thread pointer (glibc's TCB) */
	struct ut home;                   /* its home context: a stack of its own, never
					   * in the UT table; the carrier's `cur` while it
					   * chooses a UT from there.  home.sp is also read,
					   * racily, by the monitor before a takeover (a hint:
					   * whether to get a home stack ahead, monitor.c
					   * take_over; written under BUSY or by the carrier) */
	volatile uint32_t gift;           /* futex: set to 1 when the VP is handed to it */
	struct kt *volatile next_spare;   /* spare list link (kthread.c) */
	struct ut *rejoin;                /* for its home: the UT to queue on the VP */
	struct ut *volatile away;         /* its UT the monitor took off the VP while it sat
					   * in the kernel; set by the monitor, cleared by k */
	struct kt *all_next;              /* every kt Weft knows, for lookup by tid */
	/* guests (guest.c): a kernel thread Weft did not make */
	bool guest;                       /* made by glibc or clone, not by Weft */
	struct ut *gut;                   /* its guest UT, once the VP has made one */
	bool exit_hooked;                 /* glibc runs guest.c's exit at its end */
	struct ut req;                    /* its first request for the VP, queued on the inbox
					   * (req.guest_kt == this kt marks it) */
	struct kt *lend_to;               /* for its home: give the VP to this guest */
	struct ut *resume;                /* handed the VP to run this UT (already RUNNING) */
	struct kt_timers timers;
	/* a copy-stack UT's call its home makes (handoff.c, detached_call):
	 * set by the UT on k before it switches to k's home; home's alone then */
	struct {
		struct ut *x;
		struct kt *to;
		long nr, a[6];
		bool cancellable;         /* pthread_cancel may end it (handoff.c) */
	} call;
	bool spare;                       /* made by Weft (not the VP's first thread) */
	struct vp *vp;                    /* the VP handed to it (written by the giver
					   * before `gift`, read by k after it) */
};

/* A second kernel thread is about to exist: tell every TCB (tls.c). */
void __weft_tls_multiple_threads(void) HIDDEN;
/* Is handing the VP on possible at all (dynamic glibc, WEFT_ACTIVATIONS)? */
bool __weft_activations_on(void) HIDDEN;
/* The process traces another (io/child.c: it called ptrace, or a child it
 * forked asked PTRACE_TRACEME).  The kernel answers ptrace only on the
 * kernel thread that is the tracer, so from then on every VP keeps its
 * carrier: no blocking call hands its VP on (handoff.c: it blocks the VP,
 * as with WEFT_ACTIVATIONS=off) and the monitor takes none (monitor.c).
 * Set once (atomic store) by whichever UT learns it, never cleared; read
 * by each carrier before a handoff, by the monitor before a takeover, and
 * by io/child.c's waits as "this process may trace" (relaxed: a takeover the monitor began before the store may still end,
 * and a ptrace call after it then fails with ESRCH, as a call from another
 * thread of an NPTL tracer would). */
extern bool __weft_carriers_pinned HIDDEN;
void __weft_pin_carriers(void) HIDDEN;
/* The kernel thread the VP started on (kthread.c). */
void __weft_kt_init(struct vp *vp) HIDDEN;
void __weft_kt_after_fork(struct vp *vp) HIDDEN;
/* A spare kernel thread to hand the VP to, made if needed within
 * WEFT_MAX_KTHREADS; NULL when none can be had.  Carrier only. */
struct kt *__weft_kt_spare_get(void) HIDDEN;
/* The thread block that is k's own to load (kthread.c): its kt's, or for
 * a guest clone that shares its creator's block, its guest UT's. */
void *__weft_kt_own_block(const struct kt *k) HIDDEN;
/* Make sure k has a home context to return to (the VP's first thread
 * gets a small stack of its own).  0 or EAGAIN.  Whoever holds the VP (the
 * carrier, or the monitor in a takeover). */
int __weft_kt_home_ready(struct kt *k) HIDDEN;
/* The same in two steps, for the monitor, which must not get a stack
 * while it holds a takeover's BUSY (monitor.c, take_over): a home stack
 * got (0 or EAGAIN), then given to k if k has no home yet (true: used). */
int __weft_kt_home_stack_get(struct ut_stack *s) HIDDEN;
bool __weft_kt_home_adopt(struct kt *k, const struct ut_stack *s) HIDDEN;
/* ---- process-wide credentials (setxid.c) ----
 * glibc's first thread must run glibc's deferred set-up (late_init: the
 * SIGSETXID handler), which Weft's clearing of __libc_single_threaded
 * skipped: true when it has not run yet, and then the caller sets the flag
 * to 1 around glibc's pthread_create and back to 0 after.  Whoever holds
 * the VP, before Weft's first glibc thread. */
bool __weft_setxid_needs_late_init(void) HIDDEN;
void __weft_setxid_single_threaded(int v) HIDDEN;
/* After a glibc thread was made: put Weft's handler in front of glibc's. */
void __weft_setxid_glibc_ready(void) HIDDEN;
/* setuid and the rest (posix/setxid.c): make the system call nr on every
 * kernel thread of the process, then on the caller's.  0 or -errno. */
long __weft_setxid(long nr, long a, long b, long c) HIDDEN;
/* The mask a kernel thread of Weft's keeps while it runs no UT (home code,
 * a parked spare, a call made off the VP): every signal but glibc's
 * SIGSETXID (33).  setuid and its family wait until every kernel thread's
 * handler has made the call (setxid.c, and glibc's own broadcast for its
 * internal callers); one that kept it blocked made them wait for ever.
 * The handler makes one system call and touches no runtime state, so it
 * may run anywhere, home code included.  glibc's sigfillset leaves out
 * only SIGCANCEL (32), and its sigdelset refuses 33 (EINVAL, the set
 * unchanged), so the bit is cleared here.  A raw ~0 mask must stay brief. */
static inline void __weft_sigset_home(sigset_t *m)
{
	sigfillset(m);
	m->__val[0] &= ~(1ul << (33 - 1));
}
/* The carrier k lets the VP go: every signal but SIGSETXID blocked (the
 * program's mask saved into the VP when save_mask), k's timers disarmed,
 * vp->tid 0. */
void __weft_kt_let_go(struct kt *k, bool save_mask) HIDDEN;
/* k, off the VP on x's stack, switches to its home, which queues x on the
 * inbox and parks k; returns when a carrier runs x again. */
void __weft_kt_go_home(struct kt *k, struct ut *x) HIDDEN;
/* Hand the VP to k (parked spare): any kernel thread that owns the VP. */
void __weft_kt_give(struct kt *k) HIDDEN;
/* The same for a given VP (M:N: a VP's first kernel thread, mn.c). */
void __weft_kt_give_vp(struct kt *k, struct vp *vp) HIDDEN;
/* The calling kernel thread k, holding the VP, lets it go to `to` (a spare
 * or a guest, to run `run` if not NULL, else to choose) and waits until it
 * is handed the VP again (guest.c's guests); its UT cur stays as it is. */
void __weft_kt_give_and_wait(struct kt *k, struct kt *to, struct ut *run) HIDDEN;
/* Copy-stack UT x's blocking call (handoff.c): switch from x to k's home,
 * which hands the VP to `to`, makes the call nr(a) there, stores its result
 * in x->cs->result and queues x; returns when x runs again. */
void __weft_kt_call_from_home(struct kt *k, struct ut *x, struct kt *to, long nr, const long a[6],
			      bool cancellable) HIDDEN;
/* x's cancellable system call (one pthread_cancel may end), made by the
 * kernel thread k; handed: k holds no VP and blocks every signal
 * (handoff.c). */
long __weft_blocking_cancellable_call(struct ut *x, struct kt *k, bool handed, long nr, const long a[6]) HIDDEN;
/* Switch from prev to k's home, which gives the VP to k->lend_to (a guest)
 * and parks k; returns when prev runs again (guest.c). */
void __weft_kt_lend_from(struct kt *k, struct ut *prev) HIDDEN;
/* Register the calling kernel thread, which Weft did not make (guest.c). */
struct kt *__weft_kt_guest_make(pid_t tid) HIDDEN;
/* k was handed the VP: it carries now (kthread.c's carry, for a guest). */
void __weft_kt_guest_carry(struct kt *k) HIDDEN;
/* The kt of kernel thread `tid`, or NULL (any thread, signal-safe: the list
 * only grows and a kt is never freed). */
struct kt *__weft_kt_by_tid(pid_t tid) HIDDEN;
/* The kernel thread the monitor took away with x (its k->away), or NULL.
 * Any thread; the list never shrinks. */
struct kt *__weft_kt_away_with(const struct ut *x) HIDDEN;
/* The calling kernel thread is one Weft is making and its creator waits
 * (kthread.c's kts.birth); its glibc stack. */
bool __weft_kt_in_birth(void) HIDDEN;
/* Sanitizer builds: the calling kernel thread, one that never ends (made
 * by Weft, or the process's first), writes its id in the thread block it
 * runs on, whence every switch carries it (tp.h, WEFT_ARCH_KT_WORD); a
 * no-op in other builds. */
void __weft_kt_word_claim(void) HIDDEN;
/* A fork's child, before it claims its own: the word is cleared in every
 * block a kernel thread of the parent claimed (glibc gives them to the
 * child's new threads). */
void __weft_kt_words_after_fork(void) HIDDEN;
#if WEFT_ARCH_KT_WORD
/* The word stops being trusted the first time a spare carries the VP under
 * M:1 (kthread.c, carry): from then on two kernel threads may run on one
 * thread block — the VP's first, which UTs without TLS of their own share,
 * the main UT keeps when TLS turns on, and the first kernel thread's home
 * uses unless M:N or the monitor moved it (__weft_kt0_tcb_apart) — and each
 * load of it carries the loader's word into the other's view.  M:N keeps
 * every block to one kernel thread at a time, as the VP word needs (tp.h).
 * Set once, before the spare's first load, never cleared; the reader
 * (sync/key.c, any kernel thread) loads it after the word, so a word
 * written after the set is never trusted. */
extern bool __weft_kt_word_shared HIDDEN;
#endif
bool __weft_kt_birth_stack(pthread_t th, char **lo, size_t *size) HIDDEN;
/* fn on every kt (any thread). */
void __weft_kt_each(void (*fn)(struct kt *)) HIDDEN;
/* The first kernel thread's home gets a thread block apart (monitor.c). */
void __weft_kt0_tcb_apart(void) HIDDEN;
/* A spare for the monitor, which holds the VP while it takes it over. */
struct kt *__weft_kt_spare_for_monitor(void) HIDDEN;
/* A parked spare, or NULL: never makes one (the monitor's sampler, whose
 * descriptor table is its own, must not: a thread it made would share
 * that table, not the program's). */
struct kt *__weft_kt_spare_pop(void) HIDDEN;
/* Start a glibc thread for Weft's own use, every signal blocked in it
 * (the monitor).  0 or an error number.  The carrier (foreign false: the
 * TCBs are told first), or a kernel thread Weft did not make, on its own
 * thread block (foreign true). */
int __weft_kt_glibc_thread(void *(*fn)(void *), void *arg, bool foreign) HIDDEN;
/* Such a thread may end (the monitor's, when the process is down to one
 * thread: monitor.c): glibc's pthread_detach is known, and no sanitizer
 * keeps records per kernel thread.  It calls __weft_kt_glibc_thread_end,
 * which detaches it (nobody joins it), then returns from its routine. */
bool __weft_kt_glibc_thread_can_end(void) HIDDEN;
void __weft_kt_glibc_thread_end(void) HIDDEN;
/* A second kernel thread runs, or will: glibc must lock (every TCB says
 * multiple_threads).  Whoever holds the VP; once. */
void __weft_kt_multiple_threads_on(void) HIDDEN;
/* Counters for weft_stats. */
void __weft_kt_counts(uint64_t *made, uint64_t *spare) HIDDEN;

/* The blocking bracket (handoff.c) around a call known to block. */
struct weft_blocking {
	struct kt *k;                     /* the kernel thread that made the call */
	struct ut *self;
	bool handed;                      /* the VP was handed on */
	uint64_t caught;                  /* vp->async.caught before the call */
};
void __weft_blocking_begin(struct weft_blocking *b) HIDDEN;
void __weft_blocking_end(struct weft_blocking *b) HIDDEN;
/* One raw system call known to block, inside the bracket; made again
 * after an EINTR that only Weft's own signals can have caused.  Its
 * arguments must not point into a copy-stack caller's stack unless the
 * call neither waits for another UT nor writes there after it returned
 * from its entry (else __weft_blocking_call, naming them). */
long __weft_blocking_syscall6(long nr, long a, long b, long c, long d, long e, long f) HIDDEN;
/* Memory a blocking call's argument `arg` (0..5) names, `len` bytes, read
 * (IN) and/or written (OUT) by the call: for a copy-stack caller, what
 * lies on its own stack is copied off it around the call, which is then
 * made off its run stack (handoff.c, detached_call). */
enum { WEFT_BOUNCE_IN = 1, WEFT_BOUNCE_OUT = 2, WEFT_BOUNCES_MAX = 3 };
struct weft_bounce {
	uint8_t arg, dir;
	size_t len;
};
/* One attempt at the call, in the bracket (a copy-stack caller's made off
 * its run stack where the arguments allow): its result; *weft_eintr when
 * it is an EINTR only Weft's own signals can have caused.  handed_only:
 * make it only if the VP can be handed on, else return WEFT_NOT_HANDED
 * (the caller waits its own way: pfutex.c). */
#define WEFT_NOT_HANDED 1L
long __weft_blocking_call(long nr, const long args[6], const struct weft_bounce *bounces, unsigned nb,
			  bool handed_only, bool *weft_eintr) HIDDEN;
/* __weft_blocking_syscall6 with its memory named: made again after an
 * EINTR of Weft's own. */
long __weft_blocking_syscall_b(long nr, const long args[6], const struct weft_bounce *bounces, unsigned nb) HIDDEN;
/* The same for a call that is a cancellation point: a request acts before
 * the call and, sent while the call waits, ends it (EINTR) and acts. */
long __weft_blocking_cancellable_b(long nr, const long args[6], const struct weft_bounce *bounces,
				   unsigned nb) HIDDEN;
/* A cancellation point made as a takeable call (handoff.c): acts on a
 * request before it, and on one sent while the call waits, on or off the
 * VP (then the kernel ends it with EINTR).  Returns the raw result. */
long __weft_takeable_cancellable(long nr, const long a[6]) HIDDEN;
/* pthread_cancel's kick to the kernel thread tid making a cancellable
 * call for the UT it cancels (preempt.c: the tick's signal). */
void __weft_preempt_cancel_kick(pid_t tid) HIDDEN;
/* Queue the UTs back from blocking calls as ready (carrier mainline). */
void __weft_inbox_drain_slow(struct vp *vp) HIDDEN;
static inline void __weft_inbox_drain(struct vp *vp)
{
	if (unlikely(vp->inbox != NULL))
		__weft_inbox_drain_slow(vp);
}
/* The carrier becomes k's: run UTs from k's home until a UT on k comes
 * home (sched.c). */
void __weft_run_from_home(struct vp *vp, struct ut *home, struct ut *run) HIDDEN;
/* The sanitizers' fiber switch around a switch made outside switch_to. */
void __weft_san_leave(struct ut *prev, struct ut *next) HIDDEN;
/* The same for a switch made outside switch_to that also moves the thread
 * pointer to tp: the sanitizer is told on the side of the move it needs
 * (sched.c says why the order matters to ASan). */
void __weft_san_leave_to_tp(struct ut *prev, struct ut *next, void *tp) HIDDEN;
void __weft_san_enter(struct ut *self) HIDDEN;

/* ThreadSanitizer (tsan.c, the WEFT_TSAN build): fibers, and the
 * happens-before edges of Weft's objects.  Nothing in other builds. */
#if WEFT_TSAN
void __weft_tsan_init(struct ut *main_ut) HIDDEN;
void __weft_tsan_adopt_thread(struct ut *home) HIDDEN;
void __weft_tsan_tp_carry(void *tp) HIDDEN;
void __weft_tsan_leave(struct ut *prev, struct ut *next) HIDDEN;
void __weft_tsan_enter(struct ut *self) HIDDEN;
void __weft_tsan_created(struct ut *t) HIDDEN;
void *__weft_tsan_take(struct ut *t) HIDDEN;
void __weft_tsan_end(void *fiber) HIDDEN;
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define WEFT_HB_ACQUIRE(a) __tsan_acquire((void *)(a))
#define WEFT_HB_RELEASE(a) __tsan_release((void *)(a))
#else
#define WEFT_HB_ACQUIRE(a) ((void)(a))
#define WEFT_HB_RELEASE(a) ((void)(a))
#endif

/* An acquiring call's result: on success (a robust mutex's EOWNERDEAD is
 * one) what the object's last release published happens before the
 * caller's next step. */
static inline int __weft_hb_got(const void *obj, int r)
{
	if (r == 0 || r == EOWNERDEAD)
		WEFT_HB_ACQUIRE(obj);
	return r;
}

/* Every change of the thread pointer outside arch code: in the TSan build
 * the running fiber's name goes with it (tsan.c's invariant). */
static inline void __weft_tp_set(void *tp)
{
#if WEFT_TSAN
	__weft_tsan_tp_carry(tp);
#endif
	__weft_arch_tp_set(tp);
}
/* The switch-in bookkeeping of a UT resumed by another's switch (sched.c). */
void __weft_switched_in(struct vp *vp) HIDDEN;
/* The same where a guest's kernel thread goes on with its guest after it
 * waited for the VP on the guest's stack (no switch of stacks). */
void __weft_switched_in_waited(struct vp *vp) HIDDEN;
/* Tick timers (preempt.c): k gives the VP away; disarm its timers. */
void __weft_preempt_release(struct kt *k) HIDDEN;
/* ... and the kernel thread that takes it makes its own (mainline). */
void __weft_preempt_carry(void) HIDDEN;
/* Wake the carrier: a UT was queued on the inbox (any kernel thread). */
void __weft_preempt_kick(struct vp *vp) HIDDEN;

/* ---- the poller: where the idle VP waits (sched.c calls; the io layer implements) ----
 * The idle loop in sched.c is the one place the process sleeps in the
 * kernel.  Until the io layer has a UT waiting on a descriptor it sleeps
 * there as before (a futex wait on vp->wake, to the nearest deadline);
 * from then on the io layer has set __weft_poller, and whenever waiting()
 * is true the sleep is the poller's wait (src/io/poller.h has the whole
 * contract, docs/io.md the design).  waiting and wait are called on the
 * mainline, from the idle loop only, with no UT ready:
 *   waiting(vp)  some UT waits on the poller: with no timer either, the VP
 *                is not deadlocked but waits in the poller for ever.
 *   wait(vp, deadline)  sleep until a descriptor some UT waits on is
 *                ready, a signal arrives, wake(vp) is called, or
 *                CLOCK_MONOTONIC reaches `deadline` (the nearest timer;
 *                -1: none), unparking (no switch) exactly the UTs whose
 *                descriptors became ready.  Runs with vp->idle set.  A
 *                poller that keeps a poll quantum of its own in the timer
 *                heap (a VP that never idles must still poll) drops it
 *                first, so it may sleep past a `deadline` that was its own.
 *                True when a signal cut the wait short.
 *   wake(vp)     make vp's wait return at once if vp sleeps in it, or its
 *                next wait return at once if vp is about to (never lost
 *                between the VP's last look for work and its sleep).  May be
 *                called by any kernel thread, from a signal handler too:
 *                it is async-signal-safe and lock-free (atomic flags and at
 *                most one write(2) to an eventfd while the VP sleeps); it
 *                touches no runtime state.  A VP not in, and not entering,
 *                the poller's wait (running UTs, or asleep in the plain
 *                sleep above) is not disturbed beyond one wait that returns
 *                early.  preempt.c's kick calls it when a UT comes back
 *                from a call that handed the VP on (M:N will, to hand a
 *                VP work from another kernel thread).
 * __weft_poller is written once, by the mainline, before the first UT
 * parks on the poller; NULL until then: read it once (acquire) and call
 * wake only through a non-NULL value. */
struct weft_poller {
	bool (*waiting)(struct vp *vp);
	bool (*wait)(struct vp *vp, int64_t deadline);
	void (*wake)(struct vp *vp);
};
extern const struct weft_poller *__weft_poller HIDDEN;

/* ---- the runtime's own file I/O (vp.c) ----
 * open, read, write, close and pread are wrapped calls, which may
 * park the caller and run the epilogue; the runtime calls no exported Weft
 * name, so its warnings, traces, reports and /proc reads go straight to the
 * kernel.  -errno on failure. */
long __weft_kread(int fd, void *buf, size_t n) HIDDEN;
long __weft_kpread(int fd, void *buf, size_t n, long off) HIDDEN;
long __weft_kwrite(int fd, const void *buf, size_t n) HIDDEN;
long __weft_kclose(int fd) HIDDEN;
long __weft_kopen(const char *path, int flags, int mode) HIDDEN;

/* sig to the calling kernel thread, by the kernel (a raw tgkill: no
 * errno, no Weft entry): what glibc's raise does.  0 or -errno.  Any
 * kernel thread, signal handlers included. */
static inline long __weft_tgkill_self(int sig)
{
	return __weft_raw_syscall6(SYS_tgkill, __weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0),
				   __weft_raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
}

/* ---- fatal errors (fault.c) ---- */
void __weft_fault_init(void) HIDDEN;
void __weft_fault_thread_init(void) HIDDEN;   /* a spare's alternate stack */
void __weft_die(const char *fmt, ...) HIDDEN __attribute__((noreturn, format(printf, 1, 2)));

#endif
