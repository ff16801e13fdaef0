/*
 * poller.h — the poller contract: what the io layer promises the runtime,
 * and what a poller backend must provide to the io layer.  (Go's netpoll
 * contract is the model: runtime/netpoll.go, "Integrated network poller".)
 *
 * To the runtime (rt.h, struct weft_poller; sched.c's idle loop calls it):
 *   - waiting(vp) is true while some UT is parked on a descriptor.  An idle
 *     VP with no timer is then not deadlocked: it sleeps in the poller.
 *   - wait(vp, deadline) sleeps in the kernel until a descriptor some UT
 *     waits on may be ready, a signal arrives, or the deadline passes, and
 *     unparks (no switch) exactly the UTs whose descriptor and direction
 *     became ready, or the one UT a caught signal was meant for.  It never
 *     unparks a UT for another UT's descriptor, and an event for a
 *     descriptor closed since it was registered is dropped.
 *   - a VP that never idles still polls: one parked waiter at a time holds
 *     a poll quantum (IO_POLL_QUANTUM_NS) as its timer; when it expires that
 *     UT looks for readiness without sleeping and takes the quantum again.
 *     wait() drops the quantum before it sleeps (sleeping is polling) and
 *     gives it back after, if waiters remain.
 *
 * A backend provides (poller.c holds the epoll one):
 *   int backend_open(void)
 *       Create the kernel object; its descriptor (close-on-exec, moved out
 *       of the program's low numbers), or -errno.  Called at the first wait
 *       and again in a forked child, which must not share the parent's.
 *   int backend_arm(int kfd, int fd, uint64_t cookie)
 *       Watch fd for reading and writing at once, edge-triggered: from now
 *       on, every time fd becomes readable, writable, hung up or in error
 *       (and at once if it already is), report it, with cookie, at some
 *       later backend_wait — once per change, not once per wait.  0, or
 *       -errno; -EPERM means fd can never block (the caller makes the plain
 *       call).  Called once per descriptor (a descriptor that never blocks
 *       is never armed).
 *   int backend_disarm(int kfd, int fd)
 *       Stop watching fd; called before the program's close of fd.
 *   int backend_wait(int kfd, int64_t timeout_ns, const sigset_t *mask,
 *                    void (*ready)(uint64_t cookie, uint32_t io_events))
 *       Wait up to timeout_ns (-1: no limit; 0: do not sleep) with `mask`
 *       as the signal mask while sleeping (NULL: the thread's), and call
 *       ready() for each report (IO_EV_*).  The number of reports, or
 *       -EINTR when a signal handler ran first.
 * The io layer, for its part, never parks a UT on a direction without
 * having seen that direction would block after the descriptor was armed, so
 * an edge-triggered report can never be missed.
 *
 * io_uring would be a second backend behind the same four calls (a
 * multishot poll per descriptor; the wait is io_uring_enter), chosen at
 * start-up with this one as the fallback where seccomp forbids it.
 * docs/io.md says why it is not there yet.
 */
#ifndef WEFT_IO_POLLER_H
#define WEFT_IO_POLLER_H

#include "io.h"

#define IO_EV_IN 1u      /* readable (or urgent data) */
#define IO_EV_OUT 2u     /* writable */
#define IO_EV_HUP 4u     /* hang-up, peer shut down writing, or error: both directions, for good */

/* How long a VP that never idles may go without looking for readiness. */
#define IO_POLL_QUANTUM_NS 10000000ll

int __weft_io_backend_open(void) HIDDEN;
int __weft_io_backend_arm(int kfd, int fd, uint64_t cookie) HIDDEN;
int __weft_io_backend_disarm(int kfd, int fd) HIDDEN;
int __weft_io_backend_wait(int kfd, int64_t timeout_ns, const sigset_t *mask,
			   void (*ready)(uint64_t cookie, uint32_t io_events)) HIDDEN;

#endif
