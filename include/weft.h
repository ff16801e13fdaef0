/*
 * weft.h — what Weft offers beyond POSIX.
 *
 * Programs use <pthread.h>, <semaphore.h> and <sched.h> as usual; this header
 * adds Weft's own calls: version, runtime statistics, and (as they land) the
 * Xinu/Xthreads primitives.  Every call returns 0 or a POSIX error code.
 */
#ifndef WEFT_H
#define WEFT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"

/* The library's version string, e.g. "0.1.0" (may differ from the header's). */
const char *weft_version(void);

/* Counters since the process started. */
struct weft_stats {
	uint64_t threads_created;   /* pthread_create successes */
	uint64_t threads_exited;
	uint64_t threads_live;      /* UTs not yet exited, main included */
	uint64_t context_switches;  /* UT-to-UT switches */
	uint64_t parks;             /* times a UT blocked */
	uint64_t unparks;
	uint64_t timer_wakeups;     /* parks ended by a deadline */
	uint64_t idle_sleeps;       /* times the VP slept in the kernel */
	uint64_t stacks_mapped;     /* stacks obtained from the kernel */
	uint64_t stacks_reused;     /* stacks taken from the pool */
	uint64_t thread_slots;      /* size of the UT table */
	uint64_t vps;               /* virtual processors */
	/* preemption (time slicing) */
	uint64_t ticks;             /* preemption-timer signals received */
	uint64_t preemptions;       /* UTs switched out by a fake call */
	uint64_t deferrals;         /* ticks that found Weft/libc code running */
	uint64_t retries;           /* ticks that came while a deferral was pending */
	uint64_t ras_rollbacks;     /* restartable sequences restarted */
	uint64_t threads_ready;     /* UTs ready to run (M:N: or running on another VP), not counting the caller */
	uint64_t switch_points;     /* epilogues (of Weft calls, of ticks in the program's
				     * code) seen by a debug scheduler (WEFT_SCHED) */
	uint64_t signals_deferred;  /* program signals held back while Weft's own code ran */
	/* activations (docs/activations.md) */
	uint64_t handoffs;          /* the VP handed to another kernel thread before a blocking call */
	uint64_t rejoins;           /* threads back from such a call, queued to run again */
	uint64_t threads_off_vp;    /* threads in such a call now */
	uint64_t kthreads_made;     /* spare kernel threads Weft has made (WEFT_MAX_KTHREADS bounds it) */
	uint64_t kthreads_spare;    /* of those, parked now, waiting to carry the VP */
	uint64_t takeovers;         /* the VP taken by the monitor from a kernel thread that sat in
				     * the kernel in a call Weft did not wrap (WEFT_BLOCK_THRESHOLD) */
	/* copy-stack threads (WEFT_STACK_COPY below) */
	uint64_t stack_saves;       /* a copy-stack thread's frames copied off its run stack */
	uint64_t stack_restores;    /* ... and back onto it */
	uint64_t stack_bytes_copied;/* bytes those copies moved, both ways */
	/* several VPs (WEFT_VPS > 1) */
	uint64_t steals;            /* ready threads a VP took from another VP's list (level 0 is
				     * kept per VP: docs/mn.md, "Where a ready thread waits") */
};

/* Copy the counters into *stats; pass sizeof *stats. */
int weft_stats_get(struct weft_stats *stats, size_t size);

/* Counters of one thread. */
struct weft_thread_stats {
	uint64_t switch_points;     /* its epilogues seen by a debug scheduler: its Weft
				     * calls', and a tick's that interrupted its own code */
};

/* Copy `thread`'s counters into *stats; pass sizeof *stats.  ESRCH for a
 * dead or bogus handle. */
int weft_thread_stats_get(pthread_t thread, struct weft_thread_stats *stats, size_t size);

/* ---- Virtual processors (M:N) -------------------------------------------
 * Weft runs its threads on N virtual processors, each carried by a kernel
 * thread of its own (default 1: WEFT_VPS, weftrun --vps).  With N > 1 the
 * program's code runs on N cores at once; Weft's own code on one at a time
 * (docs/mn.md). */

/* Set the number of VPs (1..64) before the program's first pthread_create.
 * 0; EINVAL for 0 or more than 64; EBUSY once a second thread has been
 * made (unless n is the number in force); ENOTSUP where more than one
 * cannot run (under Valgrind, a static program, WEFT_ACTIVATIONS=off,
 * WEFT_TLS=off, a restartable sequence registered; without FSGSBASE they
 * run, each switch then a system call: docs/mn.md); EAGAIN when
 * there is no memory for the VPs' idle stacks.  If kernel threads for
 * every VP cannot be made when the second thread is, the VPs that could
 * be run (one warning line; weft_stats_get's vps says how many). */
int weft_vps_set(unsigned n);

