/*
 * poller.c — the poller: the epoll backend, the idle hook, the poll
 * quantum.
 *
 * Owns: the epoll descriptor, the list of parked waiters (oldest first),
 * the waiter holding the poll quantum.  poller.h is the contract; this file keeps it:
 *
 *   - Each descriptor is armed once (EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLPRI,
 *     edge-triggered), the first time a call on it would block, with
 *     (gen << 32 | fd) as its cookie; disarmed before the program closes it.
 *     An edge is never missed: a UT parks on a direction only after a call
 *     on it, made after arming, found it not ready, and M:1 runs no
 *     epoll_wait between that call and the park.
 *   - The VP sleeps here (runtime/sched.c's idle loop calls wait_idle) with
 *     the nearest deadline as the timeout, and a batch of events unparks the
 *     UTs they concern (wait.c decides whom).
 *   - A VP that never idles (a UT computing while others wait for input)
 *     still polls: the oldest parked waiter holds a poll quantum, a timer of
 *     IO_POLL_QUANTUM_NS; when it fires that UT runs, polls without
 *     sleeping (__weft_io_poll_now), and waits again.  The quantum moves to
 *     the next waiter when its holder leaves, is dropped while the VP sleeps
 *     here and given back when it wakes.  So readiness is seen within a
 *     quantum (plus a tick) whatever runs, as Go's sysmon polls every 10 ms.
 *   - Signals.  Weft's own tick never ends a wait: only a program signal
 *     routed to a parked UT does (runtime/sigdeliver.c decides which UT,
 *     and wakes it with EINTR); the UT decides itself between EINTR and a
 *     restart (SA_RESTART, wait.c).
 */
#include "io.h"
#include "poller.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#define EVENTS_MAX 256

static int kfd = -1;                      /* the epoll instance (mainline) */
static int efd = -1;                      /* the wake eventfd, in kfd (set before kfd is published) */
static bool have_pwait2 = true;
static struct epoll_event events[EVENTS_MAX];
static struct io_waiter *waiters;         /* circular, oldest first */
static unsigned nwaiters;
static struct io_waiter *holder;          /* has the poll quantum */
static bool atfork_set;

/* The wake handshake (one VP: M:N makes these per VP).  Asynchronous
 * readers and writers: wake() on any kernel thread or in a signal handler
 * writes wake_req and wake_sent and reads sleeping; the mainline's
 * wait_idle writes sleeping, consumes wake_req before it sleeps, and the
 * backend clears wake_sent once it has drained the eventfd. */
static int sleeping;                      /* the mainline is in (or entering) backend_wait */
static int wake_req;                      /* a wake since the last wait began */
static int wake_sent;                     /* efd holds an unconsumed write */

#define WAKE_COOKIE UINT64_MAX            /* fd 0xffffffff: never a descriptor's cookie */

/* ---- the epoll backend --------------------------------------------------- */

int __weft_io_backend_open(void)
{
	long k = io_sys1(SYS_epoll_create1, EPOLL_CLOEXEC);
	if (k < 0)
		return (int)k;
	int hidden = __weft_io_hide_fd((int)k);
	if (hidden >= 0) {
		io_sys1(SYS_close, k);
		k = hidden;
	}
	long e = io_sys2(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e >= 0) {
		int h = __weft_io_hide_fd((int)e);
		if (h >= 0) {
			io_sys1(SYS_close, e);
			e = h;
		}
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = WAKE_COOKIE };
		if (io_sys4(SYS_epoll_ctl, k, EPOLL_CTL_ADD, e, &ev) != 0) {
			io_sys1(SYS_close, e);
			e = -1;
		}
	}
	efd = (int)e;                             /* -1: wake cannot interrupt a sleep (docs/io.md) */
	return (int)k;
}

int __weft_io_backend_arm(int k, int fd, uint64_t cookie)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET,
				  .data.u64 = cookie };
	long r = io_sys4(SYS_epoll_ctl, k, EPOLL_CTL_ADD, fd, &ev);
	if (r == -EEXIST)                         /* the same file under a stale cookie */
		r = io_sys4(SYS_epoll_ctl, k, EPOLL_CTL_MOD, fd, &ev);
	return (int)r;
}

int __weft_io_backend_disarm(int k, int fd)
{
	struct epoll_event ev = { 0 };
	return (int)io_sys4(SYS_epoll_ctl, k, EPOLL_CTL_DEL, fd, &ev);
}

void __weft_io_backend_wake(void)
{
	if (efd < 0 || __atomic_exchange_n(&wake_sent, 1, __ATOMIC_SEQ_CST))
		return;                           /* a write is already there to be seen */
	uint64_t one = 1;
	io_sys3(SYS_write, efd, &one, sizeof one);
}

bool __weft_io_backend_owns(int fd)
{
	return fd >= 0 && (fd == kfd || fd == efd);
}

