/*
 * weft/xthreads.h — the Xthreads interface (Sang, Knop & Rego, "Design and
 * Implementation of a Threads Library", Purdue CSD-TR-93-043, 1993) on Weft.
 *
 * A program written against the paper's <xthreads.h> builds against this
 * header and `pkg-config --cflags --libs weft-xthreads`, its include line
 * changed and nothing else.  Every call of the paper's Table 1 is here, with
 * its return convention: XTERR (-1) when the operation fails, XTOK (Xinu's
 * OK, 1) when it succeeds, or the value the call exists to return (an event,
 * a message).  libweft-xthreads also supplies `main`: it starts Weft, makes
 * the initial thread an xthread of the default priority and runs the
 * program's `xmain(argc, argv, envp)`, as the paper's Figure 14 does.
 * docs/xthreads.md is the full description; the choices made where the
 * paper is silent are listed there.
 *
 * Invariant: this header is self-contained, C (C99 on) and C++ alike, and
 * declares nothing outside the names xthread_*, xentry, Xevent and XT*
 * (and weft_version, as <weft.h> does).
 */
#ifndef WEFT_XTHREADS_H
#define WEFT_XTHREADS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The result of every call: a machine word (the paper's XTCALL is "a
 * predefined integer type", as wide as a message, i.e. a pointer). */
typedef long XTCALL;

#define XTERR (-1)   /* the operation failed */
#define XTOK 1       /* it succeeded (Xinu's OK) */

/* A thread: a handle to its entry in the thread table.  Opaque; compare
 * with ==.  A handle never names a later thread that reuses the entry:
 * once its thread has ended every call given it answers XTERR. */
typedef struct xentry *xthread_t;

/* Xinu priorities: larger runs first; equal priorities run first-come,
 * first-served, and a running thread keeps the processor until it ends,
 * blocks or yields.  1..99, Weft's SCHED_FIFO priorities. */
#define XTHREAD_MIN_PRIO 1
#define XTHREAD_MAX_PRIO 99
#define XTHREAD_DEFAULT_PRIO 20   /* the paper's DEFAULT_PRIO */
#define XTHREAD_MAXARGS 16        /* word arguments xthread_create passes */

/* Creation attributes (the paper's second argument; NULL for defaults).
 * Zero in any field means its default. */
typedef struct xthread_attr {
	int prio;            /* XTHREAD_MIN_PRIO..XTHREAD_MAX_PRIO; 0: default */
	size_t stacksize;    /* bytes; 0: Weft's default (256 KiB, WEFT_STACK_SIZE) */
	void *stackaddr;     /* lowest address of a stack of stacksize bytes the
	                        program provides and keeps; NULL: Weft allocates */
	const char *name;    /* a name for debuggers (15 characters kept); NULL */
} xthread_attr_t;
#define XTHREAD_ATTR_INITIALIZER { 0, 0, NULL, NULL }

/* The type a thread's function is converted to; it may take up to
 * XTHREAD_MAXARGS word (integer or pointer) arguments. */
typedef void (*xthread_func_t)(void);

/* ---- creation and destruction ---------------------------------------- */

/* Create a thread running func(arg1, ..., argN), N = narg <= 16, each a
 * word (integer or pointer; the macro below converts each to long), at
 * attrp's priority or XTHREAD_DEFAULT_PRIO, and store its handle in *xptr
 * before it can run.  It is ready to run; a thread of higher priority than
 * the caller runs at once.  When func returns the thread ends (its return
 * value is ignored, as in Xinu).  XTOK, or XTERR (bad priority, narg, NULL
 * func, no memory). */
XTCALL xthread_create(xthread_t *xptr, const xthread_attr_t *attrp, xthread_func_t func,
		      int narg, ...);

/* End thread xptr at once: it runs no more of its code, even if it waits in
 * xthread_wait or xthread_receive, and its entry is free again when the
 * call returns.  Destroying oneself is xthread_exit().  XTOK; XTERR for a
 * thread that does not exist (never created, ended, already destroyed). */
XTCALL xthread_destroy(xthread_t xptr);

/* End the calling thread.  Ending the initial (xmain) thread lets the
 * others run on. */
XTCALL xthread_exit(void)
#if defined(__GNUC__) || defined(__clang__)
	__attribute__((noreturn))
#endif
	;

/* ---- control transfer -------------------------------------------------- */

/* Directed yield: run thread xptr now, the caller waiting at the back of
 * its priority.  XTOK once the caller runs again (at once for xptr == the
 * caller); XTERR, the caller going on, when xptr does not exist, is not
 * ready to run (it waits), or has a lower priority than the caller (the
 * paper: "a thread is not allowed to yield control to another thread with
 * lower priority"). */
XTCALL xthread_yield(xthread_t xptr);

/* Store the calling thread's handle in *xptr.  XTOK; XTERR for NULL. */
XTCALL xthread_self(xthread_t *xptr);

