/*
 * timer_thread.c — POSIX per-process timers: timer_create, timer_settime,
 * timer_gettime, timer_getoverrun and timer_delete, under every version
 * glibc 2.36 exports them (the default @@GLIBC_2.34, librt's GLIBC_2.3.3,
 * and the GLIBC_2.2.5 ABI whose timer_t was an int), so that SIGEV_THREAD
 * runs its notify function in a UT.
 *
 * glibc makes a kernel thread of its own for SIGEV_THREAD (a helper that
 * waits for the timers' signal and starts one more kernel thread per
 * expiry), which Weft would not know.  Here a SIGEV_THREAD timer is a
 * timerfd and one *service UT* parked in read() on it: the io layer parks
 * only that UT, and the poller wakes it when the timer expires.  Each read
 * is one notification: notify(sigev_value) in a new detached UT made with
 * the attributes copied at create time; the expirations the read counts
 * beyond the first are the notification's overrun (timer_getoverrun), as
 * the kernel counts a timer signal's while it is queued.  The service UT
 * runs at SCHED_FIFO 99 (it only dispatches, as the kernel's timer
 * interrupt would), so a busy program does not delay notifications beyond
 * the poller's next look; the notify UT runs at the priority its
 * attributes ask for, or else its creator's.
 *
 * Every other sigev_notify is glibc's own code path, made here as glibc
 * makes it: the kernel's timer_create, and the kernel's timer id as the
 * timer_t.  A timer_t that is not one of ours is passed to the kernel
 * unchanged, so those timers behave exactly as before.  The runtime's own
 * tick timers (runtime/preempt.c, SIGEV_THREAD_ID) come through this path
 * too, from signal handlers and from any kernel thread: it touches no
 * state and makes no Weft call, only the system call.
 *
 * Layering.  This file is the one posix file that calls the io layer: the
 * service UT's loop runs as a program thread's code would (outside any
 * Weft call, like a start routine) and calls the exported read and close,
 * and the timerfd is moved out of the low numbers by the io layer's
 * __weft_io_hide_fd.  tests/layering_no_upward_calls.sh allows exactly
 * those three names, for this object only.
 *
 * Owns: the table of SIGEV_THREAD timers (slots in chunks that are never
 * freed, so a handle can be checked from a signal handler: POSIX makes
 * timer_settime, timer_gettime and timer_getoverrun async-signal-safe), the
 * timers themselves, and the compatibility list of the int timer_t ABI.
 *
 * Invariants:
 *  - our timer_t is INTPTR_MIN | gen << 32 | slot: negative, which no
 *    kernel timer id is; it names a live timer iff the slot's gen matches
 *    and the slot holds a timer.  A deleted or forged handle is EINVAL.
 *  - a timer (struct tt) is freed when its last reference goes: the
 *    table's (until timer_delete), the service UT's (until it has left and
 *    closed the descriptor), and one per notify UT not yet started; the
 *    table's is given back only once timer_delete has waited.
 *  - the timerfd is read and closed only by the service UT; after a fork
 *    the child closes its copies and never reads, arms or closes the
 *    parent's (they share the open file, and with it the expirations).
 *  - state is touched on the VP only: by the exported calls (WEFT_CALL)
 *    and by the service and notify UTs.  Table changes call nothing that a
 *    signal handler can interrupt midway (allocation comes first).
 */
#include "attr.h"
#include "../arch/arch.h"
#include "../io/io.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* ---- the kernel's timers: glibc's code path ---------------------------- */

/* glibc's names for the calling process's and thread's CPU clocks, as the
 * kernel knows them (sysdeps/unix/sysv/linux/kernel-posix-cpu-timers.h). */
#define CPUCLOCK_SCHED 2
#define CPUCLOCK_PERTHREAD_MASK 4
/* MAKE_PROCESS_CPUCLOCK(0, clock): ~pid << 3 | clock, for pid 0 (the caller). */
#define CPUCLOCK_OF_CALLER(clock) ((clockid_t)(~0u << 3 | (unsigned)(clock)))

