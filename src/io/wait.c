/*
 * wait.c — parking a UT on descriptors, and waking it.
 *
 * Owns: the records (struct io_rec) linked on each descriptor's two lists,
 * the rules for whom an event wakes, and how a wait ends.
 *
 * A waiting UT parks on no runtime wait queue (a poll() caller waits on
 * many descriptors at once, and a UT can be on one queue only): it links
 * one record per (descriptor, direction) on the descriptor's list, parks
 * with its deadline, and unlinks them all when it runs again, whatever
 * woke it.  Invariants: a record is linked only while its UT is parked in
 * __weft_io_wait (or woken and not yet run); every record on a descriptor's
 * list carries that descriptor's current gen; the poller unparks a UT only
 * for an event on a descriptor and direction one of its records names.
 *
 * Whom an event wakes: every record of a call that takes nothing (poll,
 * select: each of them must hear of it), and the oldest record of a call
 * that consumes (read, recv, accept, epoll_wait: a second reader woken for
 * one byte would only find EAGAIN).  A consuming call that took something
 * passes the baton — wakes the next consuming waiter, since more may be
 * there — and so does one that was woken and leaves without trying, so an
 * edge is never lost between them (a pool of threads in accept costs one
 * extra EAGAIN per connection, not one per thread).
 *
 * How a wait ends: readiness (try again); the caller's deadline; a signal
 * the poller decided was this UT's (poller.c: EINTR, or a restart the call
 * decides with __weft_io_restart); a cancel request at a cancellation point,
 * acted on here once the records are unlinked, or handed back to a caller
 * that must undo something first (cancel_late: child.c's pidfds).  A wait
 * that is not a cancellation point (sendfile, splice, tee) is marked
 * CP_SATISFIED while parked, so pthread_cancel leaves it to finish.
 */
#include "io.h"
#include "poller.h"

#include <string.h>

#define IO_BACKOFF_MIN_NS 1000000ll    /* a descriptor the poller refused: look every 1 ms ... */
#define IO_BACKOFF_MAX_NS 64000000ll   /* ... to 64 ms */

static void rec_link(struct io_fd *f, struct io_rec *r)
{
	struct io_rec **h = &f->waiters[r->dir];
	if (!*h) {
		r->next = r->prev = r;
		*h = r;
	} else {
		struct io_rec *head = *h, *tail = head->prev;
		r->next = head;
		r->prev = tail;
		tail->next = r;
		head->prev = r;
	}
	r->gen = f->gen;
	r->linked = 1;
}

static void rec_unlink(struct io_fd *f, struct io_rec *r)
{
	struct io_rec **h = &f->waiters[r->dir];
	if (r->next == r) {
		*h = NULL;
	} else {
		r->prev->next = r->next;
		r->next->prev = r->prev;
		if (*h == r)
			*h = r->next;
	}
	r->next = r->prev = NULL;
	r->linked = 0;
}

void __weft_io_rec_move(struct io_rec *r, struct io_fd *from, struct io_fd *to, int tofd)
{
	rec_unlink(from, r);
	r->fd = tofd;
	rec_link(to, r);
}

static void wake(struct io_waiter *w, int how)
{
	if (w->ut->state == UT_BLOCKED)
		__weft_unpark_nopreempt(w->ut, how);
}

/* Wake whoever an event on f's direction dir concerns. */
static void wake_dir(struct io_fd *f, int dir)
{
	struct io_rec *head = f->waiters[dir];
	if (!head)
		return;
	bool consumer_woken = false;
	struct io_rec *r = head;
	do {
		struct io_rec *next = r->next;
		if (!r->w->consuming) {
			wake(r->w, 0);
		} else if (!consumer_woken) {
			consumer_woken = true;
			wake(r->w, 0);
		}
		r = next;
	} while (r != head);
}

void __weft_io_event(int fd, uint32_t gen, uint32_t ev)
{
	struct io_fd *f = __weft_io_fd_peek(fd);
	if (!f || f->gen != gen || !(f->flags & F_REGISTERED))
		return;                           /* closed (and maybe reused) since */
	if (ev & IO_EV_HUP) {
		f->flags |= F_HUP;
		ev |= IO_EV_IN;
	}
	f->edges++;
	if (unlikely(ev & IO_EV_PRI))
		f->drain &= (uint8_t)~D_SHORT_DRAINS;   /* urgent data: a read stops at its mark */
	if (ev & IO_EV_IN) {
		f->ready |= IO_READY_IN;
		wake_dir(f, IO_IN);
	}
	if (ev & IO_EV_OUT) {
		f->ready |= IO_READY_OUT;
		wake_dir(f, IO_OUT);
	}
}

