/*
 * rt.h — the runtime's internal interface.  Nothing here is exported.
 *
 * The runtime owns user threads (UTs), the virtual processor (VP) that runs
 * them, the ready queues, wait queues (park/unpark), timers and stacks.  It
 * knows nothing of POSIX object layouts: the sync and posix layers build on
 * the calls below.
 *
 * Model (M:1).  One VP, one kernel thread.  Exactly one UT is RUNNING: the
 * VP's `cur`.  Every other live UT is in exactly one of:
 *   READY    — linked on the ready queue of its priority;
 *   BLOCKED  — linked on one wait queue (or on none while it sleeps), and in
 *              the timer heap iff it has a deadline;
 *   ZOMBIE   — exited, joinable, waiting for pthread_join; no stack.
 * A UT's q_next/q_prev links are used by whichever queue holds it, so a UT
 * can never be on two queues at once.  A UT loses the processor only where
 * runtime state is whole: inside a runtime call, or by a fake call from the
 * preemption tick, which never lands in Weft's own text (runtime/preempt.c).
 * So runtime state needs no lock and no atomic instruction: every sequence
 * below runs to completion.
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <sys/types.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
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
};

/* Why a UT is parked: kept for deadlock reports and debuggers. */
enum wait_kind {
	WAIT_NONE = 0, WAIT_SLEEP, WAIT_JOIN, WAIT_MUTEX, WAIT_COND, WAIT_RWLOCK,
	WAIT_BARRIER, WAIT_SEM, WAIT_ONCE, WAIT_EVENT, WAIT_MAILBOX, WAIT_SPIN,
	WAIT_FUTEX, WAIT_PAUSE, WAIT_OTHER,
};

struct ut;

/*
 * A wait queue: a circular doubly linked list of parked UTs, highest
 * priority first and FIFO within a priority.  `head` NULL means empty.  It is
 * one word so that it fits inside glibc's object layouts; a zeroed waitq is
 * a valid empty queue (static initialisers).
 */
struct waitq {
	struct ut *head;
};

/* Stack of one UT.  `lo` is the lowest usable byte, `hi` one past the top. */
enum stack_kind { STACK_NONE = 0, STACK_POOLED, STACK_MAPPED, STACK_USER, STACK_PROCESS };

struct ut_stack {
	char *lo, *hi;
	size_t guard;          /* bytes reserved as guard below lo (0: none) */
	uint8_t kind;
	bool canary;           /* the guard could not be protected: a canary
				* word sits at lo (checked at every switch) */
	bool mprotected;       /* guard made by mprotect (owes two mappings) */
	uint8_t index;         /* STACK_POOLED: its place in its slab */
	uint32_t slab;         /* STACK_POOLED: its slab's number */
};

struct tsd;                /* thread-specific data (sync/key.c) */

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
	uint8_t cancel;               /* CANCEL_* bits (posix/cancel.c) */
	uint8_t cancel_point;         /* enum cancel_point, while parked */
	int wake;                     /* result handed over by unpark */
	int saved_errno;              /* errno while not running */
	uint32_t slot, gen;           /* handle = gen << 32 | slot */
	uint32_t tindex;              /* timer-heap index + 1; 0: no timer */
	int64_t deadline;             /* CLOCK_MONOTONIC ns, valid iff tindex */
	uint64_t id;                  /* 1 for main, then 2, 3, ...; never reused */
	void *wait_obj;               /* what it waits on, while BLOCKED */
	void *(*start)(void *);
	void *arg;
	void *retval;
	struct waitq joinq;           /* the (one) joiner parks here */
	struct ut *joiner;
	struct ut_stack stack;
	struct tsd *tsd;
	uintptr_t mbox_msg;
	void *robust_head;            /* robust mutexes held (sync layer) */
	void *once_frames;            /* pthread_once routines running (sync/once.c) */
	void *cleanup_bufs;           /* pthread_cleanup_push buffers, innermost first (posix/cleanup.c) */
	void *cleanup_old;            /* _pthread_cleanup_push buffers, innermost first */
	void *unwind_exc;             /* pthread_exit's unwind exception, while exiting */
	uint32_t pct_prio;            /* PCT debug scheduler's priority */
	char name[16];
#if defined(__SANITIZE_ADDRESS__)
	void *asan_fake;              /* ASan's fake-stack handle while switched out */
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
	uint64_t ticks, preemptions, deferrals, retries, ras_rollbacks;
	uint64_t dispatches;           /* deferred ticks acted on when leaving Weft */
	uint64_t seeded_switches;      /* switches chosen by a debug scheduler */
};

/* Debug schedulers (Mueller's "perverted scheduling"), WEFT_SCHED. */
enum sched_debug { SD_NONE = 0, SD_MUTEXSWITCH, SD_RRSWITCH, SD_RANDOM, SD_PCT };

/* Where a Weft call returns to its caller (for the debug schedulers). */
enum exit_point { EXIT_MUTEX_LOCK, EXIT_OTHER };

/* The preemption timer's state (runtime/preempt.c). */
enum tick_mode { TICK_OFF = 0, TICK_PERIODIC, TICK_ONESHOT };

