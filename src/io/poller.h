/*
 * poller.h — the poller contract, written as an interface: what the poller
 * promises the runtime, what it promises the rest of the io layer, and
 * what a backend must provide.  (Go's netpoll contract is the model:
 * runtime/netpoll.go, "Integrated network poller"; netpollinit, open,
 * close, netpoll(delta), netpollBreak, IsPollDescriptor map onto
 * backend_open, arm, disarm, wait, wake and __weft_io_fd_is_weft.)
 *
 * 1. To the runtime (rt.h, struct weft_poller; sched.c's idle loop calls
 *    waiting and wait on the VP's mainline; anyone may call wake):
 *   - waiting(vp) is true while some UT is parked on a descriptor.  An idle
 *     VP with no timer is then not deadlocked: it sleeps in the poller.
 *   - wait(vp, deadline) sleeps in the kernel until a descriptor some UT
 *     waits on may be ready, a signal arrives, wake(vp) is called, or the
 *     deadline passes, and unparks (no switch) exactly the UTs whose
 *     descriptor and direction became ready (a program signal that ends a
 *     wait is routed to its UT by runtime/sigdeliver.c, not here).  It never unparks a UT for another UT's descriptor,
 *     and an event for a descriptor closed since it was registered is
 *     dropped.  True when a signal ended the sleep.
 *   - wake(vp), from any kernel thread or signal handler: the VP's wait
 *     returns at once, or its next one does if the VP is between its last
 *     look for work and the sleep (wake_req, below, closes that window).
 *     Async-signal-safe, lock-free; one eventfd write at most per sleep.
 *   - a VP that never idles still polls: one parked waiter at a time holds
 *     a poll quantum (IO_POLL_QUANTUM_NS) as its timer; when it expires that
 *     UT looks for readiness without sleeping and takes the quantum again.
 *     wait() drops the quantum before it sleeps (sleeping is polling) and
 *     gives it back after, if waiters remain.
 *
 * 2. To the io layer (io.h): __weft_io_register arms a descriptor once per
 *    generation of its number, __weft_io_unregister disarms it before the
 *    program's close; readiness comes back as __weft_io_event(fd, gen,
 *    events) calls made inside wait() or __weft_io_poll_now(), never at any
 *    other time, so between two of them the io layer's state changes only
 *    by its own calls (M:1: no lock).  The io layer, for its part, never
 *    parks a UT on a direction without having seen, after the descriptor
 *    was armed, that the direction would block; so with edge-triggered
 *    reports no readiness can be missed.
 *
 * 3. A backend provides (poller.c holds the epoll one):
 *   int backend_open(void)
 *       Create the kernel object and the wake channel; the object's
 *       descriptor (close-on-exec, moved above the program's low numbers),
 *       or -errno.  Called at the first wait, and again in a forked child,
 *       which must not share the parent's.
 *   int backend_arm(int kfd, int fd, uint64_t cookie)
 *       Watch fd for reading and writing at once, edge-triggered: from now
 *       on, every time fd becomes readable, writable, hung up or in error
 *       (and at once if it already is), report it, with cookie, at some
 *       later backend_wait — once per change, not once per wait.  0, or
 *       -errno; -EPERM means fd can never block (the caller makes the plain
 *       call).  Called once per generation of a descriptor number.
 *   int backend_disarm(int kfd, int fd)
 *       Stop watching fd; called before the program's close of fd.
 *   int backend_wait(int kfd, int64_t timeout_ns, const sigset_t *mask,
 *                    void (*ready)(uint64_t cookie, uint32_t io_events))
 *       Wait up to timeout_ns (-1: no limit; 0: do not sleep) with `mask`
 *       as the signal mask while sleeping (NULL: the thread's), and call
 *       ready() for each report (IO_EV_*).  A backend_wake since the last
 *       backend_wait ends the wait at once and is consumed, reported to
 *       no one.  The number of reports, or -EINTR when a signal handler ran
 *       first.
 *   void backend_wake(void)
 *       Make the backend_wait in progress, or the next one, return.  Any
 *       kernel thread, async-signal-safe.
 *   bool backend_owns(int fd)
 *       fd is one of the backend's own descriptors (the program may not
 *       close or replace it; fd.c moves it out of the way instead).
 *
 * io_uring would be a second backend behind the same calls (a multishot
 * poll per descriptor; the wait is io_uring_enter; the wake an
 * IORING_OP_MSG_RING or an eventfd), chosen at start-up with this one as
 * the fallback where seccomp forbids it.  docs/io.md says why it is not
 * there yet.
 */
#ifndef WEFT_IO_POLLER_H
#define WEFT_IO_POLLER_H

#include "io.h"

#define IO_EV_IN 1u      /* readable (or urgent data) */
#define IO_EV_OUT 2u     /* writable */
#define IO_EV_HUP 4u     /* hang-up, peer shut down writing, or error: both directions, for good */
#define IO_EV_PRI 8u     /* urgent (out-of-band) data: reads may stop short at its mark */

/* How long a VP that never idles may go without looking for readiness. */
#define IO_POLL_QUANTUM_NS 10000000ll

int __weft_io_backend_open(void) HIDDEN;
int __weft_io_backend_arm(int kfd, int fd, uint64_t cookie) HIDDEN;
int __weft_io_backend_disarm(int kfd, int fd) HIDDEN;
int __weft_io_backend_wait(int kfd, int64_t timeout_ns, const sigset_t *mask,
			   void (*ready)(uint64_t cookie, uint32_t io_events)) HIDDEN;
void __weft_io_backend_wake(void) HIDDEN;
bool __weft_io_backend_owns(int fd) HIDDEN;

#endif
