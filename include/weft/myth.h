/*
 * weft/myth.h — the Myth interface (Small & Seltzer, "Scheduler Activations
 * on BSD: Sharing Thread Management Between Kernel and Application", 1995,
 * section 3.2-3.3 and Figure 1) on Weft.
 *
 * A program written against Myth builds against this header and
 * `pkg-config --cflags --libs weft-myth`, its include line changed and
 * nothing else.  Myth threads are Weft UTs scheduled round-robin without
 * priorities or time slicing (all at SCHED_FIFO 1: th_init and th_fork move
 * the caller there, children inherit it); its locks are Weft mutexes.
 * docs/myth.md is the full description; the paper defines no error values,
 * so these calls follow the BSD convention of their day: 0 on success, -1
 * (TH_ERR) with errno set on failure; th_fork answers NULL and th_join
 * TH_JOIN_FAILED.
 *
 * Invariant: this header is self-contained, C (C99 on) and C++ alike, and
 * declares nothing outside the names th_*, TH_* and (in C, unless
 * WEFT_MYTH_NO_MUTEX_NAME is defined) the paper's type name `mutex` (and
 * weft_version, as <weft.h> does); an inline call behaves exactly as the
 * library's function of the same name.
 */
#ifndef WEFT_MYTH_H
#define WEFT_MYTH_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

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

/* Initialise the package for at most mp virtual processors (mp >= 1), and
 * make the caller a Myth thread (SCHED_FIFO 1, unless it is FIFO or RR).
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
 * if none is ready.  Nothing else takes the processor from a Myth thread
 * (no time slicing), so between two yields or waits a thread runs alone.
 * 0. */
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

/* The lock calls and th_self are inline here, over the pthread calls that
 * are their bodies (an uncontested lock is "a handful of instructions", as
 * the paper wants); libweft-myth still defines each, for &th_mutex_lock and
 * dlsym, with these same bodies, so the two cannot differ.
 * WEFT_MYTH_NO_INLINE makes the names the library's functions.  th_yield is
 * not inline: glibc declares sched_yield a leaf, which would let the
 * compiler keep a file's static variables in registers across the yield,
 * while the other threads change them; a call into the library is opaque. */
static inline int th_call_result__(int e)
{
	if (e) {
		errno = e;
		return TH_ERR;
	}
	return 0;
}
static inline int th_mutex_lock_inline__(th_mutex_t *m)
{
	return th_call_result__(m ? pthread_mutex_lock(&m->lock__) : EINVAL);
}
static inline int th_mutex_unlock_inline__(th_mutex_t *m)
{
	return th_call_result__(m ? pthread_mutex_unlock(&m->lock__) : EINVAL);
}
static inline int th_mutex_trylock_inline__(th_mutex_t *m)
{
	return th_call_result__(m ? pthread_mutex_trylock(&m->lock__) : EINVAL);
}
static inline th_thread_t th_self_inline__(void)
{
	return (th_thread_t)(uintptr_t)pthread_self();
}
#if !defined(WEFT_MYTH_NO_INLINE)
#define th_mutex_lock(m) th_mutex_lock_inline__(m)
#define th_mutex_unlock(m) th_mutex_unlock_inline__(m)
#define th_mutex_trylock(m) th_mutex_trylock_inline__(m)
#define th_self() th_self_inline__()
#endif

/* Any function may be forked: th_fork converts it to th_func_t, by way of
 * void (*)(void) so that -Wcast-function-type stays quiet (Myth passes one
 * word argument; a function returning nothing gives its joiner an
 * unspecified value). */
#define th_fork(func, arg) th_fork((th_func_t)(void (*)(void))(func), (arg))

/* Every file that includes this header names libweft itself, so that the
 * linker keeps libweft in the program's NEEDED list, ahead of libc, in
 * whatever order -lweft and this interface's library are given (under
 * --as-needed a program that names only this interface's calls would
 * otherwise lose it, and get libc's pthread_* calls). */
const char *weft_version(void);   /* as <weft.h> declares it */
#if defined(__GNUC__) || defined(__clang__)
static const char *(*const th_needs_weft__)(void) __attribute__((used)) = weft_version;
#endif

#ifdef __cplusplus
}
#endif
#endif
