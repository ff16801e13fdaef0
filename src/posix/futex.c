/*
 * futex.c — syscall(2), with futex(2) emulated for UTs.
 *
 * Owns: the exported `syscall` and the futex wait table.  Programs that wait
 * on futexes themselves — libstdc++'s C++20 atomic wait/notify, latch,
 * barrier, counting_semaphore, and std::future — call
 * syscall(SYS_futex, ...) directly.  Letting that block in the kernel would
 * stop the virtual processor and every UT on it, and the UT that would have
 * woken the futex could never run.  So a futex call made on the VP's kernel
 * thread parks the calling UT instead, on a hash table of wait queues keyed
 * by address; a wake unparks up to n of them.  Every other system call, and
 * every call from another kernel thread, goes to the kernel unchanged.
 *
 * Invariants: a UT waiting here is parked on the bucket of the address it
 * waits on, its wait_obj points at its `struct fwait` (on its own stack,
 * or for a copy-stack UT in its wait memory: runtime/copystack.c),
 * and fwait.addr is the address it waits on now (requeue moves both).  The
 * word is compared before parking, with no switch in between, which gives
 * futex(2)'s atomicity for free under M:1.
 *
 * Shared futexes (no FUTEX_PRIVATE_FLAG): std::future uses them in private
 * memory, so they are emulated too; because another process may share the
 * word, a wake is also passed to the kernel, and the word is re-read at
 * growing intervals (1 ms to 64 ms); the waiter returns 0 when it changed —
 * a spurious wake-up, which futex(2) callers must accept anyway.  The
 * re-read is the runtime timer's (__weft_futex_poll, WAIT_FUTEX_SHARED):
 * the waiter stays on its bucket meanwhile, so a wake never passes it by
 * and a wake's count is exact.  (The waiter itself re-reading after a
 * timeout left it off its bucket until it ran: a wake then found nobody,
 * returned 0, and — the word unchanged — was lost.)
 *
 * Not emulated (ENOSYS on the VP thread): FUTEX_WAKE_OP and the PI and
 * requeue-PI operations, which glibc uses only internally, through inline
 * system calls that never come here.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FUTEX_BUCKETS 256u
#define SHARED_POLL_MIN_NS 1000000ll
#define SHARED_POLL_MAX_NS 64000000ll

/* What a parked futex waiter waits for; lives on the waiter's stack.  The
 * rest is a shared waiter's, read and written by its polls (the runtime
 * timer's, under the runtime lock, while the waiter is parked). */
struct fwait {
	const uint32_t *addr;
	uint32_t bitset;
	uint32_t val;          /* the word it waits to see change from */
	int64_t deadline;      /* its own timeout, -1 none */
	int64_t poll;          /* the interval to the next re-read */
};

static struct waitq buckets[FUTEX_BUCKETS];

static struct waitq *bucket_of(const uint32_t *addr)
{
	uintptr_t a = (uintptr_t)addr;
	return &buckets[((a >> 2) ^ (a >> 12)) % FUTEX_BUCKETS];
}

static long fail(int err)
{
	errno = err;
	return -1;
}

/* True on the kernel thread that runs UTs. */
static bool on_vp_thread(void)
{
	__weft_ensure();
	return __weft_on_vp_thread(__weft_vp());
}

static long kernel_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	long r = __weft_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
	if ((unsigned long)r > -4096ul)
		return fail((int)-r);
	return r;
}

/* Walk one bucket's waiters on addr whose bitset meets `bitset`, calling
 * fn on each until it returns false.  fn may take the UT off the queue. */
static int for_waiters(const uint32_t *addr, uint32_t bitset, int max,
		       void (*fn)(struct ut *, void *), void *ctx)
{
	struct waitq *q = bucket_of(addr);
	struct ut *t = q->head;
	if (!t)
		return 0;
	struct ut *last = t->q_prev;
	int n = 0;
	for (;;) {
		struct ut *next = t->q_next;
		bool at_end = t == last;
		const struct fwait *w = t->wait_obj;
		if (w->addr == addr && (w->bitset & bitset)) {
			fn(t, ctx);
			if (++n >= max)
				break;
		}
		if (at_end)
			break;
		t = next;
	}
	return n;
}

static void wake_fn(struct ut *t, void *ctx)
{
	(void)ctx;
	__weft_unpark_nopreempt(t, 0);
}

static void requeue_fn(struct ut *t, void *ctx)
{
	const uint32_t *to = ctx;
	struct fwait *w = t->wait_obj;
	__weft_waitq_remove(t->wq, t);
	w->addr = to;
	__weft_waitq_insert(bucket_of(to), t);
}

/* futex(2) wakes at least one waiter whatever count it is given. */
static int wake_count(long val)
{
	return val <= 0 ? 1 : val > INT_MAX ? INT_MAX : (int)val;
}