struct vp {
	struct ut *cur;
	pid_t tid;                        /* the kernel thread running this VP */
	int *errnop;                      /* this kernel thread's errno */
	uint64_t ready_bits[2];           /* bit p set iff rq[p] non-empty */
	struct ut *rq[WEFT_NPRIO];        /* circular lists, head = next to run */
	uint32_t nready;
	uint32_t live;                    /* UTs not yet exited (incl. cur) */
	struct ut *exiting;               /* exited UT whose stack awaits release */
	struct timer_heap timers;
	/* preemption (runtime/preempt.c) */
	uint8_t tick_mode;                /* enum tick_mode */
	/* Work for __weft_exit_point, tested with one load of exit_hook. */
	union {
		struct {
			volatile uint8_t dispatch_pending; /* a tick found Weft's or libc's code running */
			uint8_t sched_debug;               /* enum sched_debug (debug_sched.c) */
			volatile uint8_t async_cancel;     /* cancel_armed != 0 (posix/cancel.c) */
		};
		volatile uint32_t exit_hook;
	};
	uint32_t cancel_armed;            /* UTs with CANCEL_ARMED set */
	struct trace_buf *trace;          /* WEFT_TRACE: schedule events (debug_sched.c) */
	bool preempt_on;                  /* time slicing enabled and possible */
	uint64_t ticks;                   /* ticks so far */
	uint64_t cur_since;               /* `ticks` when cur was switched in */
	struct weft_counters stat;
};

extern struct vp __weft_vp0 HIDDEN;
extern bool __weft_started HIDDEN;

void __weft_init(void) HIDDEN;
static inline void __weft_ensure(void)
{
	if (unlikely(!__weft_started))
		__weft_init();
}
static inline struct vp *__weft_vp(void) { return &__weft_vp0; }
static inline struct ut *__weft_self(void) { return __weft_vp0.cur; }

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
size_t __weft_stack_default_size(void) HIDDEN;
void __weft_stack_set_default_size(size_t size) HIDDEN;
/* A canary stack's canary word is intact or unreadable (the program has
 * protected that page itself); never faults.  Checked at every switch. */
bool __weft_stack_canary_ok(const struct ut_stack *s) HIDDEN;
size_t __weft_page_size(void) HIDDEN;

/* ---- scheduler (sched.c) ---- */
/* Make t READY at the tail of its priority; no switch. */
void __weft_ready(struct ut *t) HIDDEN;
/* If a ready UT outranks cur, cur goes to the head of its level and the
 * better UT runs (POSIX: a preempted thread heads its list). */
void __weft_preempt_check(void) HIDDEN;
/* Yield: cur to the tail of its level if a UT of equal or higher priority
 * is ready.  Returns at once otherwise. */
void __weft_yield(void) HIDDEN;
/* Run `t` next if it is READY and not of lower priority than cur; cur goes
 * to the tail of its level.  0, EAGAIN (t not ready), EPERM (lower prio). */
int __weft_yield_to(struct ut *t) HIDDEN;
/* Give up the processor: cur must already be off the ready queues
 * (BLOCKED or EXITING).  Returns when cur runs again. */
void __weft_schedule(void) HIDDEN;
/* Change policy/priority of any live UT, moving it within its queue as
 * pthread_setschedparam (setprio false) or pthread_setschedprio does. */
void __weft_set_sched(struct ut *t, int policy, int prio, bool setprio) HIDDEN;
/* Switch-in bookkeeping a new UT runs before its start routine. */
void __weft_switched_in(void) HIDDEN;

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
 */
int __weft_park(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj) HIDDEN;
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
 * monotonic deadline.  EINVAL for a bad clock or tv_nsec out of range. */
int __weft_abs_deadline(clockid_t clk, const struct timespec *abs, int64_t *out) HIDDEN;
int __weft_rel_deadline(const struct timespec *rel, int64_t *out) HIDDEN;
int __weft_timer_reserve(uint32_t n) HIDDEN;          /* EAGAIN */
void __weft_timer_add(struct ut *t, int64_t deadline) HIDDEN;
void __weft_timer_del(struct ut *t) HIDDEN;
/* Unpark every UT whose deadline has passed; returns how many. */
int __weft_timers_run(int64_t now) HIDDEN;
static inline bool __weft_timers_pending(void) { return __weft_vp0.timers.n != 0; }
static inline int64_t __weft_timers_next(void) { return __weft_vp0.timers.v[0]->deadline; }

/* ---- preemption (preempt.c) ---- */
void __weft_preempt_init(void) HIDDEN;
/* A UT became ready while the tick was off: start slicing. */
void __weft_preempt_arm_slow(void) HIDDEN;
static inline void __weft_preempt_arm(void)
{
	if (unlikely(__weft_vp0.tick_mode != TICK_PERIODIC) && __weft_vp0.preempt_on)
		__weft_preempt_arm_slow();
}
/* No UT can run: stop the tick before the VP sleeps in the kernel. */
void __weft_preempt_idle(void) HIDDEN;
/* The running UT parks until deadline: tick by then if a lower priority runs. */
void __weft_preempt_deadline(int64_t deadline) HIDDEN;
/* Act on a tick that was deferred (called when leaving Weft, and by the
 * trampoline of a fake call). */