static clockid_t kernel_clock(clockid_t clk)
{
	if (clk == CLOCK_PROCESS_CPUTIME_ID)
		return CPUCLOCK_OF_CALLER(CPUCLOCK_SCHED);
	if (clk == CLOCK_THREAD_CPUTIME_ID)
		return CPUCLOCK_OF_CALLER(CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK);
	return clk;
}

static long sys4(long nr, long a, long b, long c, long d)
{
	return __weft_raw_syscall6(nr, a, b, c, d, 0, 0);
}

/* A raw result as glibc's INLINE_SYSCALL returns it. */
static int sys_ret(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

static bool ours(timer_t id) { return (intptr_t)id < 0; }
static long kernel_id(timer_t id) { return (int)(uintptr_t)id; }

/* The kernel's timer_create, with glibc's defaults: no sigevent means
 * SIGALRM with a NULL value (not the kernel's, which would be the id). */
static long kernel_create(clockid_t clk, const struct sigevent *evp, timer_t *out)
{
	struct sigevent local;
	if (!evp) {
		memset(&local, 0, sizeof local);
		local.sigev_notify = SIGEV_SIGNAL;
		local.sigev_signo = SIGALRM;
		evp = &local;
	}
	if (!out)
		return -EINVAL;                   /* glibc: SIGSEGV, and a timer left made */
	int k;
	long r = sys4(SYS_timer_create, kernel_clock(clk), (long)evp, (long)&k, 0);
	if (r == 0)
		*out = (timer_t)(intptr_t)k;
	return r;
}

/* ---- SIGEV_THREAD timers --------------------------------------------------- */

struct tt {
	void (*fn)(union sigval);
	union sigval value;
	struct ut_spawn how;          /* each notification: the attributes copied at create */
	sigset_t mask;                /* its signal mask: the attribute's, else all blocked
				       * (glibc's notification threads block every signal) */
	int fd;                       /* the timerfd; -1 once closed or found not ours */
	int overrun;                  /* of the last notification */
	uint64_t missed;              /* expirations since it that made no notification */
	uint32_t refs;
	uint32_t fork_gen;            /* the process it belongs to (fork_gen when made) */
	bool dead;                    /* deleted: the service UT leaves at its next look */
	bool gone;                    /* the service UT has closed the descriptor and left */
	struct waitq goneq;           /* timer_delete waits here for gone */
	pthread_t service;            /* the service UT's handle (dead once it has ended) */
	struct tt *prev, *next;       /* every timer not yet freed (fork closes their fds) */
};

#define TT_CHUNK_SHIFT 8
#define TT_CHUNK (1u << TT_CHUNK_SHIFT)
#define TT_MAX (1u << 20)             /* the kernel's default fs.nr_open: one fd each */
#define TT_GEN_MASK 0x7fffffffu

struct tt_slot {
	uint32_t gen;
	uint32_t next_free;           /* free list: next slot + 1 */
	struct tt *t;                 /* NULL: free */
};

static struct tt_slot *chunks[TT_MAX / TT_CHUNK];
static uint32_t nslots;               /* slots made so far */
static uint32_t free_top;             /* a free slot + 1; 0: none */
static struct tt *all;                /* every timer not yet freed */
static uint32_t fork_gen;             /* forks this process came out of as the child */

static struct tt_slot *slot_at(uint32_t i)
{
	struct tt_slot *c = __atomic_load_n(&chunks[i >> TT_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	return &c[i & (TT_CHUNK - 1)];
}

static uint32_t slot_of(timer_t id) { return (uint32_t)(uint64_t)(intptr_t)id; }

/* The live timer `id` names, or NULL: any value, from any handler. */
static struct tt *lookup(timer_t id)
{
	uint32_t i = slot_of(id), gen = (uint32_t)((uint64_t)(intptr_t)id >> 32) & TT_GEN_MASK;
	if (!ours(id) || i >= __atomic_load_n(&nslots, __ATOMIC_ACQUIRE))
		return NULL;
	struct tt_slot *s = slot_at(i);
	return s->t && s->gen == gen ? s->t : NULL;
}

/* Make sure a free slot exists: the only allocation the table makes,
 * before it changes anything.  false: the table is full or no memory. */
static bool slot_reserve(void)
{
	if (free_top || nslots % TT_CHUNK)
		return true;
	if (nslots == TT_MAX)
		return false;
	struct tt_slot *c = calloc(TT_CHUNK, sizeof *c);
	if (!c)
		return false;
	for (uint32_t k = 0; k < TT_CHUNK; k++)
		c[k].gen = 1;
	__atomic_store_n(&chunks[nslots >> TT_CHUNK_SHIFT], c, __ATOMIC_RELEASE);
	return true;
}

/* A slot (slot_reserve said yes), taken at once: making the service UT
 * may switch, and another UT's timer_create must not take it meanwhile.
 * It names no timer until slot_publish. */
static uint32_t slot_take(void)
{
	uint32_t i;
	if (free_top) {
		i = free_top - 1;
		free_top = slot_at(i)->next_free;
	} else {
		i = nslots;
		__atomic_store_n(&nslots, i + 1, __ATOMIC_RELEASE);
	}
	return i;
}

/* Slot i names t from now on: its handle. */
static timer_t slot_publish(uint32_t i, struct tt *t)
{
	struct tt_slot *s = slot_at(i);
	s->t = t;
	return (timer_t)(intptr_t)(INTPTR_MIN | (intptr_t)((uint64_t)s->gen << 32) | (intptr_t)i);
}

static void slot_free(uint32_t i)
{
	struct tt_slot *s = slot_at(i);
	s->t = NULL;
	s->gen = (s->gen + 1) & TT_GEN_MASK;
	if (!s->gen)
		s->gen = 1;
	s->next_free = free_top;
	free_top = i + 1;
}

static void tt_unref(struct tt *t)
{
	if (--t->refs)
		return;
	if (t->prev)
		t->prev->next = t->next;
	else
		all = t->next;
	if (t->next)
		t->next->prev = t->prev;
	free(t);
}

static bool forked(const struct tt *t) { return t->fork_gen != fork_gen; }

/* Is fd still a timerfd?  The program may have closed our number behind
 * our back (closefrom); then it is not ours to read, arm or close. */
static bool still_timerfd(int fd)
{
	struct itimerspec cur;
	return fd >= 0 && sys4(SYS_timerfd_gettime, fd, (long)&cur, 0, 0) == 0;
}

/* ---- the notify UT ---- */

/* Its first step, inside Weft: what to call, and its reference given back.
 * false in a forked child (the notification was the parent's), and false
 * once the timer is deleted: a notify UT made before timer_delete that has
 * not started yet does not start after it (once timer_delete returns, no
 * notification begins; one that began goes on to its end). */
static bool notify_take(struct tt *t, void (**fn)(union sigval), union sigval *value)
{
	WEFT_CALL();
	bool run = !forked(t) && !t->dead;
	*fn = t->fn;
	*value = t->value;
	tt_unref(t);
	return run;
}

/* The start routine of a notify UT: the program's function, as a thread
 * of the program would call it. */
static void *notify_main(void *arg)
{
	void (*fn)(union sigval);
	union sigval value;
	if (notify_take(arg, &fn, &value))
		fn(value);
	return NULL;
}

/* ---- the service UT ---- */

/* One read counted n expirations: one notification.  If no UT can be made
 * now, the expirations are counted into the next notification's overrun. */
static void service_notify(struct tt *t, uint64_t n)
{
	WEFT_CALL();
	if (t->dead || forked(t))
		return;
	uint64_t over = t->missed + n - 1;
	int before = t->overrun;
	t->overrun = over > DELAYTIMER_MAX ? DELAYTIMER_MAX : (int)over;
	struct ut *u;
	t->refs++;
	if (__weft_ut_spawn(&t->how, &u) != 0) {
		t->refs--;
		t->overrun = before;
		t->missed += n;
		return;
	}
	t->missed = 0;
}

/* The service UT has closed its descriptor and is about to end. */
static void service_done(struct tt *t)
{
	WEFT_CALL();
	t->gone = true;
	/* no switch: the deleter runs once this UT has ended, so that when
	 * timer_delete returns the UT is gone as well as the descriptor */
	__weft_wake_all_nopreempt(&t->goneq, 0);
	tt_unref(t);
}

/* Its start routine.  It runs as a program thread's code runs, outside any
 * Weft call, and calls the exported read and close: read parks only this
 * UT until the timer expires (the poller), and close keeps the io layer's
 * descriptor table right. */
static void *service_main(void *arg)
{
	struct tt *t = arg;
	/* Nobody is given its handle, but a guessed one must not end it
	 * without service_done: timer_delete would wait for ever. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	for (;;) {
		if (t->dead || forked(t))
			break;
		if (!still_timerfd(t->fd)) {
			t->fd = -1;
			break;
		}
		uint64_t n;
		ssize_t r = read(t->fd, &n, sizeof n);
		if (r == (ssize_t)sizeof n)
			service_notify(t, n);
		else if (r >= 0 || errno != EINTR)
			break;                /* EBADF: closed behind our back */
	}
	if (t->fd >= 0 && !forked(t))
		close(t->fd);
	t->fd = -1;
	service_done(t);
	return NULL;
}

/* ---- the calls ---- */

/* A descriptor could not be had for the clock: glibc's error.  A clock the
 * kernel's timers take but a timerfd does not (the CPU-time clocks,
 * CLOCK_TAI) is ENOTSUP, POSIX's word for a CPU-time clock it cannot time;
 * one the kernel's timers refuse too gives their error; running out of
 * descriptors or memory is EAGAIN, as the kernel's timer_create says. */
static int timerfd_error(clockid_t clk, long r)
{
	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
		return EAGAIN;
	if (r != -EINVAL)
		return (int)-r;
	struct sigevent none;
	memset(&none, 0, sizeof none);
	none.sigev_notify = SIGEV_NONE;
	timer_t k;
	r = kernel_create(clk, &none, &k);
	if (r == 0) {
		sys4(SYS_timer_delete, kernel_id(k), 0, 0, 0);
		return ENOTSUP;
	}
	return r == -ENOMEM || r == -EAGAIN ? EAGAIN : (int)-r;
}

static int tt_create(clockid_t clk, const struct sigevent *evp, timer_t *out)
{
	if (!out || !evp->sigev_notify_function)
		return EINVAL;
	const pthread_attr_t *pa = evp->sigev_notify_attributes;
	const struct weft_attr *a = pa ? attr_cof(pa) : __weft_default_attr();
	if (a->magic != ATTR_MAGIC)
		return EINVAL;
	/* The attributes are copied now, as glibc does: the program may
	 * destroy its attribute object once timer_create returns. */
	struct ut *self = __weft_self();
	struct ut_spawn how = { .start = notify_main };
	int e = attr_spawn(a, self->policy, self->base_prio, &how);
	if (e)
		return e;
	how.detached = true;

	long fd = sys4(SYS_timerfd_create, clk, TFD_CLOEXEC, 0, 0);
	if (fd < 0)
		return timerfd_error(clk, fd);
	int high = __weft_io_hide_fd((int)fd);    /* keep the program's low numbers free */
	if (high >= 0) {
		sys4(SYS_close, fd, 0, 0, 0);
		fd = high;
	}
	struct tt *t = calloc(1, sizeof *t);
	if (!t || !slot_reserve()) {
		free(t);
		sys4(SYS_close, fd, 0, 0, 0);
		return EAGAIN;
	}
	t->fn = evp->sigev_notify_function;
	t->value = evp->sigev_value;
	if (how.sigmask)
		t->mask = *how.sigmask;
	else
		sigfillset(&t->mask);
	how.sigmask = &t->mask;                   /* the copy: the attribute may go */
	t->fd = (int)fd;
	t->fork_gen = fork_gen;
	t->refs = 2;                              /* the table's and the service UT's */
	how.arg = t;
	t->how = how;

	/* The service UT only dispatches: the highest priority, a default
	 * stack (committed as touched: a few KiB). */
	static sigset_t all_blocked;
	sigfillset(&all_blocked);
	struct ut_spawn service = {
		.start = service_main, .arg = t, .policy = SCHED_FIFO, .prio = WEFT_PRIO_MAX,
		.detached = true, .explicit_sched = true, .sigmask = &all_blocked,
	};
	uint32_t slot = slot_take();
	t->next = all;                            /* a fork from here on closes its fd */
	if (all)
		all->prev = t;
	all = t;
	struct ut *u;
	if (__weft_ut_spawn(&service, &u) != 0) {
		slot_free(slot);
		sys4(SYS_close, fd, 0, 0, 0);
		t->refs = 1;
		tt_unref(t);
		return EAGAIN;
	}
	t->service = __weft_handle(u);
	*out = slot_publish(slot, t);
	/* a second UT exists: libc and libstdc++ must stop taking shortcuts
	 * (as pthread_create says) */
	if (unlikely(__libc_single_threaded))
		__libc_single_threaded = 0;
	return 0;
}

static int tt_delete(timer_t id)
{
	struct tt *t = lookup(id);
	if (!t)
		return EINVAL;
	slot_free(slot_of(id));
	t->dead = true;
	/* Wake the service UT: the timer fires at once, and the UT, finding
	 * the timer dead, closes the descriptor and ends. */
	struct itimerspec now = { .it_value = { 0, 1 } };
	bool woken = !t->gone && still_timerfd(t->fd) &&
		     sys4(SYS_timerfd_settime, t->fd, 0, (long)&now, 0) == 0;
	/* Wait for it, so that neither the descriptor nor the UT outlives the
	 * call; not where the caller cannot switch (a signal handler over
	 * libc), where the UT ends on its own later. */
	if (woken && !__weft_noswitch(__weft_vp())) {
		while (!t->gone)
			__weft_park(&t->goneq, -1, WAIT_OTHER, t);
		/* M:N: the service UT woke us on its way out and may still be
		 * ending on another VP (its exit lets the runtime lock go for
		 * its destructors): wait the microseconds until its handle is
		 * dead, parked with a short deadline so that the lock is free
		 * for it meanwhile.  In M:1 it has ended already. */
		while (__weft_ut_lookup(t->service))
			__weft_park(&t->goneq, __weft_now() + 20000, WAIT_OTHER, t);
	}
	tt_unref(t);           /* the table's, held until here: t outlives the wait */
	return 0;
}

static int tt_settime(struct tt *t, int flags, const struct itimerspec *value, struct itimerspec *old)
{
	if (!value)
		return EINVAL;                    /* the kernel's timer_settime says so */
	long r = sys4(SYS_timerfd_settime, t->fd, (flags & TIMER_ABSTIME) ? TFD_TIMER_ABSTIME : 0,
		      (long)value, (long)old);
	if (r < 0)
		return r == -EBADF ? EINVAL : (int)-r;
	t->overrun = 0;
	t->missed = 0;
	return 0;
}

/* ---- entry points: ours, or the kernel's as glibc calls it ------------ */

/* The system call's answer, or our error number, as the C library returns
 * it: 0, or -1 with errno. */
static int result(int e)
{
	if (!e)
		return 0;
	errno = e;
	return -1;
}

static int create(clockid_t clk, struct sigevent *evp, timer_t *out)
{
	if (evp && evp->sigev_notify == SIGEV_THREAD_ID && __weft_started) {
		/* a UT naming its own gettid() (its VP's kernel thread): the
		 * signal is that UT's (Mueller: the thread that armed the
		 * timer), not whichever UT runs when it comes */
		long r = kernel_create(clk, evp, out);
		if (r == 0 && evp->_sigev_un._tid == gettid()) {
			__weft_ensure();
			WEFT_CALL();
			__weft_sig_timer_owner(kernel_id(*out), __weft_self());
		}
		return sys_ret(r);
	}
	if (!evp || evp->sigev_notify != SIGEV_THREAD)
		return sys_ret(kernel_create(clk, evp, out));
	__weft_ensure();
	WEFT_CALL();
	return result(tt_create(clk, evp, out));
}

static int delete(timer_t id)
{
	if (!ours(id)) {
		long r = sys4(SYS_timer_delete, kernel_id(id), 0, 0, 0);
		if (r == 0 && __weft_started) {
			__weft_ensure();
			WEFT_CALL();
			__weft_sig_timer_owner(kernel_id(id), NULL);
		}
		return sys_ret(r);
	}
	__weft_ensure();
	WEFT_CALL();
	return result(tt_delete(id));
}

static int settime(timer_t id, int flags, const struct itimerspec *value, struct itimerspec *old)
{
	if (!ours(id))
		return sys_ret(sys4(SYS_timer_settime, kernel_id(id), flags, (long)value, (long)old));
	__weft_ensure();
	WEFT_CALL();
	struct tt *t = lookup(id);
	return result(t ? tt_settime(t, flags, value, old) : EINVAL);
}

static int gettime(timer_t id, struct itimerspec *cur)
{
	if (!ours(id))
		return sys_ret(sys4(SYS_timer_gettime, kernel_id(id), (long)cur, 0, 0));
	__weft_ensure();
	WEFT_CALL();
	struct tt *t = lookup(id);
	if (!t)
		return result(EINVAL);
	long r = sys4(SYS_timerfd_gettime, t->fd, (long)cur, 0, 0);
	return result(r == -EBADF ? EINVAL : (int)-r);
}

static int getoverrun(timer_t id)
{
	if (!ours(id))
		return sys_ret(sys4(SYS_timer_getoverrun, kernel_id(id), 0, 0, 0));
	__weft_ensure();
	WEFT_CALL();
	struct tt *t = lookup(id);
	return t ? t->overrun : result(EINVAL);
}

/* ---- fork: the child has no timers (POSIX) ----
 * Its copies of the timerfds share the parent's open files, so reading
 * one would take the parent's expirations and arming one would arm the
 * parent's timer: the child closes them before the program's own child
 * handlers run (registered from a constructor, after the runtime's and
 * the io layer's), and every handle of the parent's is EINVAL.  Copies of
 * the service and notify UTs (fork keeps them until it keeps only its
 * caller) see the new fork_gen and do nothing. */
static void after_fork_child(void)
{
	fork_gen++;
	/* the table first: close may switch, and a UT of the child's that
	 * makes a timer meanwhile must keep it */
	for (uint32_t i = 0; i < nslots; i++)
		if (slot_at(i)->t)
			slot_free(i);
	for (struct tt *t = all; t; t = t->next) {
		int fd = t->gone ? -1 : t->fd;
		t->fd = -1;
		if (fd >= 0)
			close(fd);
	}
}

__attribute__((constructor(103))) static void timer_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

/* ---- the exported names, under glibc's versions ----
 * The default (GLIBC_2.34) and librt's GLIBC_2.3.3 are one function, as in
 * glibc; `remove` leaves only the versioned names in the object, so nothing
 * is exported unversioned (an unversioned name would answer a reference to
 * the int ABI too).  A static link takes the default version. */
#define TIMER_ABI(name, params, int_params)                                           \
	EXPORT int __weft_##name params;                                              \
	EXPORT int __weft_##name##_int int_params;                                    \
	__asm__(".symver __weft_" #name ", " #name "@@GLIBC_2.34, remove");          \
	__asm__(".symver __weft_" #name ", " #name "@GLIBC_2.3.3");                  \
	__asm__(".symver __weft_" #name "_int, " #name "@GLIBC_2.2.5, remove")

TIMER_ABI(timer_create, (clockid_t clk, struct sigevent *evp, timer_t *out),
	  (clockid_t clk, struct sigevent *evp, int *out));
TIMER_ABI(timer_delete, (timer_t id), (int id));
TIMER_ABI(timer_settime, (timer_t id, int flags, const struct itimerspec *value, struct itimerspec *old),
	  (int id, int flags, const struct itimerspec *value, struct itimerspec *old));
TIMER_ABI(timer_gettime, (timer_t id, struct itimerspec *cur), (int id, struct itimerspec *cur));
TIMER_ABI(timer_getoverrun, (timer_t id), (int id));

int __weft_timer_create(clockid_t clk, struct sigevent *evp, timer_t *out)
{
	return create(clk, evp, out);
}

int __weft_timer_delete(timer_t id) { return delete(id); }

int __weft_timer_settime(timer_t id, int flags, const struct itimerspec *value, struct itimerspec *old)
{
	return settime(id, flags, value, old);
}

int __weft_timer_gettime(timer_t id, struct itimerspec *cur) { return gettime(id, cur); }

int __weft_timer_getoverrun(timer_t id) { return getoverrun(id); }

/* ---- the int timer_t ABI (GLIBC_2.2.5) ----
 * As glibc: a list of 256 timer_t, the int being the index; made and
 * emptied with compare-and-swap, read from anywhere.  An entry holds the
 * timer_t + 1 (a kernel timer's id may be 0).  Stricter than glibc: an
 * index that holds no timer is EINVAL, not a read out of bounds. */
#define OLD_TIMER_MAX 256
static uintptr_t old_list[OLD_TIMER_MAX];

static bool old_timer(int i, timer_t *id)
{
	uintptr_t v = i >= 0 && i < OLD_TIMER_MAX ? __atomic_load_n(&old_list[i], __ATOMIC_ACQUIRE) : 0;
	if (!v) {
		errno = EINVAL;
		return false;
	}
	*id = (timer_t)(v - 1);
	return true;
}

int __weft_timer_create_int(clockid_t clk, struct sigevent *evp, int *out)
{
	timer_t id;
	if (create(clk, evp, &id) != 0)
		return -1;
	for (int i = 0; i < OLD_TIMER_MAX; i++) {
		uintptr_t free_entry = 0;
		if (__atomic_compare_exchange_n(&old_list[i], &free_entry, (uintptr_t)id + 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			*out = i;
			return 0;
		}
	}
	delete(id);
	errno = EINVAL;                           /* glibc's answer when the list is full */
	return -1;
}

int __weft_timer_delete_int(int i)
{
	timer_t id;
	if (!old_timer(i, &id) || delete(id) != 0)
		return -1;
	__atomic_store_n(&old_list[i], 0, __ATOMIC_RELEASE);
	return 0;
}

int __weft_timer_settime_int(int i, int flags, const struct itimerspec *value, struct itimerspec *old)
{
	timer_t id;
	return old_timer(i, &id) ? settime(id, flags, value, old) : -1;
}

int __weft_timer_gettime_int(int i, struct itimerspec *cur)
{
	timer_t id;
	return old_timer(i, &id) ? gettime(id, cur) : -1;
}

int __weft_timer_getoverrun_int(int i)
{
	timer_t id;
	return old_timer(i, &id) ? getoverrun(id) : -1;
}