/* XTOK if thread xptr is alive, XTERR if not. */
XTCALL xthread_ping(xthread_t xptr);

/* ---- events -------------------------------------------------------------- */

/* An event: the number xthread_event() returns (0 is never an event). */
typedef XTCALL Xevent;

/* A new event that has not occurred; XTERR when none can be made. */
XTCALL xthread_event(void);
/* Wait until event e occurs: at once if it has (an event, once set, stays
 * occurred).  XTOK; XTERR for a bad e. */
XTCALL xthread_wait(Xevent e);
/* Event e occurs: every thread waiting for it is ready again, together.
 * XTOK; XTERR for a bad e. */
XTCALL xthread_set(Xevent e);
/* Extension: e has not occurred again, so later waits block.  XTOK/XTERR. */
XTCALL xthread_clear(Xevent e);

/* ---- message passing ----------------------------------------------------- */

/* Deposit the one-word message msg with thread xptr, waking it if it waits
 * in xthread_receive.  Never blocks.  XTOK; XTERR when xptr does not exist
 * or already holds a message it has not received (Xinu's send). */
XTCALL xthread_send(xthread_t xptr, XTCALL msg);
/* The caller's message, waiting until one arrives. */
XTCALL xthread_receive(void);

/* ---- priorities (extensions, Xinu's getprio and chprio) -------------------- */

/* Thread xptr's priority, or XTERR. */
XTCALL xthread_getprio(xthread_t xptr);
/* Give thread xptr priority prio; its old priority, or XTERR (no such
 * thread, prio outside 1..99).  The scheduler acts on it at once. */
XTCALL xthread_chprio(xthread_t xptr, int prio);

/* Fill *attrp with the defaults.  XTOK; XTERR for NULL. */
XTCALL xthread_attr_init(xthread_attr_t *attrp);

/* ---- the conversions xthread_create and xthread_send apply ------------------
 * The thread function is converted to xthread_func_t whatever its declared
 * type (the paper passes any function), every word argument to long (so an
 * int, a negative int or a pointer arrives whole), and a message to XTCALL.
 */
#define XT_W_(x) ((long)(x))
#define XT_N_(...) XT_N__(__VA_ARGS__, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define XT_N__(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, n, ...) n
#define XT_CAT_(a, b) XT_CAT__(a, b)
#define XT_CAT__(a, b) a##b
#define XT_M1_(x) XT_W_(x)
#define XT_M2_(x, ...) XT_W_(x), XT_M1_(__VA_ARGS__)
#define XT_M3_(x, ...) XT_W_(x), XT_M2_(__VA_ARGS__)
#define XT_M4_(x, ...) XT_W_(x), XT_M3_(__VA_ARGS__)
#define XT_M5_(x, ...) XT_W_(x), XT_M4_(__VA_ARGS__)
#define XT_M6_(x, ...) XT_W_(x), XT_M5_(__VA_ARGS__)
#define XT_M7_(x, ...) XT_W_(x), XT_M6_(__VA_ARGS__)
#define XT_M8_(x, ...) XT_W_(x), XT_M7_(__VA_ARGS__)
#define XT_M9_(x, ...) XT_W_(x), XT_M8_(__VA_ARGS__)
#define XT_M10_(x, ...) XT_W_(x), XT_M9_(__VA_ARGS__)
#define XT_M11_(x, ...) XT_W_(x), XT_M10_(__VA_ARGS__)
#define XT_M12_(x, ...) XT_W_(x), XT_M11_(__VA_ARGS__)
#define XT_M13_(x, ...) XT_W_(x), XT_M12_(__VA_ARGS__)
#define XT_M14_(x, ...) XT_W_(x), XT_M13_(__VA_ARGS__)
#define XT_M15_(x, ...) XT_W_(x), XT_M14_(__VA_ARGS__)
#define XT_M16_(x, ...) XT_W_(x), XT_M15_(__VA_ARGS__)
#define XT_M17_(x, ...) XT_W_(x), XT_M16_(__VA_ARGS__)
#define XT_WORDS_(...) XT_CAT_(XT_M, XT_CAT_(XT_N_(__VA_ARGS__), _))(__VA_ARGS__)

#define xthread_create(xptr, attrp, func, ...) \
	xthread_create((xptr), (attrp), (xthread_func_t)(func), XT_WORDS_(__VA_ARGS__))
#define xthread_send(xptr, msg) xthread_send((xptr), (XTCALL)(msg))

/* Every file that includes this header names libweft itself, so that the
 * linker keeps libweft in the program's NEEDED list, ahead of libc, in
 * whatever order -lweft and this interface's library are given (under
 * --as-needed a program that names only this interface's calls would
 * otherwise lose it, and get libc's pthread_* calls). */
const char *weft_version(void);   /* as <weft.h> declares it */
#if defined(__GNUC__) || defined(__clang__)
static const char *(*const xt_needs_weft_)(void) __attribute__((used)) = weft_version;
#endif

#ifdef __cplusplus
}
#endif
#endif