static uint32_t io_events(uint32_t e)
{
	uint32_t r = 0;
	if (e & (EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND))
		r |= IO_EV_IN;
	if (e & (EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND))
		r |= IO_EV_OUT;
	if (e & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
		r |= IO_EV_HUP;
	if (e & (EPOLLHUP | EPOLLERR))
		r |= IO_EV_OUT;
	if (e & EPOLLPRI)
		r |= IO_EV_PRI;
	return r;
}

/* The VP whose idle wait this is (M:N: the runtime lock is let go for the
 * system call alone; the events are handled under it), or NULL. */
static struct vp *sleeper;

int __weft_io_backend_wait(int k, int64_t timeout_ns, const sigset_t *mask,
			   void (*ready)(uint64_t cookie, uint32_t io_events))
{
	long n;
	struct vp *vp = sleeper;
	sleeper = NULL;
	if (vp)
		__weft_mn_sleep_begin(vp);
	if (have_pwait2) {
		struct timespec ts, *tp = NULL;
		if (timeout_ns >= 0) {
			ts.tv_sec = timeout_ns / 1000000000;
			ts.tv_nsec = timeout_ns % 1000000000;
			tp = &ts;
		}
		n = io_sys6(SYS_epoll_pwait2, k, events, EVENTS_MAX, tp, mask, 8);
		if (n == -ENOSYS)
			have_pwait2 = false;
	}
	if (!have_pwait2) {
		long ms = timeout_ns < 0 ? -1 : (timeout_ns + 999999) / 1000000;
		if (ms > INT32_MAX)
			ms = INT32_MAX;
		n = io_sys6(SYS_epoll_pwait, k, events, EVENTS_MAX, ms, mask, 8);
	}
	if (vp)
		__weft_mn_sleep_end(vp);
	if (n < 0)
		return (int)n;
	int reports = 0;
	for (long i = 0; i < n; i++) {
		if (events[i].data.u64 == WAKE_COOKIE) {
			uint64_t v;
			io_sys3(SYS_read, efd, &v, sizeof v);
			__atomic_store_n(&wake_sent, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		ready(events[i].data.u64, io_events(events[i].events));
		reports++;
	}
	return reports;
}

/* ---- registration -------------------------------------------------------- */

static void on_ready(uint64_t cookie, uint32_t ev)
{
	__weft_io_event((int)(uint32_t)cookie, (uint32_t)(cookie >> 32), ev);
}

static bool waiting(struct vp *vp);
static bool wait_idle(struct vp *vp, int64_t deadline);
static void wake(struct vp *vp);
static const struct weft_poller epoll_poller = { waiting, wait_idle, wake };

static uint32_t fork_gen;                 /* forks this process has come out of as a child */

/* The child of a fork holds only the UT that called fork (runtime/fork.c
 * takes the others away, their timers and stacks with them, in a handler
 * that may run before or after this one): the waiters parked here were the
 * parent's, and their records lived on stacks the child no longer has.
 * Forget them without reading them. */
static void after_fork_child(void)
{
	fork_gen++;
	/* the epoll instance and the eventfd are shared with the parent:
	 * make our own */
	if (kfd >= 0) {
		io_sys1(SYS_close, kfd);
		if (efd >= 0)
			io_sys1(SYS_close, efd);
		efd = -1;
		kfd = __weft_io_backend_open();
	}
	sleeping = wake_req = wake_sent = 0;
	waiters = NULL;
	nwaiters = 0;
	holder = NULL;
	__weft_io_fd_after_fork();
}

/* Runs in the UT that forked, over the program's code (glibc's fork calls
 * it): under M:N it takes the runtime lock to touch descriptor state and
 * wake the UTs waiting for any child, as every other reader of them holds
 * it. */
static void after_fork_parent(void)
{
	bool locked = __weft_rtl_lock_outside();
	__weft_io_fd_after_fork_parent();
	__weft_io_children_changed();
	__weft_rtl_unlock_outside(locked);
}


/* The fork handlers, from the start: a fork before the first wait must
 * still mark every descriptor shared (fd.c).  glibc's pthread_atfork (Weft
 * defines none); its child handlers run in registration order, so this one
 * runs before the runtime's, which it does not need. */
__attribute__((constructor(102))) static void poller_atfork(void)
{
	if (!atfork_set) {
		atfork_set = true;
		pthread_atfork(NULL, after_fork_parent, after_fork_child);
	}
}

static int poller_open(void)
{
	if (kfd >= 0)
		return 0;
	kfd = __weft_io_backend_open();
	if (kfd < 0)
		return kfd;
	poller_atfork();
	__atomic_store_n(&__weft_poller, &epoll_poller, __ATOMIC_RELEASE);
	return 0;
}

bool __weft_io_poller_owns(int fd) { return __weft_io_backend_owns(fd); }

/* The program dup2s onto one of the poller's numbers: move it (epoll
 * keeps watching the eventfd's file under its old number, which is
 * closed only after the new one is registered). */
void __weft_io_poller_move(int fd)
{
	if (!__weft_io_backend_owns(fd))
		return;
	long d = io_sys3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd + 1);
	if (d < 0)
		return;
	if (fd == kfd) {
		kfd = (int)d;
	} else {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = WAKE_COOKIE };
		io_sys4(SYS_epoll_ctl, kfd, EPOLL_CTL_ADD, d, &ev);
		io_sys4(SYS_epoll_ctl, kfd, EPOLL_CTL_DEL, fd, &ev);
		efd = (int)d;
	}
	io_sys1(SYS_close, fd);
}

int __weft_io_register(int fd, struct io_fd *f)
{
	if (f->flags & F_REGISTERED)
		return 0;
	if (f->flags & F_UNPOLLABLE)
		return -EPERM;
	int r = poller_open();
	if (r < 0)
		return r;
	r = __weft_io_backend_arm(kfd, fd, (uint64_t)f->gen << 32 | (uint32_t)fd);
	if (r == -EPERM)
		f->flags |= F_UNPOLLABLE;
	if (r < 0)
		return r;
	f->flags |= F_REGISTERED;
	f->ready = IO_READY_IN | IO_READY_OUT;    /* not known yet: try before waiting */
	return 0;
}

void __weft_io_unregister(int fd, struct io_fd *f)
{
	if (kfd >= 0)
		__weft_io_backend_disarm(kfd, fd);
	f->flags &= (uint8_t)~F_REGISTERED;
}

/* ---- parked waiters and the poll quantum ------------------------------- */

/* The oldest waiter still parked (a woken one stays on the list until it
 * runs), or NULL. */
static struct io_waiter *oldest_parked(void)
{
	struct io_waiter *w = waiters;
	if (!w)
		return NULL;
	do {
		if (w->ut->state == UT_BLOCKED)
			return w;
		w = w->next;
	} while (w != waiters);
	return NULL;
}

/* Give the quantum to w (parked, or about to park with w->own_until). */
static void quantum_give(struct io_waiter *w, bool parked)
{
	if (!w)
		return;
	int64_t at = __weft_now() + IO_POLL_QUANTUM_NS;
	holder = w;
	w->quantum = 1;
	w->quantum_at = at;
	if (!parked)
		return;                           /* __weft_io_wait parks with it */
	struct ut *t = w->ut;
	if (t->tindex && t->deadline <= at)
		return;                           /* its own timer comes first anyway */
	if (t->tindex)
		__weft_timer_del(t);
	__weft_timer_add(t, at);
}

/* Take the quantum back from its (parked) holder: its own timer again. */
static void quantum_drop(void)
{
	struct io_waiter *w = holder;
	holder = NULL;
	if (!w)
		return;
	w->quantum = 0;
	struct ut *t = w->ut;
	if (t->state != UT_BLOCKED || !t->tindex || t->deadline != w->quantum_at)
		return;                           /* woken, or parked on its own timer */
	__weft_timer_del(t);
	if (w->own_until >= 0)
		__weft_timer_add(t, w->own_until);
}

void __weft_io_waiter_add(struct io_waiter *w)
{
	if (!waiters) {
		w->next = w->prev = w;
		waiters = w;
	} else {
		w->next = waiters;
		w->prev = waiters->prev;
		waiters->prev->next = w;
		waiters->prev = w;
	}
	nwaiters++;
	if (!holder)
		quantum_give(w, false);
}

void __weft_io_waiter_del(struct io_waiter *w)
{
	if (w->next == w) {
		waiters = NULL;
	} else {
		w->prev->next = w->next;
		w->next->prev = w->prev;
		if (waiters == w)
			waiters = w->next;
	}
	w->next = w->prev = NULL;
	nwaiters--;
	if (holder == w) {
		holder = NULL;
		quantum_give(oldest_parked(), true);
	}
}

/* ---- the idle hook and polling while busy -------------------------------- */

static bool waiting(struct vp *vp)
{
	(void)vp;
	return nwaiters != 0;
}

static bool wait_idle(struct vp *vp, int64_t deadline)
{
	if (holder) {
		quantum_drop();
		deadline = __weft_timers_pending() ? __weft_timers_next() : -1;
	}
	int64_t timeout = -1;
	if (deadline >= 0) {
		timeout = deadline - __weft_now();
		if (timeout < 0)
			timeout = 0;
	}
	/* the wake handshake: announce the sleep, then look for a wake that
	 * came before it (one after it finds sleeping set and writes efd) */
	__atomic_store_n(&sleeping, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&wake_req, 0, __ATOMIC_SEQ_CST))
		timeout = 0;
	sleeper = vp;
	int n = __weft_io_backend_wait(kfd, timeout, NULL, on_ready);
	__atomic_store_n(&sleeping, 0, __ATOMIC_SEQ_CST);
	if (!holder)
		quantum_give(oldest_parked(), true);
	return n == -EINTR;
}

static void wake(struct vp *vp)
{
	(void)vp;                                 /* one VP (M:1) */
	__atomic_store_n(&wake_req, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sleeping, __ATOMIC_SEQ_CST))
		__weft_io_backend_wake();
}

void __weft_io_poll_now(void)
{
	/* M:N: a VP waiting in the poller (without the lock) reports what
	 * becomes ready; its event buffer is the one this would use */
	if (kfd < 0 || (__weft_mn && __atomic_load_n(&sleeping, __ATOMIC_SEQ_CST)))
		return;
	__weft_io_backend_wait(kfd, 0, NULL, on_ready);
	__weft_preempt_check();
}
