/*
 * weft/myth.h — the Myth interface (Small & Seltzer, "Scheduler Activations
 * on BSD: Sharing Thread Management Between Kernel and Application", 1995,
 * section 3.2-3.3 and Figure 1) on Weft.
 *
 * A program written against Myth builds against this header and
 * `pkg-config --cflags --libs weft-myth`, its include line changed and
 * nothing else.  Myth threads are Weft UTs scheduled round-robin without
 * priorities (SCHED_OTHER); its locks are Weft mutexes.  docs/myth.md is the
 * full description; the paper defines no error values, so these calls
 * follow the BSD convention of their day: 0 on success, -1 (TH_ERR) with
 * errno set on failure; th_fork answers NULL and th_join TH_JOIN_FAILED.
 *
 * Invariant: this header is self-contained, C (C99 on) and C++ alike, and
 * declares nothing outside the names th_*, TH_* and (in C, unless
 * WEFT_MYTH_NO_MUTEX_NAME is defined) the paper's type name `mutex`.
 */
#ifndef WEFT_MYTH_H
#define WEFT_MYTH_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TH_ERR (-1)

/* A thread: a pointer to its thread structure (opaque).  A handle of a
 * thread that has been joined, or that never was, is refused, never
 * followed. */
typedef struct th_thread *th_thread_t;

/* What th_fork runs: func(arg), whose value th_join returns. */
typedef void *(*th_func_t)(void *);

/* Initialise the package for at most mp virtual processors (mp >= 1).
 * Weft runs one virtual processor until its M:N scheduler lands: mp is
 * recorded and the program runs correctly on one; calling th_init is
 * optional and may be repeated.  0, or -1 with errno EINVAL (mp < 1 or
 * above 1024). */
int th_init(int mp);

/* Fork a child thread running func(arg); it is ready to run and the caller
 * goes on.  The child's handle, or NULL with errno EAGAIN (no memory) or
 * EINVAL (func NULL). */
th_thread_t th_fork(th_func_t func, void *arg);

/* Wait for thread `thread` to end and return its value (what func returned,
 * or the argument of th_exit).  A thread is joined once.  TH_JOIN_FAILED
 * with errno ESRCH (no such thread, or already joined) or EDEADLK (the
 * caller itself). */
void *th_join(th_thread_t thread);
/* Never the value of a thread: a unique address. */
extern char th_join_failed__;
#define TH_JOIN_FAILED ((void *)&th_join_failed__)

/* Give the processor to the next ready thread, round-robin; go on at once
 * if none is ready.  0. */
int th_yield(void);

/* The calling thread's handle (the initial thread has one too). */
th_thread_t th_self(void);

/* Extension: end the calling thread with `value` for its joiner. */
void th_exit(void *value)
#if defined(__GNUC__) || defined(__clang__)
	__attribute__((noreturn))
#endif
	;

/* ---- locks (section 3.3, Figure 1) ---------------------------------------
 * A lock is free when all zero (static storage needs no th_mutex_init).
 * Locking a held lock waits (blocking only the caller) until it is
 * unlocked; waiters get it in the order they came.  As in Figure 1, any
 * thread may unlock a held lock, and unlocking a free lock does nothing;
 * locking a lock one already holds waits for ever, as it does in Myth. */
typedef struct th_mutex {
	pthread_mutex_t lock__;
} th_mutex_t;
#define TH_MUTEX_INITIALIZER { PTHREAD_MUTEX_INITIALIZER }

/* 0, or -1 with errno EINVAL for NULL. */
int th_mutex_init(th_mutex_t *m);
int th_mutex_lock(th_mutex_t *m);
int th_mutex_unlock(th_mutex_t *m);
/* Extensions: take the lock only if it is free (-1 with errno EBUSY if
 * not); destroy a lock no one holds or waits for (-1, EBUSY otherwise). */
int th_mutex_trylock(th_mutex_t *m);
int th_mutex_destroy(th_mutex_t *m);

#if !defined(__cplusplus) && !defined(WEFT_MYTH_NO_MUTEX_NAME)
/* Figure 1's name for the lock type: th_mutex_lock(mutex *m). */
typedef th_mutex_t mutex;
#endif

/* Any function may be forked: th_fork converts it to th_func_t, by way of
 * void (*)(void) so that -Wcast-function-type stays quiet (Myth passes one
 * word argument; a function returning nothing gives its joiner an
 * unspecified value). */
#define th_fork(func, arg) th_fork((th_func_t)(void (*)(void))(func), (arg))

#ifdef __cplusplus
}
#endif
#endif