static long futex_wake(const uint32_t *addr, long val, uint32_t bitset, bool shared)
{
	if (!bitset)
		return fail(EINVAL);
	int max = wake_count(val);
	int n = for_waiters(addr, bitset, max, wake_fn, NULL);
	if (n)
		__weft_preempt_check();
	if (shared && n < max) {
		long k = __weft_raw_syscall6(SYS_futex, (long)addr, FUTEX_WAKE_BITSET,
					     max - n, 0, 0, (long)bitset);
		if (k > 0)
			n += (int)k;
	}
	return n;
}

static uint32_t load_word(const uint32_t *addr)
{
	return __atomic_load_n(addr, __ATOMIC_ACQUIRE);
}

/* The next of a shared waiter's re-reads, or its own deadline if sooner. */
static int64_t next_poll(const struct fwait *w, int64_t now)
{
	int64_t p = now + w->poll;
	return w->deadline >= 0 && w->deadline < p ? w->deadline : p;
}

/* Park until woken, until `deadline` (-1: none), or — for a shared futex —
 * until a re-read finds the word changed.  0, ETIMEDOUT or EINTR. */
static int park_on_rec(struct fwait *w, uint32_t val, int64_t deadline, bool shared)
{
	int64_t until = deadline;
	enum wait_kind kind = WAIT_FUTEX;
	if (shared) {
		w->val = val;
		w->deadline = deadline;
		w->poll = SHARED_POLL_MIN_NS;
		until = next_poll(w, __weft_now());
		kind = WAIT_FUTEX_SHARED;
	}
	/* a signal for this UT ends the wait with EINTR, as the kernel's
	 * FUTEX_WAIT does (its handler has run: park.c) */
	struct ut *self = __weft_self();
	self->sig_intr = 1;
	int r = __weft_park(bucket_of(w->addr), until, kind, w);
	self->sig_intr = 0;
	return r;
}

/*
 * A shared waiter's timer ran out (the runtime's wait_poll hook; it runs
 * under the runtime lock, on whichever VP runs timers, while t stays
 * parked on its bucket).  It reads the program's word as the waiter would:
 * the address was valid when the wait began, and a program that unmaps
 * the memory under a waiter has broken futex(2)'s contract.
 */
int64_t __weft_futex_poll(struct ut *t, int64_t now, int *result)
{
	struct fwait *w = t->wait_obj;
	if (load_word(w->addr) != w->val) {
		*result = 0;
		return -1;
	}
	if (w->deadline >= 0 && w->deadline <= now) {
		*result = ETIMEDOUT;
		return -1;
	}
	if (w->poll < SHARED_POLL_MAX_NS)
		w->poll *= 2;
	return next_poll(w, now);
}

static int park_on(const uint32_t *addr, uint32_t val, uint32_t bitset, int64_t deadline, bool shared)
{
	/* wakers read it while the UT waits: a copy-stack UT's lives off
	 * its stack (runtime/copystack.c) */
	struct ut *self = __weft_self();
	struct fwait on_stack, *w = __weft_wait_mem(self, sizeof *w);
	if (!w)
		w = &on_stack;
	*w = (struct fwait){ addr, bitset };
	int r = park_on_rec(w, val, deadline, shared);
	if (w != &on_stack)
		__weft_wait_mem_put(self, w);
	return r;
}

static long futex_wait(const uint32_t *addr, uint32_t val, const struct timespec *ts,
		       bool absolute, clockid_t clk, uint32_t bitset, bool shared)
{
	int64_t deadline = -1;
	if (!bitset)
		return fail(EINVAL);
	if (ts) {
		int e = absolute ? __weft_abs_deadline(clk, ts, &deadline)
				 : __weft_rel_deadline(ts, &deadline);
		if (e)
			return fail(e);
	}
	if (load_word(addr) != val)
		return fail(EAGAIN);
	int r = park_on(addr, val, bitset, deadline, shared);
	return r ? fail(r) : 0;
}

/* FUTEX_REQUEUE / FUTEX_CMP_REQUEUE: wake `nwake`, move up to `nmove` of
 * the rest to addr2.  Returns how many were woken (plus moved, for CMP). */
static long futex_requeue(const uint32_t *addr, long nwake, long nmove,
			  const uint32_t *addr2, bool cmp, uint32_t val3)
{
	if (nwake < 0 || nmove < 0 || !addr2 || ((uintptr_t)addr2 & 3))
		return fail(EINVAL);
	if (cmp && load_word(addr) != val3)
		return fail(EAGAIN);
	int woken = nwake ? for_waiters(addr, FUTEX_BITSET_MATCH_ANY, wake_count(nwake), wake_fn, NULL) : 0;
	int moved = 0;
	if (nmove && addr2 != addr)
		moved = for_waiters(addr, FUTEX_BITSET_MATCH_ANY, nmove > INT_MAX ? INT_MAX : (int)nmove,
				    requeue_fn, (void *)addr2);
	if (woken)
		__weft_preempt_check();
	return cmp ? woken + moved : woken;
}

