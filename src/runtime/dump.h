/*
 * dump.h — the thread dump (dump.c): every UT, what it waits on, and where
 * it stands, written to a file descriptor with write(2) alone.  Used by the
 * deadlock report (debug_sched.c) and by the dump signal (WEFT_DUMP_SIGNAL).
 */
#ifndef WEFT_DUMP_H
#define WEFT_DUMP_H

#include "rt.h"

enum dump_flags {
	DUMP_BACKTRACE = 1,       /* a symbolised backtrace under each UT */
	DUMP_BLOCKED_ONLY = 2,    /* only BLOCKED UTs (the deadlock report) */
};

/*
 * Print every UT (not FREE) on fd, one line each, every line starting with
 * `prefix`:
 *     <prefix>  thread 2 "alpha" waits for mutex 0x55d0c2a3a0a0 held by thread 3 "beta"
 * and, with DUMP_BACKTRACE, its frames below it.  No malloc, no stdio, no
 * lock: safe on the mainline and from a handler that interrupted the
 * program outside Weft's text (the runtime's state is then consistent).
 * The first call with DUMP_BACKTRACE must not be from a signal handler
 * unless __weft_dump_prepare ran (it loads the unwinder).
 */
void __weft_dump_threads(int fd, const char *prefix, unsigned flags) HIDDEN;

/* Load the unwinder (libgcc_s, through glibc's backtrace) now, from a
 * normal context, so that a later dump from a signal handler allocates
 * nothing.  Idempotent. */
void __weft_dump_prepare(void) HIDDEN;

/*
 * WEFT_DUMP_SIGNAL's value: "SIGQUIT", "QUIT", "SIGUSR1", "SIGRTMIN+3", a
 * number, optionally followed by ":exit".  Returns the signal, or -1 when
 * the value names no signal a dump may use (SIGKILL, SIGSTOP, the
 * synchronous faults, glibc's internal signals).  *then_exit tells whether
 * the process ends after the dump.
 */
int __weft_dump_signal_parse(const char *v, bool *then_exit) HIDDEN;

/*
 * What the dump signal does, once the runtime has decided it may act (the
 * interrupted PC was not in Weft's text, or the signal was deferred to the
 * next epilogue or the idle loop): a header line naming the signal, every
 * UT with its backtrace on stderr; then, with then_exit, the process ends
 * by the signal's default action (SIGQUIT: a core dump, where allowed).
 */
void __weft_dump_on_signal(int sig, bool then_exit) HIDDEN;

#endif
