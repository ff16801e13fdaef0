/*
 * valgrind_req.h — Valgrind's client requests, or nothing.
 *
 * Owns: the one place Valgrind's headers are included.  Weft tells
 * Valgrind what its emulated CPU cannot see for itself: which memory is a
 * UT's stack (so a switch is taken for a switch, not for a huge stack
 * frame: runtime/stack.c) and the words a fake call writes below a UT's
 * stack pointer (arch.c).  Invariant: every request is made only when
 * __weft_arch_valgrind is set (arch.c asks RUNNING_ON_VALGRIND once, at
 * start-up), so a native run pays one well-predicted branch where a request
 * could be, never the request's magic instruction sequence, and no request
 * is on the context switch's path.  Built without the headers (Debian's
 * `valgrind` package has them), every request is 0 and Weft does not know
 * it runs under Valgrind: it would use wrfsbase, which Valgrind's CPU does
 * not decode (SIGILL) — CMake says so when it configures.
 */
#ifndef WEFT_VALGRIND_REQ_H
#define WEFT_VALGRIND_REQ_H

#if defined(__has_include) && __has_include(<valgrind/valgrind.h>) && __has_include(<valgrind/memcheck.h>)
#include <valgrind/valgrind.h>
#include <valgrind/memcheck.h>
#define WEFT_HAVE_VALGRIND 1
#if __has_include(<valgrind/helgrind.h>) && __has_include(<valgrind/drd.h>)
#include <valgrind/helgrind.h>
#include <valgrind/drd.h>
/* Helgrind and DRD: do not check [p, p + n).  For the runtime's own
 * tables, whose readers on other kernel threads (the monitor, a spare
 * being born) are named next to each field and synchronise by atomics and
 * the runtime lock, which neither tool models; the program's memory stays
 * checked.  Other tools ignore both requests. */
#define WEFT_VG_UNCHECKED(p, n)                                          \
	do {                                                             \
		VALGRIND_HG_DISABLE_CHECKING((p), (n));                  \
		ANNOTATE_BENIGN_RACE_SIZED((p), (n), "Weft runtime state"); \
	} while (0)
#endif
#else
#define WEFT_HAVE_VALGRIND 0
#define RUNNING_ON_VALGRIND 0
#define VALGRIND_STACK_REGISTER(lo, hi) 0u
#define VALGRIND_STACK_DEREGISTER(id) ((void)(id))
#define VALGRIND_MAKE_MEM_NOACCESS(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)(p), (void)(n))
#endif

#ifndef WEFT_VG_UNCHECKED
#define WEFT_VG_UNCHECKED(p, n) ((void)(p), (void)(n))
#endif

#include <stdbool.h>

/* Running under Valgrind (arch.c); never changes after __weft_arch_init. */
extern bool __weft_arch_valgrind __attribute__((visibility("hidden")));

#endif
