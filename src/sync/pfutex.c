/*
 * pfutex.c — what every process-shared object stands on: the shared futex
 * wait and wake, the process's identity towards the kernel (its TID and
 * robust list), and the holder table (pshared.h says what each is).
 *
 * The wait.  A process-shared object may be woken by another process,
 * which only the kernel can tell us, so a UT that must wait sleeps in the
 * kernel: a FUTEX_WAIT_BITSET without FUTEX_PRIVATE_FLAG (an absolute
 * time, FUTEX_CLOCK_REALTIME for CLOCK_REALTIME), made inside the blocking
 * bracket so that the VP goes on running the other UTs.  Inside the
 * bracket there is that one raw system call and nothing else.  An EINTR
 * the program cannot have caused (Weft's tick or kick) is never shown: the
 * call is made again with the same absolute time.
 *   When the bracket cannot hand the VP on (no spare kernel thread,
 * WEFT_ACTIVATIONS=off), sleeping for the whole wait would stop every UT,
 * and the waker may be one of them.  Then the wait yields to ready UTs
 * and sleeps only in slices (slice_wait): a spurious wake-up, which every
 * glibc protocol loop accepts.  Alone, or inside a handler that must not
 * switch, the UT simply sleeps.
 *   Cancellation: a cancellable wait records (UT, word) on a list before it
 * sleeps; pthread_cancel (posix/cancel.c) finds its target there and wakes
 * every sleeper on that word (the others see a spurious wake-up); the
 * target, back on the VP, sees its request and returns ECANCELED.
 *
 * Identity.  Every UT of this process writes the process's own TID (the
 * thread group leader's, getpid()) into futex words and __owner fields,
 * as an NPTL thread writes its own: the other process and the kernel see
 * one owner, and the kernel finds our robust mutexes on the leader's
 * robust list (glibc registers it at start-up and, in a forked child,
 * again for the forking thread, which is the child's leader).  The list
 * head is asked of the kernel (get_robust_list on the leader), not
 * guessed from glibc's TCB.  Both are cached; the cache is checked
 * against the carrier's TID, which changes at a handoff and at fork, and
 * re-read (one getpid) when that changed.  A changed pid means this is a
 * forked child: the holder table is emptied, as the child holds nothing.
 *
 * The holder table: a hash of records keyed by object address, made when a
 * UT of this process takes a mutex (or an rwlock's write lock) and freed
 * when nobody of this process holds or waits for it.  A record is never
 * kept across a park or a bracket by its user: it may be freed meanwhile,
 * so it is looked up again.  VP-local (M:1), like every sync object.
 */
#include "pshared.h"
#include "../arch/arch.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/syscall.h>

#define SLICE_NS 1000000L               /* a sleep that keeps the VP: 1 ms */

/* ---- identity ---- */

static struct {
	pid_t carrier;                    /* vp->tid when pid was read; 0: never */
	pid_t pid;
	bool head_known;
	struct robust_list_head *head;
} me;

static void pholders_forget(void);

static void identity_refresh(pid_t carrier)
{
	pid_t pid = (pid_t)__weft_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (pid != me.pid) {
		if (me.pid)
			pholders_forget();      /* a forked child holds nothing */
		me.pid = pid;
		me.head_known = false;
	}
	me.carrier = carrier;
}

pid_t __weft_pshared_tid(void)
{
	pid_t carrier = __weft_vp()->tid;
	if (unlikely(carrier != me.carrier))
		identity_refresh(carrier);
	return me.pid;
}

struct robust_list_head *__weft_pshared_robust_head(void)
{
	pid_t pid = __weft_pshared_tid();
	if (!me.head_known) {
		struct robust_list_head *h = NULL;
		size_t len = 0;
		long r = __weft_raw_syscall6(SYS_get_robust_list, pid, (long)&h, (long)&len, 0, 0, 0);
		/* glibc's head: futex_offset is __lock's offset from __list.__next */
		long off = (long)offsetof(pthread_mutex_t, __data.__lock) -
			   (long)offsetof(pthread_mutex_t, __data.__list.__next);
		me.head = (r == 0 && h && len == sizeof *h && h->futex_offset == off) ? h : NULL;
		me.head_known = true;
	}
	return me.head;
}