void __weft_preempted(void) HIDDEN;
/*
 * Called where a Weft call returns to its caller: acts on a deferred tick
 * (DESIGN.md: "every return from Weft to its caller checks that mark") and
 * gives the debug schedulers their switch points.  One load and a branch.
 */
void __weft_exit_point_slow(enum exit_point p) HIDDEN;
static inline void __weft_exit_point(enum exit_point p)
{
	if (unlikely(__weft_vp0.exit_hook))
		__weft_exit_point_slow(p);
}
/* `return __weft_exit_with(r);` at the end of an entry point. */
static inline int __weft_exit_with(int r)
{
	__weft_exit_point(EXIT_OTHER);
	return r;
}
/* The same for a mutex lock: a successful one is mutexswitch's cue. */
static inline int __weft_exit_lock(int r)
{
	__weft_exit_point(r == 0 ? EXIT_MUTEX_LOCK : EXIT_OTHER);
	return r;
}
static inline int __weft_highest_ready(void)
{
	const struct vp *vp = &__weft_vp0;
	if (vp->ready_bits[1])
		return 127 - __builtin_clzll(vp->ready_bits[1]);
	if (vp->ready_bits[0])
		return 63 - __builtin_clzll(vp->ready_bits[0]);
	return -1;
}
/* Rotate cur behind the other UTs of its priority (RR slice expiry). */
void __weft_rotate(void) HIDDEN;

/* ---- debug schedulers, traces, deadlock reports (debug_sched.c) ---- */
/* Parse a WEFT_SCHED value: true if it names a policy (then in force). */
bool __weft_sched_debug_parse(const char *v) HIDDEN;
void __weft_sched_debug_init(void) HIDDEN;
/* schedule() under SD_RANDOM / SD_PCT: choose among the UTs ready at p. */
struct ut *__weft_debug_pick(int p) HIDDEN;
void __weft_debug_created(struct ut *parent, struct ut *child) HIDDEN;
void __weft_trace_switch(struct ut *from, struct ut *to) HIDDEN;
/* Every UT is blocked and nothing can wake one: report (if asked) and
 * abort; returns when no report is wanted. */
void __weft_deadlock(void) HIDDEN;
/* sync/describe.c: who holds what t waits on (mutex owner, rwlock writer). */
struct ut *__weft_wait_holder(const struct ut *t) HIDDEN;

/* ---- thread exit (posix/pthread_exit.c) and key destructors (sync/key.c) ---- */
void __weft_tsd_run_destructors(struct ut *t) HIDDEN;
void __weft_tsd_release(struct ut *t) HIDDEN;
void __weft_once_abandon(struct ut *t) HIDDEN;
void __weft_exit_current(void *retval) HIDDEN __attribute__((noreturn));
/* pthread_exit: run cleanup handlers and C++ destructors by a forced
 * unwind of the caller's stack, then __weft_exit_current (posix/cleanup.c). */
void __weft_unwind_exit(void *retval) HIDDEN __attribute__((noreturn));

/* ---- cancellation (posix/cancel.c) ----
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
/* Act on the caller's cancellation request: unwind, never return. */
void __weft_cancel_act(void) HIDDEN __attribute__((noreturn));
static inline bool __weft_cancel_due(const struct ut *t)
{
	return (t->cancel & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_EXITING)) == CANCEL_PENDING;
}
/* A cancellation point (the caller has run __weft_ensure). */
static inline void __weft_testcancel(void)
{
	if (unlikely(__weft_cancel_due(__weft_self())))
		__weft_cancel_act();
}
/* __weft_park at a cancellation point: ECANCELED at once if a request is
 * due, or when pthread_cancel wakes it; the caller then tidies up (a
 * condition wait relocks its mutex) and calls __weft_cancel_act. */
int __weft_park_cancellable(struct waitq *q, int64_t deadline, enum wait_kind kind, void *obj) HIDDEN;
/* Where an armed asynchronous request may be acted on (vp->async_cancel). */
void __weft_cancel_async_point(void) HIDDEN;
/* The UT is unwinding or exiting: no request is acted on any more. */
void __weft_cancel_exiting(struct ut *self) HIDDEN;

/* ---- robust mutexes (sync layer): called at exit with the dead owner ---- */
void __weft_robust_owner_died(struct ut *t) HIDDEN;

/* ---- WEFT_* environment (posix/env.c): read once by __weft_init ---- */
void __weft_env_init(void) HIDDEN;
uint64_t __weft_env_timeslice_ns(void) HIDDEN;   /* 0: no time slicing */
int __weft_env_preempt_signal(void) HIDDEN;

/* ---- pause (posix/pause.c) ---- */
bool __weft_pausers(void) HIDDEN;        /* UTs wait in pause() */
void __weft_signal_caught(void) HIDDEN;  /* end every pause() with EINTR */

/* ---- fatal errors (fault.c) ---- */
void __weft_fault_init(void) HIDDEN;
void __weft_die(const char *fmt, ...) HIDDEN __attribute__((noreturn, format(printf, 1, 2)));

#endif
