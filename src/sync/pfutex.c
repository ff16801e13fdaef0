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
 * and the waker may be one of them.  Then the UT parks on this process's
 * own table of waits, keyed by the word (local_wait): a wake made here
 * unparks it at once, and it looks at the word again every poll interval
 * (50 us, doubling to 1 ms), for a wake from another process, which only
 * the kernel hears.  Returning after a poll is a spurious wake-up, which
 * every glibc protocol loop accepts.  Parked, it is not ready, so the
 * other UTs (and the VP's idle sleep) run as for any wait.  Alone, or
 * inside a handler that must not switch, the UT simply sleeps in the
 * kernel.
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
 *
 * State and its readers: the sleepers list, the local wait table and the
 * holder table are read and written only by UTs inside a Weft call (under
 * M:N, WEFT_CALL's runtime lock serialises them; no signal handler or
 * other kernel thread reads them).  The local table's word is compared
 * before the UT parks with no switch in between, and a waker unparks
 * under the same rule, so a wake made by a UT of this process is never
 * lost; one made by another process is seen at the next poll.
 */
#include "pshared.h"
#include "../arch/arch.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/syscall.h>

#define SLICE_NS 1000000L               /* a local wait looks again at least every 1 ms */

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

/* The local wait table: UTs parked on a word because the VP could not be
 * handed on (local_wait).  A parked UT's wait_obj is the word itself. */
#define LOCAL_BUCKETS 64u
static struct waitq local_waits[LOCAL_BUCKETS];

static struct waitq *local_bucket(const volatile void *w)
{
	uintptr_t a = (uintptr_t)w;
	return &local_waits[((a >> 2) ^ (a >> 10)) % LOCAL_BUCKETS];
}

/* Unpark up to n of this process's UTs parked on w; how many.  Only from
 * a VP (a UT, or a guest lent one): a kernel thread without one (the
 * monitor, a guest that cannot be given one) leaves them to their next
 * look at the word. */
static int wake_local(const volatile void *w, int n)
{
	struct waitq *q = local_bucket(w);
	struct ut *t = q->head;
	if (!t || __weft_where(__weft_vp()) != WHERE_VP)
		return 0;
	struct ut *last = t->q_prev;
	int woke = 0;
	for (;;) {
		struct ut *next = t->q_next;
		bool at_end = t == last;
		if (t->wait_obj == (const void *)w) {
			__weft_unpark_nopreempt(t, 0);
			if (++woke >= n)
				break;
		}
		if (at_end)
			break;
		t = next;
	}
	return woke;
}

void __weft_pfutex_wake(const volatile void *w, int n)
{
	/* A wake need not choose: up to n here, and up to n sleeping in the
	 * kernel (other processes, handed-off waits); the extra ones see a
	 * spurious wake-up. */
	if (wake_local(w, n))
		__weft_preempt_check();
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
 * the waker.  Park on the local table until a wake here, the poll
 * interval or the deadline (-1: none).  0 (woken, a poll, or the word had
 * changed: the caller looks again), -ETIMEDOUT or -ECANCELED. */
#define POLL_MIN_NS 50000L

static long local_wait(const volatile void *w, uint32_t val, int64_t deadline, bool cancellable)
{
	int64_t poll = POLL_MIN_NS;
	for (;;) {
		if (__atomic_load_n((const volatile uint32_t *)w, __ATOMIC_ACQUIRE) != val)
			return 0;
		int64_t until = __weft_now() + poll;
		bool polling = true;
		if (deadline >= 0 && deadline <= until) {
			until = deadline;
			polling = false;
		}
		struct waitq *q = local_bucket(w);
		int r = cancellable ? __weft_park_cancellable(q, until, WAIT_FUTEX, (void *)w)
				    : __weft_park(q, until, WAIT_FUTEX, (void *)w);
		if (r == ECANCELED)
			return -ECANCELED;
		if (r != ETIMEDOUT)
			return 0;
		if (!polling)
			return -ETIMEDOUT;
		if (poll < SLICE_NS)
			poll *= 2;
	}
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
			int64_t deadline = -1;
			if (__weft_proc.live < 2 || __weft_noswitch(vp))
				r = futex_wait_abs(w, val, clk, abs);   /* nobody else to run */
			else if (abs && __weft_abs_deadline(clk, abs, &deadline) != 0)
				r = -EINVAL;
			else
				r = local_wait(w, val, deadline, cancellable);
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
/* Records in the table.  Read by the exit's inline test (sync.h,
 * __weft_robust_may_hold), on the mainline under the same rule as the
 * table: M:N's runtime lock. */
uint32_t __weft_pholder_records;

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
	__weft_pholder_records = 0;
	sleepers = NULL;
}

struct pholder *__weft_pholder_peek(const void *obj)
{
	if (!__weft_pholder_records)
		return NULL;
	for (struct pholder *h = *bucket(obj); h; h = h->next)
		if (h->obj == obj)
			return h;
	return NULL;
}

struct pholder *__weft_pholder_find(const void *obj)
{
	if (!__weft_pholder_records)
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
	__weft_pholder_records++;
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
	__weft_pholder_records--;
	free(h);
}

void __weft_pholder_each_owned(struct ut *t, void (*fn)(struct pholder *, struct ut *))
{
	if (!__weft_pholder_records)
		return;                 /* every UT exit of a program without them */
	__weft_pshared_tid();
	for (unsigned i = 0; __weft_pholder_records && i < PH_BUCKETS; i++) {
		struct pholder *h = buckets[i];
		while (h) {
			struct pholder *next = h->next;   /* fn may free h */
			if (h->owner == t)
				fn(h, t);
			h = next;
		}
	}
}