void __weft_io_baton(struct io_fd *f, int dir)
{
	struct io_rec *head = f->waiters[dir];
	if (!head)
		return;
	struct io_rec *r = head;
	do {
		if (r->w->consuming) {
			wake(r->w, 0);
			return;
		}
		r = r->next;
	} while (r != head);
}

void __weft_io_wake_fd(struct io_fd *f)
{
	for (int dir = 0; dir < 2; dir++) {
		struct io_rec *r;
		while ((r = f->waiters[dir]) != NULL) {
			wake(r->w, 0);
			rec_unlink(f, r);
		}
	}
}

bool __weft_io_restart(int signo)
{
	struct sigaction a;
	if (signo > 0)
		return __weft_sigaction(signo, NULL, &a) == 0 && (a.sa_flags & SA_RESTART);
	/* not known which: restart only if every handler asked for it */
	for (int s = 1; s < 65; s++) {
		if (s == SIGKILL || s == SIGSTOP || __weft_sigaction(s, NULL, &a) != 0)
			continue;
		if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN && !(a.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

int64_t __weft_io_ms_deadline(int ms)
{
	return ms < 0 ? -1 : __weft_now() + (int64_t)ms * 1000000;
}

/* Link w's records, registering their descriptors with the poller.  False
 * when some descriptor cannot be watched (the wait then polls). */
static bool link_all(struct io_waiter *w)
{
	bool all = true;
	for (unsigned i = 0; i < w->nrecs; i++) {
		struct io_rec *r = &w->recs[i];
		r->w = w;
		r->linked = 0;
		struct io_fd *f = __weft_io_fd_peek(r->fd);
		if (!f || f->kind == K_UNKNOWN || __weft_io_register(r->fd, f) != 0) {
			all = false;
			continue;
		}
		rec_link(f, r);
	}
	return all;
}

static void unlink_all(struct io_waiter *w, bool leaving)
{
	for (unsigned i = 0; i < w->nrecs; i++) {
		struct io_rec *r = &w->recs[i];
		if (!r->linked)
			continue;
		struct io_fd *f = __weft_io_fd_peek(r->fd);
		rec_unlink(f, r);
		/* maybe woken for readiness, leaving without taking it: pass it on */
		if (leaving && w->consuming && (f->ready & (1u << r->dir)))
			__weft_io_baton(f, r->dir);
	}
}

static enum io_wake io_wait(struct io_waiter *w)
{
	struct vp *vp = __weft_vp();
	struct ut *self = vp->cur;
	if (w->cancel_point && __weft_cancel_due(self)) {
		if (w->cancel_late)
			return IO_CANCELED;
		__weft_hooks.cancel_act();
	}
	w->ut = self;
	w->signo = 0;
	w->quantum = 0;
	if (w->deadline >= 0 && w->deadline <= __weft_now())
		return IO_TIMEDOUT;
	int64_t until = w->deadline;
	if (!link_all(w)) {
		int64_t now = __weft_now();
		/* a descriptor the poller cannot watch: look again soon */
		int64_t back = w->backoff_ns ? w->backoff_ns : IO_BACKOFF_MIN_NS;
		w->backoff_ns = back * 2 > IO_BACKOFF_MAX_NS ? IO_BACKOFF_MAX_NS : back * 2;
		if (until < 0 || now + back < until)
			until = now + back;
	}
	w->own_until = until;
	__weft_io_waiter_add(w);                  /* may give it the poll quantum */
	if (w->quantum && (until < 0 || w->quantum_at < until))
		until = w->quantum_at;
	self->cancel_point = w->cancel_point ? CP_WAITING : CP_SATISFIED;
	self->sig_intr = 1;                       /* a signal for it ends the wait */
	int r = __weft_park(NULL, until, WAIT_OTHER, w);
	self->sig_intr = 0;
	self->cancel_point = CP_NONE;
	bool had_quantum = w->quantum;
	__weft_io_waiter_del(w);
	enum io_wake how = IO_WOKEN;
	if (r == ECANCELED && w->cancel_point) {
		unlink_all(w, true);
		if (!w->cancel_late)
			__weft_hooks.cancel_act();
		how = IO_CANCELED;
	} else if (r == EINTR) {
		how = IO_SIGNALED;
		w->signo = __weft_sig_woken_by();
	} else if (r == ETIMEDOUT && w->deadline >= 0 && __weft_now() >= w->deadline) {
		how = IO_TIMEDOUT;
	}
	unlink_all(w, how != IO_WOKEN);
	/* unhooked: the signal's handler runs now, on this UT, before the
	 * call decides between EINTR and a restart (runtime/sigdeliver.c) */
	if (how == IO_SIGNALED)
		__weft_sig_woken(self);
	if (r == ETIMEDOUT && how == IO_WOKEN && had_quantum)
		__weft_io_poll_now();             /* the VP has not idled for a quantum: look */
	return how;
}

/* A copy-stack UT's stack holds another UT's bytes while it waits
 * (runtime/copystack.c), and the poller walks the records meanwhile: its
 * waiter and records wait in its wait memory, and what the wait changed in
 * them (a record's descriptor, the signal, the back-off) is copied back. */
static enum io_wake io_wait_off_stack(struct ut *self, struct io_waiter *w)
{
	size_t n = sizeof *w + w->nrecs * sizeof *w->recs;
	struct io_waiter *o = __weft_wait_mem(self, n);
	*o = *w;
	o->recs = (struct io_rec *)(o + 1);
	memcpy(o->recs, w->recs, w->nrecs * sizeof *w->recs);
	enum io_wake how = io_wait(o);
	struct io_rec *recs = w->recs;
	for (unsigned i = 0; i < w->nrecs; i++)
		recs[i] = o->recs[i];
	*w = *o;
	w->recs = recs;
	__weft_wait_mem_put(self, o);
	return how;
}

enum io_wake __weft_io_wait(struct io_waiter *w)
{
	struct ut *self = __weft_self();
	if (unlikely(__weft_is_copy(self)))
		return io_wait_off_stack(self, w);
	return io_wait(w);
}

enum io_wake __weft_io_wait1(int *fd, int dir, int64_t deadline, bool consuming, bool cancel_point,
			     int *signo)
{
	struct io_rec rec;
	struct io_waiter w;
	memset(&w, 0, sizeof w);
	rec.fd = *fd;
	rec.dir = (uint8_t)dir;
	w.recs = &rec;
	w.nrecs = 1;
	w.deadline = deadline;
	w.consuming = consuming;
	w.cancel_point = cancel_point;
	enum io_wake how = __weft_io_wait(&w);
	*fd = rec.fd;
	if (signo)
		*signo = w.signo;
	return how;
}

int __weft_io_block(struct io_blk *b)
{
	struct io_fd *f = b->f;
	/* An edge came while the caller's last try ran without the runtime
	 * lock (M:N, io.h's io_try6): what it announced may be there now,
	 * and epoll sends no second edge for it.  Try again before waiting. */
	if (unlikely(f->edges != b->edges)) {
		b->edges = f->edges;
		return IO_RETRY;
	}
	f->ready &= (uint8_t)~(1u << b->dir);
	if (b->signaled) {
		int s = b->signaled - 1;
		b->signaled = 0;
		if (!b->restartable || b->deadline >= 0 || !__weft_io_restart(s))
			return IO_RET_EINTR;
	}
	if (__weft_io_nonblock(b->fd, f))
		return IO_RET_EAGAIN;
	if (__weft_io_must_block() || __weft_io_register(b->fd, f) != 0)
		return IO_RET_BLOCK;
	if (b->deadline == -2)
		b->deadline = b->sock_timeout ? __weft_io_sock_deadline(b->fd, f, b->dir) : -1;
	int fd = b->fd, signo = 0;
	enum io_wake how = __weft_io_wait1(&b->fd, b->dir, b->deadline, b->consuming, b->cancel_point, &signo);
	if (b->fd != fd)
		b->f = __weft_io_fd_peek(b->fd);
	b->edges = b->f->edges;                   /* the try that follows starts here */
	switch (how) {
	case IO_TIMEDOUT:
		return IO_RET_EAGAIN;
	case IO_SIGNALED:
		b->signaled = signo + 1;
		return IO_RETRY;
	default:
		return IO_RETRY;
	}
}

long __weft_io_run_from(int fd, struct io_fd *f, int dir, bool consuming, int64_t deadline, io_try_fn try,
			void *ctx, uint16_t *edges)
{
	struct io_blk b;
	__weft_io_blk_init(&b, fd, f, dir, consuming);
	b.deadline = deadline;
	b.edges = *edges;
	long r;
	for (;;) {
		int st = __weft_io_block(&b);
		if (st == IO_RETRY) {
			*edges = b.edges;         /* before this try */
			r = try(b.fd, ctx, &b, true);
			if (r == -EAGAIN)
				continue;
			if (consuming && r >= 0 && b.f->waiters[dir])
				__weft_io_baton(b.f, dir);
		} else if (st == IO_RET_BLOCK) {
			r = try(b.fd, ctx, &b, false);
		} else {
			r = st == IO_RET_EAGAIN ? -EAGAIN : -EINTR;
		}
		break;
	}
	__weft_io_block_end(&b);
	return r;
}

long __weft_io_run(int fd, struct io_fd *f, int dir, bool consuming, int64_t deadline, io_try_fn try,
		   void *ctx)
{
	uint16_t edges = f->edges;                /* the caller's try was made under the lock */
	return __weft_io_run_from(fd, f, dir, consuming, deadline, try, ctx, &edges);
}