/* ---- waits ---- */

/* Cancellable sleepers, for pthread_cancel; each entry lives on its UT's
 * stack for the length of one sleep. */
struct sleeper {
	struct ut *ut;
	const volatile void *word;
	struct sleeper *next;
};
static struct sleeper *sleepers;

void __weft_pfutex_wake(const volatile void *w, int n)
{
	__weft_raw_syscall6(SYS_futex, (long)w, FUTEX_WAKE, n, 0, 0, 0);
}

void __weft_pfutex_cancel_kick(struct ut *t)
{
	for (struct sleeper *s = sleepers; s; s = s->next)
		if (s->ut == t)
			__weft_pfutex_wake(s->word, INT_MAX);
}

int __weft_ptime_check(clockid_t clk, const struct timespec *abs)
{
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000)
		return EINVAL;
	return 0;
}

static long futex_wait_abs(const volatile void *w, uint32_t val, clockid_t clk,
			   const struct timespec *abs)
{
	int op = FUTEX_WAIT_BITSET | (clk == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
	return __weft_raw_syscall6(SYS_futex, (long)w, op, val, (long)abs, 0, FUTEX_BITSET_MATCH_ANY);
}

/* The VP could not be handed on and other UTs exist: one of them may be
 * the waker.  While some are ready, yield to them (the caller sees a
 * spurious wake-up and checks its word again); with none ready, or after
 * a long run of yields, sleep in the kernel for a slice at most — up to
 * the next Weft timer, SLICE_NS, or less while others are ready — so the
 * waker, here or in another process, is never kept waiting long. */
static unsigned yield_streak;

static long slice_wait(const volatile void *w, uint32_t val, clockid_t clk,
		       const struct timespec *abs)
{
	struct vp *vp = __weft_vp();
	bool others = __weft_highest_ready() >= 0 || vp->inbox;
	if (others && yield_streak++ < 64) {
		__weft_yield();
		return 0;
	}
	yield_streak = 0;
	int64_t slice = others ? SLICE_NS / 20 : SLICE_NS;
	if (__weft_timers_pending()) {
		int64_t d = __weft_timers_next() - __weft_now();
		if (d < slice)
			slice = d > 0 ? d : 0;
	}
	bool sliced = true;
	if (abs) {
		struct timespec now;
		clock_gettime(clk, &now);
		int64_t left = (int64_t)(abs->tv_sec - now.tv_sec) * 1000000000 +
			       (abs->tv_nsec - now.tv_nsec);
		if (left <= slice) {
			slice = left;
			sliced = false;
		}
	}
	long r = sliced ? 0 : -ETIMEDOUT;
	if (slice > 0) {
		struct timespec rel = { slice / 1000000000, slice % 1000000000 };
		r = __weft_raw_syscall6(SYS_futex, (long)w, FUTEX_WAIT, val, (long)&rel, 0, 0);
		if (r == -ETIMEDOUT && sliced)
			r = 0;          /* the slice ended, not the wait */
	}
	__weft_yield();                 /* and any timer now due runs */
	return r;
}

int __weft_pfutex_wait(const volatile void *w, uint32_t val, clockid_t clk,
		       const struct timespec *abs, bool cancellable)
{
	struct ut *self = __weft_self();
	if (abs && abs->tv_sec < 0)
		return ETIMEDOUT;       /* before the epoch: past (glibc's rule) */
	for (;;) {
		if (cancellable && __weft_cancel_due(self))
			return ECANCELED;
		/* pthread_cancel reads the sleepers: a copy-stack UT's entry
		 * lives off its stack (runtime/copystack.c) */
		struct sleeper on_stack, *entry = __weft_wait_mem(self, sizeof *entry);
		if (!entry)
			entry = &on_stack;
		*entry = (struct sleeper){ self, w, sleepers };
		if (cancellable)
			sleepers = entry;
		/* made only if the VP can be handed on (else the slices below);
		 * the timeout is read as the call starts */
		int op = FUTEX_WAIT_BITSET | (clk == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
		const long args[6] = { (long)w, op, val, (long)abs, 0, FUTEX_BITSET_MATCH_ANY };
		const struct weft_bounce b[] = { { 3, WEFT_BOUNCE_IN, sizeof *abs } };
		bool weft;
		uint64_t caught = __weft_vp()->async.caught;
		long r = __weft_blocking_call(SYS_futex, args, b, abs ? 1 : 0, true, &weft);
		if (r == WEFT_NOT_HANDED) {
			struct vp *vp = __weft_vp();
			if (__weft_proc.live < 2 || __weft_noswitch(vp))
				r = futex_wait_abs(w, val, clk, abs);   /* nobody else to run */
			else
				r = slice_wait(w, val, clk, abs);
			/* an EINTR no program signal caused (Weft's tick) */
			weft = r == -EINTR && __weft_vp()->async.caught == caught;
		}
		if (cancellable) {
			struct sleeper **p = &sleepers;
			while (*p != entry)
				p = &(*p)->next;
			*p = entry->next;
		}
		if (entry != &on_stack)
			__weft_wait_mem_put(self, entry);
		if (weft)
			continue;
		if (cancellable && __weft_cancel_due(self))
			return ECANCELED;
		switch (r) {
		case -ETIMEDOUT:
			return ETIMEDOUT;
		case -EINTR:
			return EINTR;
		case -EINVAL:
			return EINVAL;
		default:
			return 0;       /* woken, EAGAIN (the word changed) */
		}
	}
}

void __weft_pshared_relax(unsigned *spins)
{
	__builtin_ia32_pause();
	if ((++*spins & 63) == 0)
		__weft_yield();
}

/* ---- the holder table ---- */

#define PH_BUCKETS 64u
static struct pholder *buckets[PH_BUCKETS];
static uint32_t nrecords;

static struct pholder **bucket(const void *obj)
{
	uintptr_t a = (uintptr_t)obj;
	return &buckets[((a >> 3) ^ (a >> 9)) % PH_BUCKETS];
}

static void pholders_forget(void)
{
	for (unsigned i = 0; i < PH_BUCKETS; i++) {
		struct pholder *h = buckets[i];
		while (h) {
			struct pholder *next = h->next;
			free(h);
			h = next;
		}
		buckets[i] = NULL;
	}
	nrecords = 0;
	sleepers = NULL;
}

struct pholder *__weft_pholder_peek(const void *obj)
{
	if (!nrecords)
		return NULL;
	for (struct pholder *h = *bucket(obj); h; h = h->next)
		if (h->obj == obj)
			return h;
	return NULL;
}

struct pholder *__weft_pholder_find(const void *obj)
{
	if (!nrecords)
		return NULL;
	__weft_pshared_tid();           /* a forked child forgets first */
	return __weft_pholder_peek(obj);
}

struct pholder *__weft_pholder_get(const void *obj, int kind)
{
	struct pholder *h = __weft_pholder_find(obj);
	if (h)
		return h;
	h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	struct pholder **b = bucket(obj);
	h->obj = obj;
	h->kind = kind;
	h->next = *b;
	*b = h;
	nrecords++;
	return h;
}

void __weft_pholder_tidy(struct pholder *h)
{
	if (!h || h->owner || h->waiters.head)
		return;
	struct pholder **p = bucket(h->obj);
	while (*p != h)
		p = &(*p)->next;
	*p = h->next;
	nrecords--;
	free(h);
}

void __weft_pholder_each_owned(struct ut *t, void (*fn)(struct pholder *, struct ut *))
{
	if (!nrecords)
		return;                 /* every UT exit of a program without them */
	__weft_pshared_tid();
	for (unsigned i = 0; nrecords && i < PH_BUCKETS; i++) {
		struct pholder *h = buckets[i];
		while (h) {
			struct pholder *next = h->next;   /* fn may free h */
			if (h->owner == t)
				fn(h, t);
			h = next;
		}
	}
}