/* ---- Preemption -------------------------------------------------------
 * SCHED_RR and SCHED_OTHER UTs are time-sliced (default 10 ms, WEFT_TIMESLICE);
 * SCHED_FIFO UTs never are.  Slicing needs libweft.so as a shared object
 * (the tick must tell Weft's code from the program's): with libweft.a it
 * is off and weft_timeslice_set answers ENOTSUP. */

/* Set the slice in ns (>= 10,000); 0 turns time slicing off. */
int weft_timeslice_set(uint64_t ns);
/* The slice in ns, 0 when slicing is off. */
uint64_t weft_timeslice_get(void);

/* Register a restartable atomic sequence (Bershad): if a tick interrupts a
 * UT with its PC in (begin, end), the PC goes back to begin.  The sequence
 * must end with its single committing store.  EINVAL for an empty range,
 * EAGAIN when the table (32 entries) is full, ENOTSUP with more than one
 * VP: a sequence is atomic on one processor only (with several, use an
 * atomic instruction). */
int weft_ras_register(const void *begin, const void *end);

/* ---- Xinu/Xthreads primitives ----------------------------------------
 * What Xinu and Xthreads (Sang, Knop & Rego, 1993) give threads beyond
 * POSIX.  Like every Weft call they return 0 or an error code.
 */

/* Events.  An event has either occurred (is set) or not.  Waiting on an
 * event that has not occurred parks the caller; setting it wakes every
 * waiter at once and leaves it set, so later waits return at once until it
 * is cleared.  All-zero (WEFT_EVENT_INITIALIZER) is a valid, clear event. */
typedef struct {
	void *__waiters;
	unsigned int __set;
	unsigned int __reserved;
} weft_event_t;
#define WEFT_EVENT_INITIALIZER { 0, 0, 0 }

int weft_event_init(weft_event_t *e);
int weft_event_destroy(weft_event_t *e);            /* EBUSY while UTs wait */
int weft_event_wait(weft_event_t *e);
/* As weft_event_wait, until abstime on clk (REALTIME or MONOTONIC):
 * ETIMEDOUT, EINVAL for a bad clock or time. */
int weft_event_timedwait(weft_event_t *e, clockid_t clk, const struct timespec *abstime);
int weft_event_set(weft_event_t *e);
int weft_event_clear(weft_event_t *e);

/* Mailboxes.  Every thread has a one-word mailbox.  Sending never blocks:
 * it fails with EAGAIN when the receiver's mailbox already holds a word
 * (Xinu's send), and ESRCH when the thread is gone.  Receiving takes the
 * caller's own word, blocking until one arrives (Xinu's receive); with a
 * relative timeout, ETIMEDOUT (recvtime); recvclr takes a word if there is
 * one and answers EAGAIN otherwise, never blocking. */
int weft_send(pthread_t thread, uintptr_t msg);
int weft_receive(uintptr_t *msg);
int weft_recvtime(uintptr_t *msg, const struct timespec *reltime);
int weft_recvclr(uintptr_t *msg);

/* Directed yield: run `thread` next, the caller going to the back of its
 * priority.  EPERM when `thread` has a lower priority than the caller (it
 * would not be chosen), EAGAIN when it is not ready to run (blocked), ESRCH
 * for a dead or bogus handle.  Yielding to oneself is a no-op. */
int weft_yield_to(pthread_t thread);

/* Ping: 0 if `thread` is alive (not yet exited), else ESRCH. */
int weft_ping(pthread_t thread);

/* ---- Stacks: separate or copied (Marovich) --------------------------
 * A thread has a stack of its own (WEFT_STACK_SEPARATE, the default), or
 * runs on a run stack it shares with other copy-stack threads
 * (WEFT_STACK_COPY): when another copy-stack thread needs the run stack,
 * the live part of its stack — the few hundred bytes a thread parked in a
 * call holds — is copied to a save area of that size, and copied back when
 * it runs again.  An idle thread then costs that, not a page or more, at
 * the price of a copy per switch between copy-stack threads.  The process
 * default is WEFT_STACK_MODE=separate|copy (weftrun --stack-mode).
 *
 * A copy-stack thread's stack addresses hold its data only while it runs:
 * no other thread may use an object on its stack (pthread_create from a
 * copy-stack thread refuses, EINVAL, an argument that points into its
 * stack).  docs/runtime.md, "Copy-stack threads", has the rest. */
#define WEFT_STACK_SEPARATE 1
#define WEFT_STACK_COPY 2
/* 0; EINVAL for a bad attribute or mode, or for WEFT_STACK_COPY on an
 * attribute that carries a stack of the program's (pthread_attr_setstack;
 * a stack set after the mode makes pthread_create answer EINVAL). */
int weft_attr_setstackmode(pthread_attr_t *attr, int mode);
/* The attribute's mode; the process default if it never set one. */
int weft_attr_getstackmode(const pthread_attr_t *attr, int *mode);

#ifdef __cplusplus
}
#endif
#endif