/* One futex call on the VP thread; false: not emulated, go to the kernel. */
static bool futex_emulate(long a1, long a2, long a3, long a4, long a5, long a6, long *ret)
{
	const uint32_t *addr = (const uint32_t *)a1;
	int op = (int)a2;
	int cmd = op & FUTEX_CMD_MASK;
	bool shared = !(op & FUTEX_PRIVATE_FLAG);
	clockid_t clk = (op & FUTEX_CLOCK_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	const struct timespec *ts = (const struct timespec *)a4;
	if (!addr || ((uintptr_t)addr & 3)) {
		*ret = fail(EINVAL);
		return true;
	}
	switch (cmd) {
	case FUTEX_WAIT:
		*ret = futex_wait(addr, (uint32_t)a3, ts, false, clk, FUTEX_BITSET_MATCH_ANY, shared);
		return true;
	case FUTEX_WAIT_BITSET:
		*ret = futex_wait(addr, (uint32_t)a3, ts, true, clk, (uint32_t)a6, shared);
		return true;
	case FUTEX_WAKE:
		*ret = futex_wake(addr, a3, FUTEX_BITSET_MATCH_ANY, shared);
		return true;
	case FUTEX_WAKE_BITSET:
		*ret = futex_wake(addr, a3, (uint32_t)a6, shared);
		return true;
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
		if (shared)
			return false;
		*ret = futex_requeue(addr, a3, a4, (const uint32_t *)a5, cmd == FUTEX_CMP_REQUEUE, (uint32_t)a6);
		return true;
	default:
		if (shared)
			return false;
		*ret = fail(ENOSYS);
		return true;
	}
}

/* A relative timeout in milliseconds, less what has passed since t0. */
static long ms_left(long ms, int64_t t0)
{
	if (ms <= 0)
		return ms;
	int64_t left = (int64_t)ms - (__weft_now() - t0) / 1000000;
	return left > 0 ? (long)left : 0;
}

/*
 * The program's raw system call, made on the VP.  Weft's tick is a signal
 * with a handler, so the kernel ends a sleeping poll, select, epoll_wait,
 * nanosleep, pause ... with EINTR when it lands, whatever SA_RESTART says.
 * The program must never see that (only its own signals may interrupt
 * it): when no program signal was caught meanwhile, the call is made again
 * with what is left of its timeout (the kernel has already written what is
 * left where the call has a place for it: select, pselect6, ppoll, and
 * nanosleep's rem).
 */
static long tick_proof_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	struct vp *vp = __weft_vp();
	int64_t t0 = __weft_now();
	struct timespec rem;
	/* a sleep the program gave no place for what is left gets ours from
	 * the first try on: the kernel writes it only where it has one, and a
	 * retry from an unwritten `rem` was EINVAL now and then */
	if (nr == SYS_nanosleep && !a2)
		a2 = (long)&rem;
	if (nr == SYS_clock_nanosleep && !(a2 & TIMER_ABSTIME) && !a4)
		a4 = (long)&rem;
	for (;;) {
		uint64_t caught = vp->async.caught;
		long r = __weft_takeable_syscall6(nr, a1, a2, a3, a4, a5, a6);
		if (r != -EINTR || vp->async.caught != caught || !__weft_on_vp_thread(vp))
			return r;
		switch (nr) {
		case SYS_poll:
			a3 = ms_left(a3, t0);
			break;
		case SYS_epoll_wait:
		case SYS_epoll_pwait:
			a4 = ms_left(a4, t0);
			break;
		case SYS_nanosleep:
			a1 = a2;                        /* the kernel wrote what is left */
			break;
		case SYS_clock_nanosleep:
			if (a2 & TIMER_ABSTIME)
				break;
			a3 = a4;
			break;
		default:
			break;
		}
	}
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	WEFT_CALL();
	long r;
	if (nr == SYS_futex && on_vp_thread() && futex_emulate(a1, a2, a3, a4, a5, a6, &r))
		return r;
#ifdef SYS_pause
	if (nr == SYS_pause && on_vp_thread()) {
		/* park the UT, not the VP, as pause() does */
		if (__weft_sig_suspend(NULL) == ECANCELED)
			__weft_cancel_act();
		return fail(EINTR);
	}
#endif
	if (WEFT_CALL_OFF_VP())
		return kernel_syscall(nr, a1, a2, a3, a4, a5, a6);
	if (nr == SYS_sched_getscheduler || nr == SYS_sched_getparam || nr == SYS_sched_setparam ||
	    nr == SYS_sched_setscheduler) {
		bool handled;
		r = __weft_sched_call(nr, a1, a2, a3, &handled);
		if (handled)
			return r < 0 ? fail((int)-r) : r;
	}
	/* anything else may block for long: the monitor may take the VP
	 * meanwhile (runtime/monitor.c) */
	r = tick_proof_syscall(nr, a1, a2, a3, a4, a5, a6);
	if ((unsigned long)r > -4096ul)
		return fail((int)-r);
	return r;
}
