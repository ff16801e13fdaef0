/*
 * api_fuzz — every call Weft exports, driven with hostile arguments, each
 * case in its own child process with a timeout.
 *
 * A case picks one entry point (round robin over the table at the bottom,
 * so every one is exercised in a short run) and hostile values from seeded
 * randomness: random, zero, stale (joined), exited, detached and wrong-slot
 * thread handles; NULL, never-initialised, destroyed and all-zero objects and
 * attributes; objects held by the caller or by another thread (wrong
 * owners); extreme sizes; tv_nsec out of range, tv_sec at LLONG_MIN and
 * LLONG_MAX, past, near and far deadlines on every clock and on garbage
 * clock ids.  It then asserts that the call answered a defined error code
 * (the set allowed for that combination; see the table) and that it neither
 * crashed nor hung.  Where a call would rightly wait for ever, another thread
 * releases the object after HOLD_NS, so every case ends.
 *
 *   WEFT_FUZZ_CASES=N    how many cases (default 3000: ~3 s, ~11 s under ASan; CI runs it)
 *   WEFT_FUZZ_SEED=S     the seed (default: from the clock; printed on failure)
 *   WEFT_FUZZ_CASE=K     run case K only (with the seed printed for it)
 *   WEFT_FUZZ_MATCH=str  only entry points whose name contains str
 *   WEFT_FUZZ_TIMEOUT_MS a case that takes longer has hung (default 10000)
 *   WEFT_FUZZ_VERBOSE=1  print every case's description
 * A long run: `make fuzz` (WEFT_FUZZ_CASES=100000 by default).
 *
 * Where POSIX leaves the answer undefined and Weft only promises no crash
 * and no hang, the allowed set is wide:
 *
 *   call / input                                  Weft          allowed
 *   ----------------------------------------------------------------------
 *   any handle call, joined/random/zero handle    ESRCH         ESRCH (+EINVAL when another
 *                                                               argument is bad too)
 *   timed join/lock/wait, tv_nsec out of range    EINVAL        EINVAL (glibc 2.36 spins for
 *                                                               ever in a timed join)
 *   timed lock/wait, time ok, no need to wait     0             0, EINVAL (POSIX: may check)
 *   lock/unlock/wait on a destroyed object        as if valid   0 or its error, EINVAL
 *   rwlock unlock of another thread's read lock   0             0, EPERM (undefined)
 *   normal mutex unlocked by a non-owner          0             0, EPERM (undefined)
 *   NULL out-pointer (getters, join retval ok)    EINVAL        EINVAL, EFAULT
 *   scope PROCESS                                 0             0, ENOTSUP
 *   process-shared objects                        0             ENOTSUP, 0
 *   pthread_kill/sigqueue of an exited thread     0             0, ESRCH
 *   sched_rr_get_interval of another pid          the kernel's  0, EINVAL, ESRCH, EPERM, EFAULT
 *   setaffinity/getaffinity sizes                 the kernel's  0, EINVAL, EFAULT
 *
 * Not driven with hostile values, and why: the cleanup buffers
 * (_pthread_cleanup_*: NULL and never-pushed buffers only; pthread_cleanup_push
 * and __pthread_unwind_next take only code and caller-owned buffers, and are
 * run as a program uses them), pthread_exit (called with random values),
 * pause (needs a signal: driven with a SIGALRM timer), syscall other
 * than futex (forwarded to the kernel), random pointers where an object is
 * expected (undefined in POSIX and for glibc alike: only NULL, destroyed and
 * never-initialised objects are driven), blocking calls that must deadlock
 * by POSIX (relocking a normal mutex or a spinlock without a deadline).
 */
#include "fuzz.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

char *fuzz_desc;

/* ------------------------------------------------------------------ */
/* Helper threads                                                      */

static weft_event_t hold_ev = WEFT_EVENT_INITIALIZER;   /* never set */
static pthread_attr_t helper_attr;                      /* sane, whatever the default */

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int e = pthread_create(&t, &helper_attr, fn, arg);
	if (e) {
		say("\n  => helper thread not created: %s", ename(e));
		fprintf(stderr, "%s\n", fuzz_desc);
		_exit(1);
	}
	return t;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	nanosleep(&ts, NULL);
}

/* Let the other UTs run until `*flag`. */
static void wait_flag(volatile int *flag)
{
	for (int i = 0; !*flag; i++) {
		sched_yield();
		if (i > 100000)
			sleep_ns(100000);             /* several VPs: it may be on a busy one */
		if (i > 150000)
			check_true("helper thread got going", false);
	}
}

static void *park_forever(void *arg)
{
	weft_event_wait(&hold_ev);
	return arg;
}

static void *return_at_once(void *arg) { return arg; }

/* ---- thread handles ---- */

/* Until every other UT has parked or ended: on one VP a few yields do it;
 * on several (WEFT_VPS) a UT may still be running on another VP. */
static void settle(void)
{
	struct weft_stats s;
	for (int i = 0; i < 150000; i++) {
		if (weft_stats_get(&s, sizeof s) != 0 || s.threads_ready == 0)
			return;
		if (i < 100000)
			sched_yield();
		else
			sleep_ns(100000);
	}
}

enum tkind {
	TH_SELF, TH_LIVE, TH_ZOMBIE, TH_JOINED, TH_DETACHED_LIVE, TH_DETACHED_GONE,
	TH_RANDOM, TH_ZERO, TH_ONES, TH_WRONG_GEN, TH_BEING_JOINED, TH_MAIN, TH_NKINDS
};
static const char *const tkind_name[] = {
	"self", "live", "exited, unjoined", "joined (stale)", "detached, live",
	"detached, gone", "random", "zero", "all ones", "live slot, wrong generation",
	"live, another thread joining it", "main (from a thread)",
};

static bool is_dead(enum tkind k)
{
	return k == TH_JOINED || k == TH_DETACHED_GONE || k == TH_RANDOM || k == TH_ZERO ||
	       k == TH_ONES || k == TH_WRONG_GEN;
}

static void *join_it(void *arg)
{
	pthread_join((pthread_t)(uintptr_t)arg, NULL);
	return NULL;
}

static pthread_t main_handle;          /* set while main waits in from_thread */

/* A handle of kind k (TH_MAIN only makes sense from another thread: it is
 * main's own handle, live and parked). */
static pthread_t make_thread(enum tkind k)
{
	pthread_t t;
	switch (k) {
	case TH_SELF:
		return pthread_self();
	case TH_MAIN:
		/* several VPs: this thread may run before main has parked
		 * joining it; joined first, main's join would be the EDEADLK */
		settle();
		return main_handle;
	case TH_LIVE:
		t = spawn(park_forever, NULL);
		sched_yield();
		settle();
		return t;
	case TH_BEING_JOINED:
		t = spawn(park_forever, NULL);
		spawn(join_it, (void *)(uintptr_t)t);
		for (int i = 0; i < 10; i++)
			sched_yield();
		settle();
		return t;
	case TH_ZOMBIE:
		t = spawn(return_at_once, (void *)1);
		while (weft_ping(t) == 0)
			sched_yield();
		return t;
	case TH_JOINED:
		t = spawn(return_at_once, NULL);
		ENSURE(pthread_join(t, NULL) == 0);
		return t;
	case TH_DETACHED_LIVE:
		t = spawn(park_forever, NULL);
		ENSURE(pthread_detach(t) == 0);
		sched_yield();
		settle();
		return t;
	case TH_DETACHED_GONE:
		t = spawn(return_at_once, NULL);
		ENSURE(pthread_detach(t) == 0);
		for (int i = 0; i < 10; i++)
			sched_yield();
		for (int i = 0; i < 150000 && weft_ping(t) == 0; i++)
			if (i < 100000)
				sched_yield();
			else
				sleep_ns(100000);     /* up to 5 s more: a busy other VP */
		return t;
	case TH_RANDOM:
		return (pthread_t)rnd();
	case TH_ZERO:
		return 0;
	case TH_ONES:
		return (pthread_t)~0ull;
	case TH_WRONG_GEN:
		t = spawn(park_forever, NULL);
		return (pthread_t)((uint64_t)t + (1ull << 32) * (1 + pick(1000)));
	default:
		return 0;
	}
}

static pthread_t pick_thread(enum tkind *k, bool allow_main)
{
	*k = (enum tkind)pick(allow_main ? TH_NKINDS : TH_NKINDS - 1);
	pthread_t t = make_thread(*k);
	say(" [thread %s %#llx]", tkind_name[*k], (unsigned long long)t);
	return t;
}

/* Run fn in a fresh thread and wait for it (a case that needs a caller
 * other than main, e.g. to name main's handle). */
static void from_thread(void (*fn)(void))
{
	pthread_t t = spawn((void *(*)(void *))(void *)fn, NULL);
	ENSURE(pthread_join(t, NULL) == 0);
}

/* ------------------------------------------------------------------ */
/* Threads: join, detach, cancel, signals, scheduling, names           */

static bool main_is_parked(void)
{
	return main_handle && !pthread_equal(main_handle, pthread_self());
}

static void join_case(int variant)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, main_is_parked());
	void *ret, **retp = coin() ? &ret : NULL;
	bool dead = is_dead(k);
	switch (variant) {
	case 0: /* pthread_join */
		if (k == TH_LIVE || k == TH_WRONG_GEN)
			weft_event_set(&hold_ev);
		if (k == TH_BEING_JOINED) {
			EXPECT(pthread_join(t, retp), ALLOW(EINVAL));
			break;
		}
		if (k == TH_MAIN) {
			/* main waits joining us: joining it back is EDEADLK */
			EXPECT(pthread_join(t, retp), ALLOW(EDEADLK));
			break;
		}
		EXPECT(pthread_join(t, retp), dead ? ALLOW(ESRCH) : k == TH_SELF ? ALLOW(EDEADLK) :
			k == TH_DETACHED_LIVE ? ALLOW(EINVAL) : ALLOW(0));
		break;
	case 1: /* pthread_tryjoin_np */
		EXPECT(pthread_tryjoin_np(t, retp), dead ? ALLOW(ESRCH) :
		       k == TH_SELF || k == TH_MAIN ? ALLOW(EDEADLK, EBUSY) :
		       k == TH_DETACHED_LIVE || k == TH_BEING_JOINED ? ALLOW(EINVAL, EBUSY) :
		       k == TH_ZOMBIE ? ALLOW(0) : ALLOW(EBUSY));
		break;
	default: { /* timed and clock joins */
		bool clock_ok = true;
		clockid_t clk = variant == 2 ? CLOCK_REALTIME : pick_clock(&clock_ok);
		enum tclass tc;
		struct timespec ts = pick_abs(clk, &tc);
		const struct timespec *tsp = pick(10) ? &ts : NULL;
		if (!tsp) {
			say(" [abstime NULL: no timeout]");
			tc = T_FOREVER;
		}
		if (tc == T_FOREVER && (k == TH_LIVE || k == TH_WRONG_GEN))
			weft_event_set(&hold_ev);
		int r = variant == 2 ? pthread_timedjoin_np(t, retp, tsp)
				     : pthread_clockjoin_np(t, retp, clk, tsp);
		say("\n  pthread_%sjoin_np(...)", variant == 2 ? "timed" : "clock");
		if (!clock_ok)
			expect_in("join", r, ALLOW(EINVAL));
		else if (dead)
			expect_in("join", r, tc == T_INVALID ? ALLOW(ESRCH, EINVAL) : ALLOW(ESRCH));
		else if (tc == T_INVALID)
			expect_in("join", r, k == TH_ZOMBIE ? ALLOW(EINVAL, 0) : ALLOW(EINVAL, EDEADLK));
		else if (k == TH_SELF || k == TH_MAIN)
			expect_in("join", r, ALLOW(EDEADLK));
		else if (k == TH_DETACHED_LIVE || k == TH_BEING_JOINED)
			expect_in("join", r, ALLOW(EINVAL));
		else if (k == TH_ZOMBIE || tc == T_FOREVER)
			expect_in("join", r, ALLOW(0));
		else
			expect_in("join", r, ALLOW(ETIMEDOUT));
		if (r == ETIMEDOUT) {
			/* still joinable (POSIX) */
			EXPECT(pthread_tryjoin_np(t, NULL), ALLOW(EBUSY));
		}
	}
	}
}

static int join_variant;
static void join_from_thread(void) { join_case(join_variant); }

static void f_pthread_join(void) { join_case(0); }
static void f_pthread_tryjoin_np(void) { join_case(1); }
static void f_pthread_timedjoin_np(void) { join_case(2); }
static void f_pthread_clockjoin_np(void) { join_case(3); }
static void f_join_main_from_thread(void)
{
	main_handle = pthread_self();
	join_variant = (int)pick(4);
	/* the thread may pick main, parked in pthread_join: a joiner */
	from_thread(join_from_thread);
}

static void f_pthread_detach(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	EXPECT(pthread_detach(t), is_dead(k) ? ALLOW(ESRCH) :
	       k == TH_DETACHED_LIVE || k == TH_BEING_JOINED ? ALLOW(EINVAL) : ALLOW(0));
	if (!is_dead(k) && k != TH_SELF) {
		/* detached now: a join is EINVAL or (gone already) ESRCH */
		EXPECT(pthread_tryjoin_np(t, NULL), ALLOW(EINVAL, ESRCH, EBUSY));
	}
}

static void f_pthread_cancel(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	if (k == TH_SELF)
		ENSURE(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL) == 0);
	EXPECT(pthread_cancel(t), is_dead(k) ? ALLOW(ESRCH) : ALLOW(0));
	EXPECT(pthread_cancel(t), is_dead(k) ? ALLOW(ESRCH) : ALLOW(0));
	if (k == TH_LIVE || k == TH_BEING_JOINED) {
		weft_event_set(&hold_ev);
		void *r = NULL;
		if (k == TH_LIVE) {
			EXPECT(pthread_join(t, &r), ALLOW(0));
			ENSURE(r == PTHREAD_CANCELED || r == NULL);
		}
	}
}

static int pick_signal(bool *valid)
{
	/* never one that ends the process: 0, ignored ones, and garbage */
	static const int sigs[] = { 0, 0, SIGWINCH, SIGCHLD, SIGURG, -1, NSIG, 65, 1000, INT_MAX, INT_MIN };
	int s = sigs[pick(sizeof sigs / sizeof sigs[0])];
	*valid = s >= 0 && s < NSIG;
	say(" [signal %d]", s);
	return s;
}

static void f_pthread_kill(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	bool ok;
	int sig = pick_signal(&ok);
	if (is_dead(k))
		EXPECT(pthread_kill(t, sig), ok ? ALLOW(ESRCH) : ALLOW(ESRCH, EINVAL));
	else
		EXPECT(pthread_kill(t, sig), !ok ? ALLOW(EINVAL) : k == TH_ZOMBIE || k == TH_DETACHED_GONE ? ALLOW(0, ESRCH) : ALLOW(0));
}

static void f_pthread_sigqueue(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	bool ok;
	int sig = pick_signal(&ok);
	union sigval v = { .sival_int = (int)rnd() };
	if (is_dead(k))
		EXPECT(pthread_sigqueue(t, sig, v), ok ? ALLOW(ESRCH) : ALLOW(ESRCH, EINVAL));
	else
		EXPECT(pthread_sigqueue(t, sig, v), !ok ? ALLOW(EINVAL) : ALLOW(0, ESRCH, EAGAIN));
}

static int pick_policy(void)
{
	static const int good[] = { SCHED_OTHER, SCHED_FIFO, SCHED_RR };
	return pick_int(good, 3);
}

static int pick_prio(void)
{
	static const int good[] = { 0, 1, 2, 50, 98, 99 };
	return pick_int(good, 6);
}

static bool prio_ok(int policy, int prio)
{
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		return prio >= 1 && prio <= 99;
	return policy == SCHED_OTHER && prio == 0;
}

static void f_pthread_setschedparam(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	int policy = pick_policy();
	struct sched_param sp = { .sched_priority = pick_prio() };
	const struct sched_param *spp = pick(10) ? &sp : NULL;
	bool ok = spp && prio_ok(policy, sp.sched_priority);
	if (is_dead(k))
		EXPECT(pthread_setschedparam(t, policy, spp), ok ? ALLOW(ESRCH) : ALLOW(ESRCH, EINVAL));
	else
		EXPECT(pthread_setschedparam(t, policy, spp), ok ? ALLOW(0) : ALLOW(EINVAL));
}

static void f_pthread_getschedparam(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	int policy;
	struct sched_param sp;
	int *pp = pick(6) ? &policy : NULL;
	struct sched_param *spp = pick(6) ? &sp : NULL;
	bool ok = pp && spp;
	if (is_dead(k))
		EXPECT(pthread_getschedparam(t, pp, spp), ok ? ALLOW(ESRCH) : ALLOW(ESRCH, EINVAL));
	else
		EXPECT(pthread_getschedparam(t, pp, spp), ok ? ALLOW(0) : ALLOW(EINVAL));
	if (!is_dead(k) && ok)
		ENSURE(prio_ok(policy, sp.sched_priority));
}

static void f_pthread_setschedprio(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	int prio = pick_prio();
	if (is_dead(k)) {
		EXPECT(pthread_setschedprio(t, prio), ALLOW(ESRCH, EINVAL));
		return;
	}
	/* every thread here is SCHED_OTHER: only 0 is a priority */
	EXPECT(pthread_setschedprio(t, prio), prio == 0 ? ALLOW(0) : ALLOW(EINVAL));
}

static void f_pthread_setname_np(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	static const char *const names[] = { "", "x", "fifteen-chars-x", "sixteen-chars-xx",
					     "a name far longer than the kernel's comm", NULL };
	const char *n = names[pick(6)];
	say(" [name %s]", n ? n : "NULL");
	bool ok = n && strlen(n) <= 15;
	if (is_dead(k))
		EXPECT(pthread_setname_np(t, n), ALLOW(ESRCH, EINVAL, ERANGE));
	else
		EXPECT(pthread_setname_np(t, n), ok ? ALLOW(0) : n ? ALLOW(ERANGE) : ALLOW(EINVAL));
}

static void f_pthread_getname_np(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	char buf[32];
	size_t len = pick(3) ? pick(20) : sizeof buf;
	char *b = pick(8) ? buf : NULL;
	say(" [buf %s, len %zu]", b ? "ok" : "NULL", len);
	if (is_dead(k))
		EXPECT(pthread_getname_np(t, b, b ? len : 0), ALLOW(ESRCH, EINVAL, ERANGE));
	else
		EXPECT(pthread_getname_np(t, b, b ? len : 0), ALLOW(0, ERANGE, EINVAL));
}

static void f_pthread_getattr_np(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	pthread_attr_t a;
	pthread_attr_t *ap = pick(8) ? &a : NULL;
	int r = pthread_getattr_np(t, ap);
	say("\n  pthread_getattr_np(t, %s)", ap ? "&a" : "NULL");
	expect_in("pthread_getattr_np", r, is_dead(k) ? ALLOW(ESRCH, EINVAL) : ap ? ALLOW(0) : ALLOW(EINVAL));
	if (r == 0) {
		void *lo;
		size_t size, guard;
		EXPECT(pthread_attr_getstack(&a, &lo, &size), ALLOW(0));
		EXPECT(pthread_attr_getguardsize(&a, &guard), ALLOW(0));
		EXPECT(pthread_attr_destroy(&a), ALLOW(0));
	}
}

static void f_pthread_affinity_np(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	static const size_t sizes[] = { 0, 1, 7, 8, 16, 64, 128 };
	cpu_set_t set;
	memset(&set, 0, sizeof set);
	size_t size = sizes[pick(7)];
	cpu_set_t *sp = pick(8) ? &set : NULL;
	say(" [size %zu, set %s]", size, sp ? "ok" : "NULL");
	if (coin()) {
		if (is_dead(k))
			EXPECT(pthread_getaffinity_np(t, size, sp), ALLOW(ESRCH, EINVAL, EFAULT));
		else
			EXPECT(pthread_getaffinity_np(t, size, sp), ALLOW(0, EINVAL, EFAULT));
	} else {
		if (sp)
			sched_getaffinity(0, sizeof set, &set);   /* a mask that works */
		if (sp && pick(3) == 0)
			memset(&set, (int)pick(256), sizeof set);
		if (is_dead(k))
			EXPECT(pthread_setaffinity_np(t, size, sp), ALLOW(ESRCH, EINVAL, EFAULT));
		else
			EXPECT(pthread_setaffinity_np(t, size, sp), ALLOW(0, EINVAL, EFAULT));
	}
}

static void f_pthread_getcpuclockid(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	clockid_t c;
	clockid_t *cp = pick(6) ? &c : NULL;
	if (is_dead(k))
		EXPECT(pthread_getcpuclockid(t, cp), ALLOW(ESRCH, EINVAL));
	else
		EXPECT(pthread_getcpuclockid(t, cp), cp ? ALLOW(0) : ALLOW(EINVAL));
	if (!is_dead(k) && cp) {
		struct timespec ts;
		ENSURE(clock_gettime(c, &ts) == 0);
	}
}

static void f_pthread_equal_self(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	EXPECT(pthread_equal(t, t) != 0, ALLOW(1));
	EXPECT(pthread_equal(pthread_self(), t) != 0, k == TH_SELF ? ALLOW(1) : ALLOW(0));
	EXPECT(pthread_equal(pthread_self(), pthread_self()) != 0, ALLOW(1));
}

static void *exit_with(void *arg)
{
	pthread_exit(arg);
}

static void f_pthread_exit(void)
{
	void *v = (void *)(uintptr_t)rnd();
	say(" [value %p]", v);
	pthread_t t = spawn(exit_with, v);
	void *r;
	EXPECT(pthread_join(t, &r), ALLOW(0));
	ENSURE(r == v);
}

/* ---- Xinu calls on handles ---- */

static void f_weft_ping(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	bool alive = k == TH_SELF || k == TH_LIVE || k == TH_DETACHED_LIVE || k == TH_BEING_JOINED;
	EXPECT(weft_ping(t), alive ? ALLOW(0) : ALLOW(ESRCH));
}

static void f_weft_send(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	bool alive = k == TH_SELF || k == TH_LIVE || k == TH_DETACHED_LIVE || k == TH_BEING_JOINED;
	uintptr_t m = (uintptr_t)rnd();
	EXPECT(weft_send(t, m), alive ? ALLOW(0) : ALLOW(ESRCH));
	EXPECT(weft_send(t, m), alive ? ALLOW(EAGAIN) : ALLOW(ESRCH));
	if (k == TH_SELF) {
		uintptr_t got;
		EXPECT(weft_recvclr(&got), ALLOW(0));
		ENSURE(got == m);
	}
}

static void f_weft_yield_to(void)
{
	enum tkind k;
	pthread_t t = pick_thread(&k, false);
	bool alive = k == TH_SELF || k == TH_LIVE || k == TH_DETACHED_LIVE || k == TH_BEING_JOINED;
	/* alive ones other than self are parked: not ready */
	EXPECT(weft_yield_to(t), !alive ? ALLOW(ESRCH) : k == TH_SELF ? ALLOW(0) : ALLOW(EAGAIN));
}

/* ------------------------------------------------------------------ */
/* Thread attributes and pthread_create                                */

enum astate { A_NULL, A_GARBAGE, A_DESTROYED, A_ZERO, A_VALID, A_VALID2 };
static const char *const astate_name[] = { "NULL", "never initialised", "destroyed",
					   "all zero", "valid", "valid" };
static pthread_attr_t attr_obj;

static pthread_attr_t *pick_attr(enum astate *st)
{
	*st = (enum astate)pick(6);
	say(" [attr %s]", astate_name[*st]);
	switch (*st) {
	case A_NULL:
		return NULL;
	case A_GARBAGE:
		for (size_t i = 0; i < sizeof attr_obj; i += 8) {
			uint64_t v = rnd();
			memcpy((char *)&attr_obj + i, &v, sizeof attr_obj - i < 8 ? sizeof attr_obj - i : 8);
		}
		return &attr_obj;
	case A_DESTROYED:
		ENSURE(pthread_attr_init(&attr_obj) == 0);
		ENSURE(pthread_attr_destroy(&attr_obj) == 0);
		return &attr_obj;
	case A_ZERO:
		memset(&attr_obj, 0, sizeof attr_obj);
		return &attr_obj;
	default:
		ENSURE(pthread_attr_init(&attr_obj) == 0);
		return &attr_obj;
	}
}

/* An attribute object in a hostile state: a, st, valid. */
#define ATTR_OBJECT()                                                                \
	enum astate st;                                                              \
	pthread_attr_t *a = pick_attr(&st);                                          \
	bool valid = st >= A_VALID;                                                  \
	(void)a;

static void f_attr_detachstate(void)
{
	ATTR_OBJECT();
	static const int good[] = { PTHREAD_CREATE_JOINABLE, PTHREAD_CREATE_DETACHED };
	int v = pick_int(good, 2), got = -7;
	EXPECT(pthread_attr_setdetachstate(a, v), valid && in_set(v, good, 2) ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getdetachstate(a, coin() ? &got : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	ENSURE(got == -7 || in_set(got, good, 2));
}

static void f_attr_inheritsched(void)
{
	ATTR_OBJECT();
	static const int good[] = { PTHREAD_INHERIT_SCHED, PTHREAD_EXPLICIT_SCHED };
	int v = pick_int(good, 2), got = -7;
	EXPECT(pthread_attr_setinheritsched(a, v), valid && in_set(v, good, 2) ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getinheritsched(a, coin() ? &got : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	ENSURE(got == -7 || in_set(got, good, 2));
}

static void f_attr_sched(void)
{
	ATTR_OBJECT();
	static const int good[] = { SCHED_OTHER, SCHED_FIFO, SCHED_RR };
	int policy = pick_int(good, 3), got = -7;
	EXPECT(pthread_attr_setschedpolicy(a, policy), valid && in_set(policy, good, 3) ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getschedpolicy(a, coin() ? &got : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	int cur = SCHED_OTHER;
	if (valid)
		pthread_attr_getschedpolicy(a, &cur);
	struct sched_param sp = { .sched_priority = pick_prio() }, out;
	struct sched_param *spp = pick(8) ? &sp : NULL;
	EXPECT(pthread_attr_setschedparam(a, spp), valid && spp && prio_ok(cur, sp.sched_priority) ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getschedparam(a, coin() ? &out : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
}

static void f_attr_scope(void)
{
	ATTR_OBJECT();
	static const int good[] = { PTHREAD_SCOPE_SYSTEM, PTHREAD_SCOPE_PROCESS };
	int v = pick_int(good, 2), got;
	EXPECT(pthread_attr_setscope(a, v), !valid || !in_set(v, good, 2) ? ALLOW(EINVAL) :
	       v == PTHREAD_SCOPE_PROCESS ? ALLOW(0, ENOTSUP) : ALLOW(0));
	EXPECT(pthread_attr_getscope(a, coin() ? &got : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
}

static void f_attr_stacksize_guardsize(void)
{
	ATTR_OBJECT();
	size_t size = pick_size(), guard = pick_size(), got;
	EXPECT(pthread_attr_setstacksize(a, size), valid && size >= PTHREAD_STACK_MIN ? ALLOW(0) : ALLOW(EINVAL));
	if (valid && size >= PTHREAD_STACK_MIN) {
		EXPECT(pthread_attr_getstacksize(a, &got), ALLOW(0));
		ENSURE(got == size);
	}
	EXPECT(pthread_attr_setguardsize(a, guard), valid ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getguardsize(a, coin() ? &got : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getstacksize(a, NULL), ALLOW(EINVAL));
}

static char user_stack[128 * 1024] __attribute__((aligned(4096)));

static void *pick_stack_addr(void)
{
	static void *const addrs[] = { NULL, user_stack, (void *)1, (void *)4096,
				       (void *)(UINTPTR_MAX - 4095), (void *)UINTPTR_MAX };
	void *p = pick(6) ? addrs[pick(6)] : (void *)(uintptr_t)rnd();
	say(" [addr %p]", p);
	return p;
}

static void f_attr_stack(void)
{
	ATTR_OBJECT();
	void *addr = pick_stack_addr(), *got_addr;
	size_t size = pick_size(), got_size;
	uintptr_t top;
	bool ok = valid && addr && size >= PTHREAD_STACK_MIN &&
		  !__builtin_add_overflow((uintptr_t)addr, size, &top);
	EXPECT(pthread_attr_setstack(a, addr, size), ok ? ALLOW(0) : ALLOW(EINVAL));
	if (ok) {
		EXPECT(pthread_attr_getstack(a, &got_addr, &got_size), ALLOW(0));
		ENSURE(got_addr == addr && got_size == size);
	}
	EXPECT(pthread_attr_getstack(a, coin() ? &got_addr : NULL, coin() ? &got_size : NULL),
	       valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	void *top_in = pick_stack_addr(), *top_out;
	EXPECT(pthread_attr_setstackaddr(a, top_in), valid && top_in ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getstackaddr(a, coin() ? &top_out : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	if (valid)
		EXPECT(pthread_attr_destroy(a), ALLOW(0));
}

static void f_attr_affinity_sigmask(void)
{
	ATTR_OBJECT();
	static const size_t sizes[] = { 0, 1, 7, 8, 64, 128 };
	cpu_set_t set, out;
	memset(&set, (int)pick(256), sizeof set);
	size_t size = sizes[pick(6)], osize = sizes[pick(6)];
	say(" [setsize %zu, getsize %zu]", size, osize);
	cpu_set_t *sp = pick(6) ? &set : NULL;
	EXPECT(pthread_attr_setaffinity_np(a, size, sp), valid ? ALLOW(0, ENOMEM) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getaffinity_np(a, osize, coin() ? &out : NULL), valid ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	sigset_t m, mo;
	sigfillset(&m);
	EXPECT(pthread_attr_setsigmask_np(a, coin() ? &m : NULL), valid ? ALLOW(0, ENOMEM) : ALLOW(EINVAL));
	EXPECT(pthread_attr_getsigmask_np(a, coin() ? &mo : NULL),
	       valid ? ALLOW(0, PTHREAD_ATTR_NO_SIGMASK_NP, EINVAL) : ALLOW(EINVAL));
	if (valid)
		EXPECT(pthread_attr_destroy(a), ALLOW(0));
}

static void f_attr_init_destroy(void)
{
	ATTR_OBJECT();
	if (coin()) {
		EXPECT(pthread_attr_destroy(a), valid ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_attr_destroy(a), ALLOW(EINVAL));
	} else {
		EXPECT(pthread_attr_init(a), a ? ALLOW(0) : ALLOW(EINVAL));
		if (a)
			EXPECT(pthread_attr_destroy(a), ALLOW(0));
	}
}

/* The page-rounded sum, as glibc and Weft check it: 0, or EINVAL. */
static int stack_span_err(size_t size, size_t guard, size_t *span)
{
	size_t s, g;
	if (__builtin_add_overflow(size, 4095, &s) || __builtin_add_overflow(guard, 4095, &g))
		return EINVAL;
	s &= ~(size_t)4095;
	g &= ~(size_t)4095;
	return __builtin_add_overflow(s, g, span) ? EINVAL : 0;
}

/* Threads are made copy-stack by default (WEFT_STACK_MODE=copy): their
 * stack is a run stack of at least 64 MiB, made once, and a guard is the
 * run stack's (weft.h, docs/runtime.md). */
static bool copy_mode(void)
{
	static int mode = -1;
	if (mode < 0) {
		pthread_attr_t a;
		int m = WEFT_STACK_SEPARATE;
		pthread_attr_init(&a);
		weft_attr_getstackmode(&a, &m);
		pthread_attr_destroy(&a);
		mode = m == WEFT_STACK_COPY;
	}
	return mode;
}

/* pthread_create's possible answers for attributes set to this. */
static const int *create_allowed(size_t size, size_t guard)
{
	size_t span;
	if (stack_span_err(size, guard, &span))
		return ALLOW(EINVAL);
	if (copy_mode())
		return size <= ((size_t)64 << 20) ? ALLOW(0) : ALLOW(0, EAGAIN);
	if (span >= ((size_t)1 << 47))
		return ALLOW(EAGAIN);
	if (span >= ((size_t)1 << 40))
		return ALLOW(0, EAGAIN);
	return ALLOW(0);
}

static volatile int created_ran;
static void *mark_ran(void *arg)
{
	volatile char buf[1024];
	buf[0] = 1;
	created_ran += buf[0];
	return arg;
}

static void f_pthread_create(void)
{
	enum astate st;
	pthread_attr_t *a = pick_attr(&st);
	bool valid = st >= A_VALID || st == A_NULL;
	bool detached = false, user = false, bad_sched = false;
	size_t size = 0, guard = 4096;
	if (st >= A_VALID) {
		if (coin()) {
			detached = coin();
			pthread_attr_setdetachstate(a, detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
		}
		if (pick(3) == 0) {
			int policy = pick_policy();
			struct sched_param sp = { .sched_priority = pick_prio() };
			pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
			int e1 = pthread_attr_setschedparam(a, &sp);      /* against OTHER: only 0 */
			int e2 = pthread_attr_setschedpolicy(a, policy);
			int eff_prio = e1 == 0 ? sp.sched_priority : 0;
			int eff_policy = e2 == 0 ? policy : SCHED_OTHER;
			bad_sched = !prio_ok(eff_policy, eff_prio);
			say(" [explicit sched: policy %d prio %d]", eff_policy, eff_prio);
		}
		if (pick(4) == 0) {
			user = true;
			ENSURE(pthread_attr_setstack(a, user_stack, sizeof user_stack) == 0);
			say(" [its own stack]");
		} else {
			size = pick_size();
			guard = pick(3) ? 4096 : pick_size();
			if (pthread_attr_setstacksize(a, size) != 0)
				pthread_attr_getstacksize(a, &size);
			pthread_attr_setguardsize(a, guard);
			say(" [stack %zu guard %zu]", size, guard);
		}
	}
	pthread_t t, *tp = pick(12) ? &t : NULL;
	void *(*fn)(void *) = pick(12) ? mark_ran : NULL;
	say(" [thread ptr %s, start %s]", tp ? "ok" : "NULL", fn ? "ok" : "NULL");
	say("\n  pthread_create(...)");
	int r = pthread_create(tp, a, fn, (void *)3);
	if (!tp || !fn || !valid || bad_sched)
		expect_in("pthread_create", r, ALLOW(EINVAL));
	else if (user || st == A_NULL)
		expect_in("pthread_create", r, ALLOW(0));
	else
		expect_in("pthread_create", r, create_allowed(size, guard));
	if (r == 0 && !detached) {
		void *ret;
		EXPECT(pthread_join(t, &ret), ALLOW(0));
		ENSURE(ret == (void *)3 && created_ran);
	}
}

static void f_attr_default_np(void)
{
	ATTR_OBJECT();
	size_t size = 0, guard = 4096;
	bool has_stack = false, bad_sched = false;
	if (valid) {
		size = pick_size();
		if (pthread_attr_setstacksize(a, size) != 0)
			pthread_attr_getstacksize(a, &size);
		if (coin()) {
			guard = pick_size();
			pthread_attr_setguardsize(a, guard);
		}
		if (pick(6) == 0)
			has_stack = pthread_attr_setstack(a, user_stack, sizeof user_stack) == 0;
		if (pick(4) == 0) {
			int policy = pick_policy();
			bad_sched = pthread_attr_setschedpolicy(a, policy) == 0 && policy != SCHED_OTHER;
		}
		say(" [default stack %zu guard %zu%s%s]", size, guard, has_stack ? " with its own stack" : "",
		    bad_sched ? " realtime policy, priority 0" : "");
	}
	int r = pthread_setattr_default_np(a);
	say("\n  pthread_setattr_default_np(a) = %s", ename(r));
	expect_in("pthread_setattr_default_np", r, !valid || has_stack || bad_sched ? ALLOW(EINVAL) : ALLOW(0));
	pthread_attr_t d;
	EXPECT(pthread_getattr_default_np(coin() ? &d : NULL), ALLOW(0, EINVAL));
	pthread_t t;
	const int *allowed = r == 0 ? create_allowed(size, guard) : ALLOW(0);
	say("\n  pthread_create(&t, NULL, ...)");
	int c = pthread_create(&t, NULL, mark_ran, NULL);
	expect_in("pthread_create", c, allowed);
	if (c == 0)
		EXPECT(pthread_join(t, NULL), ALLOW(0));
}

/* ------------------------------------------------------------------ */
/* Mutexes                                                             */

enum mstate { M_NULL, M_ZERO, M_INIT, M_STATIC, M_DESTROYED, M_SELF, M_OTHER, M_OTHER_FOREVER,
	      M_OWNER_DEAD, M_NOTRECOVERABLE, M_NSTATES };
static const char *const mstate_name[] = { "NULL", "all zero", "initialised", "static initialiser",
	"destroyed", "held by the caller", "held by another thread", "held by another thread for ever",
	"robust, owner died", "robust, not recoverable" };

struct msit {
	pthread_mutex_t *m;
	enum mstate st;
	int type;
	bool robust;
	int protocol;             /* PTHREAD_PRIO_NONE, _INHERIT or _PROTECT */
};

static pthread_mutex_t mtx;
/* held: the helper holds its object.  releasing: it is about to let it go
 * (set before its unlock): a call that found the object free although the
 * case said "held by another thread" is right only if this was set by
 * the time it returned (the helper's HOLD_NS can pass before the call on
 * a loaded machine: a process off the CPU for a slice of the kernel's). */
static volatile int held, releasing;

struct hold_arg {
	void *obj;
	long ns;                  /* < 0: for ever */
	int what;
};

static void *hold_mutex(void *p)
{
	struct hold_arg *h = p;
	int r = pthread_mutex_lock(h->obj);
	check_true("helper locks the mutex", r == 0 || r == EOWNERDEAD);
	held = 1;
	if (h->ns < 0)
		weft_event_wait(&hold_ev);
	sleep_ns(h->ns);
	if (h->what == 0) {
		releasing = 1;
		pthread_mutex_unlock(h->obj);
	}
	return NULL;          /* what 1: die holding it (robust) */
}

static struct hold_arg harg;

static struct msit pick_mutex(bool allow_forever)
{
	struct msit s = { &mtx, (enum mstate)pick(M_NSTATES), PTHREAD_MUTEX_NORMAL, false,
			  PTHREAD_PRIO_NONE };
	if (!allow_forever && s.st == M_OTHER_FOREVER)
		s.st = M_OTHER;
	static const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
				     PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP };
	s.type = types[pick(4)];
	s.robust = pick(4) == 0 || s.st == M_OWNER_DEAD || s.st == M_NOTRECOVERABLE;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, s.type);
	pthread_mutexattr_setrobust(&ma, s.robust ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED);
	/* Any protocol (robust and PRIO_PROTECT at once is ENOTSUP); the
	 * fuzzer runs at SCHED_OTHER, below every ceiling. */
	s.protocol = (int)pick(s.robust ? 2 : 3);
	pthread_mutexattr_setprotocol(&ma, s.protocol);
	pthread_mutexattr_setprioceiling(&ma, 1 + (int)pick(99));
	switch (s.st) {
	case M_NULL:
		s.m = NULL;
		break;
	case M_ZERO:
		memset(&mtx, 0, sizeof mtx);
		s.type = PTHREAD_MUTEX_NORMAL;
		s.robust = false;
		s.protocol = PTHREAD_PRIO_NONE;
		break;
	case M_STATIC: {
		static const pthread_mutex_t inits[] = { PTHREAD_MUTEX_INITIALIZER,
			PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP,
			PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP };
		unsigned i = pick(4);
		mtx = inits[i];
		s.type = types[i];
		s.robust = false;
		s.protocol = PTHREAD_PRIO_NONE;
		break;
	}
	case M_DESTROYED:
		ENSURE(pthread_mutex_init(&mtx, &ma) == 0);
		ENSURE(pthread_mutex_destroy(&mtx) == 0);
		break;
	default:
		ENSURE(pthread_mutex_init(&mtx, &ma) == 0);
		break;
	}
	if (s.st == M_SELF)
		ENSURE(pthread_mutex_lock(&mtx) == 0);
	if (s.st == M_OTHER || s.st == M_OTHER_FOREVER || s.st == M_OWNER_DEAD || s.st == M_NOTRECOVERABLE) {
		held = 0;
		releasing = 0;
		harg = (struct hold_arg){ &mtx, s.st == M_OTHER ? HOLD_NS : s.st == M_OTHER_FOREVER ? -1 : 0,
					  s.st == M_OWNER_DEAD || s.st == M_NOTRECOVERABLE };
		pthread_t h = spawn(hold_mutex, &harg);
		wait_flag(&held);
		if (harg.what)
			ENSURE(pthread_join(h, NULL) == 0);
	}
	if (s.st == M_NOTRECOVERABLE) {
		ENSURE(pthread_mutex_lock(&mtx) == EOWNERDEAD);
		ENSURE(pthread_mutex_unlock(&mtx) == 0);
	}
	say(" [mutex %s, type %d%s%s]", mstate_name[s.st], s.type, s.robust ? ", robust" : "",
	    s.protocol == PTHREAD_PRIO_INHERIT ? ", inherit" :
	    s.protocol == PTHREAD_PRIO_PROTECT ? ", protect" : "");
	return s;
}

static bool checked(const struct msit *s)
{
	return s->type == PTHREAD_MUTEX_RECURSIVE || s->type == PTHREAD_MUTEX_ERRORCHECK || s->robust ||
	       s->protocol == PTHREAD_PRIO_INHERIT;
}

/* What a lock that may wait answers, for time class tc (T_FOREVER: no
 * deadline).  NULL: the call would wait for ever (skipped). */
static const int *mutex_lock_allowed(const struct msit *s, enum tclass tc)
{
	switch (s->st) {
	case M_NULL:
		return ALLOW(EINVAL);
	case M_ZERO: case M_INIT: case M_STATIC:
		return tc == T_INVALID ? ALLOW(0, EINVAL) : ALLOW(0);
	case M_DESTROYED:
		return ALLOW(0, EINVAL);
	case M_SELF:
		if (s->type == PTHREAD_MUTEX_RECURSIVE)
			return tc == T_INVALID ? ALLOW(0, EINVAL) : ALLOW(0);
		if (s->type == PTHREAD_MUTEX_ERRORCHECK)
			return ALLOW(EDEADLK, EINVAL);
		/* normal: relocking deadlocks (POSIX); robust may say EDEADLK */
		if (tc == T_FOREVER)
			return NULL;
		return tc == T_INVALID ? ALLOW(EINVAL, EDEADLK) : ALLOW(ETIMEDOUT, EDEADLK);
	case M_OTHER:
		return tc == T_INVALID ? ALLOW(EINVAL) : tc == T_PAST ? ALLOW(ETIMEDOUT) :
		       tc == T_NEAR ? ALLOW(ETIMEDOUT, 0) : ALLOW(0);
	case M_OTHER_FOREVER:
		if (tc == T_FOREVER)
			return NULL;
		return tc == T_INVALID ? ALLOW(EINVAL) : ALLOW(ETIMEDOUT);
	case M_OWNER_DEAD:
		return ALLOW(EOWNERDEAD);
	case M_NOTRECOVERABLE:
		return ALLOW(ENOTRECOVERABLE);
	default:
		return ALLOW(0);
	}
}

static void after_lock(const struct msit *s, int r)
{
	if (r == EOWNERDEAD) {
		EXPECT(pthread_mutex_consistent(s->m), ALLOW(0));
		EXPECT(pthread_mutex_consistent(s->m), ALLOW(EINVAL));
	}
	if (r == 0 || r == EOWNERDEAD) {
		EXPECT(pthread_mutex_unlock(s->m), ALLOW(0));
		if (s->st == M_SELF)
			EXPECT(pthread_mutex_unlock(s->m), ALLOW(0));
	}
}

static void f_pthread_mutex_lock(void)
{
	struct msit s = pick_mutex(false);
	const int *allowed = mutex_lock_allowed(&s, T_FOREVER);
	if (!allowed)
		return;
	say("\n  pthread_mutex_lock(m)");
	int r = pthread_mutex_lock(s.m);
	expect_in("pthread_mutex_lock", r, allowed);
	after_lock(&s, r);
}

static void f_pthread_mutex_trylock(void)
{
	struct msit s = pick_mutex(true);
	const int *allowed;
	switch (s.st) {
	case M_SELF:
		allowed = s.type == PTHREAD_MUTEX_RECURSIVE ? ALLOW(0) : ALLOW(EBUSY, EDEADLK);
		break;
	case M_OTHER: case M_OTHER_FOREVER:
		allowed = ALLOW(EBUSY);
		break;
	default:
		allowed = mutex_lock_allowed(&s, T_FOREVER);
	}
	say("\n  pthread_mutex_trylock(m)");
	int r = pthread_mutex_trylock(s.m);
	expect_in("pthread_mutex_trylock", r, allowed);
	after_lock(&s, r);
}

static void timedlock_case(bool clock_variant)
{
	struct msit s = pick_mutex(true);
	bool clock_ok = true;
	clockid_t clk = clock_variant ? pick_clock(&clock_ok) : CLOCK_REALTIME;
	enum tclass tc;
	struct timespec ts = pick_abs(clk, &tc);
	const struct timespec *tsp = &ts;
	if (pick(12) == 0) {
		tsp = NULL;
		tc = T_INVALID;
		say(" [abstime NULL]");
	}
	const int *allowed = !clock_ok ? ALLOW(EINVAL) : mutex_lock_allowed(&s, tc);
	if (!allowed)
		return;
	say("\n  pthread_mutex_%s(m, ...)", clock_variant ? "clocklock" : "timedlock");
	int r = clock_variant ? pthread_mutex_clocklock(s.m, clk, tsp) : pthread_mutex_timedlock(s.m, tsp);
	expect_in("timed lock", r, allowed);
	after_lock(&s, r);
}

static void f_pthread_mutex_timedlock(void) { timedlock_case(false); }
static void f_pthread_mutex_clocklock(void) { timedlock_case(true); }

static void f_pthread_mutex_unlock(void)
{
	struct msit s = pick_mutex(true);
	const int *allowed;
	switch (s.st) {
	case M_NULL:
		allowed = ALLOW(EINVAL);
		break;
	case M_SELF:
		allowed = ALLOW(0);
		break;
	case M_OTHER: case M_OTHER_FOREVER:
		allowed = checked(&s) ? ALLOW(EPERM) : ALLOW(0, EPERM);
		break;
	case M_OWNER_DEAD: case M_NOTRECOVERABLE:
		allowed = ALLOW(EPERM);
		break;
	default:   /* unlocked */
		allowed = checked(&s) ? ALLOW(EPERM) : ALLOW(0, EPERM);
	}
	EXPECT(pthread_mutex_unlock(s.m), allowed);
}

static void f_pthread_mutex_destroy_init(void)
{
	struct msit s = pick_mutex(true);
	const int *allowed;
	switch (s.st) {
	case M_NULL:
		allowed = ALLOW(EINVAL);
		break;
	case M_SELF: case M_OTHER: case M_OTHER_FOREVER:
		allowed = ALLOW(EBUSY);
		break;
	case M_OWNER_DEAD: case M_NOTRECOVERABLE:
		allowed = ALLOW(0, EBUSY);
		break;
	default:
		allowed = ALLOW(0);
	}
	int r = pthread_mutex_destroy(s.m);
	say("\n  pthread_mutex_destroy(m) = %s", ename(r));
	if (s.st == M_OTHER && releasing)
		allowed = ALLOW(0, EBUSY);        /* the helper's hold had ended */
	expect_in("pthread_mutex_destroy", r, allowed);
	if (r == 0 || s.st == M_NULL) {
		pthread_mutexattr_t ma;
		int v = (int)rnd();
		pthread_mutexattr_t *map = NULL;
		switch (pick(3)) {
		case 0: break;
		case 1: ENSURE(pthread_mutexattr_init(&ma) == 0); map = &ma; break;
		default: memcpy(&ma, &v, sizeof v); map = &ma; say(" [mutexattr garbage %#x]", v); break;
		}
		EXPECT(pthread_mutex_init(s.m, map), s.m ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	}
}

static void f_pthread_mutex_consistent(void)
{
	struct msit s = pick_mutex(true);
	EXPECT(pthread_mutex_consistent(s.m), ALLOW(EINVAL));
	if (s.st == M_OWNER_DEAD) {
		EXPECT(pthread_mutex_lock(s.m), ALLOW(EOWNERDEAD));
		EXPECT(pthread_mutex_consistent(s.m), ALLOW(0));
		EXPECT(pthread_mutex_unlock(s.m), ALLOW(0));
		EXPECT(pthread_mutex_lock(s.m), ALLOW(0));
	}
}

static void f_pthread_mutex_prioceiling(void)
{
	/* not held for ever: setprioceiling waits for the holder */
	struct msit s = pick_mutex(false);
	int c, old;
	static const int good[] = { 1, 50, 99 };
	int v = pick_int(good, 3);
	bool pp = s.m && s.protocol == PTHREAD_PRIO_PROTECT;
	int *cp = coin() ? &c : NULL;
	EXPECT(pthread_mutex_getprioceiling(s.m, cp), pp && cp ? ALLOW(0) : ALLOW(EINVAL));
	const int *allowed = !pp || v < 1 || v > 99 ? ALLOW(EINVAL) :
			     s.st == M_SELF && s.type == PTHREAD_MUTEX_ERRORCHECK ? ALLOW(EDEADLK) :
			     ALLOW(0);
	EXPECT(pthread_mutex_setprioceiling(s.m, v, coin() ? &old : NULL), allowed);
	if (s.st == M_SELF)
		EXPECT(pthread_mutex_unlock(s.m), ALLOW(0));
}

static pthread_mutexattr_t *pick_mutexattr(pthread_mutexattr_t *ma)
{
	switch (pick(4)) {
	case 0:
		say(" [mutexattr NULL]");
		return NULL;
	case 1: {
		int v = (int)rnd();
		memcpy(ma, &v, sizeof v);
		say(" [mutexattr never initialised %#x]", v);
		return ma;
	}
	default:
		ENSURE(pthread_mutexattr_init(ma) == 0);
		say(" [mutexattr valid]");
		return ma;
	}
}

static void f_pthread_mutexattr(void)
{
	pthread_mutexattr_t obj;
	pthread_mutexattr_t *a = pick_mutexattr(&obj);
	bool ok = a != NULL;
	int got;
	switch (pick(7)) {
	case 0: {
		static const int good[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
					    PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP };
		int v = pick_int(good, 4);
		EXPECT(pthread_mutexattr_settype(a, v), ok && in_set(v, good, 4) ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_mutexattr_gettype(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 1: {
		static const int good[] = { PTHREAD_MUTEX_STALLED, PTHREAD_MUTEX_ROBUST };
		int v = pick_int(good, 2);
		EXPECT(pthread_mutexattr_setrobust(a, v), ok && in_set(v, good, 2) ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_mutexattr_getrobust(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 2: {
		static const int good[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
		int v = pick_int(good, 2);
		EXPECT(pthread_mutexattr_setpshared(a, v), !ok || !in_set(v, good, 2) ? ALLOW(EINVAL) :
		       v == PTHREAD_PROCESS_SHARED ? ALLOW(ENOTSUP, 0) : ALLOW(0));
		EXPECT(pthread_mutexattr_getpshared(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 3: {
		static const int good[] = { PTHREAD_PRIO_NONE, PTHREAD_PRIO_INHERIT, PTHREAD_PRIO_PROTECT };
		int v = pick_int(good, 3);
		EXPECT(pthread_mutexattr_setprotocol(a, v), !ok || !in_set(v, good, 3) ? ALLOW(EINVAL) :
		       ALLOW(0));
		EXPECT(pthread_mutexattr_getprotocol(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 4: {
		static const int good[] = { 1, 2, 50, 99 };
		int v = pick_int(good, 4);
		EXPECT(pthread_mutexattr_setprioceiling(a, v), ok && v >= 1 && v <= 99 ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_mutexattr_getprioceiling(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 5:
		EXPECT(pthread_mutexattr_init(a), ok ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_mutexattr_destroy(a), ok ? ALLOW(0) : ALLOW(EINVAL));
		break;
	default: {
		pthread_mutex_t m;
		EXPECT(pthread_mutex_init(&m, a), ALLOW(0, EINVAL));
		break;
	}
	}
}

/* ------------------------------------------------------------------ */
/* Condition variables                                                 */

enum cstate { C_NULL, C_ZERO, C_INIT, C_INIT_MONO, C_DESTROYED, C_WAITED_OTHER_MUTEX, C_NSTATES };
static const char *const cstate_name[] = { "NULL", "all zero", "initialised", "initialised, CLOCK_MONOTONIC",
					   "destroyed", "waited on with another mutex" };
static pthread_cond_t cnd;
static pthread_mutex_t other_mtx = PTHREAD_MUTEX_INITIALIZER;

static void *wait_other(void *arg)
{
	pthread_mutex_lock(&other_mtx);
	held = 1;
	pthread_cond_wait(&cnd, &other_mtx);
	pthread_mutex_unlock(&other_mtx);
	return arg;
}

static pthread_cond_t *pick_cond(enum cstate *st, clockid_t *clk)
{
	*st = (enum cstate)pick(C_NSTATES);
	*clk = CLOCK_REALTIME;
	say(" [cond %s]", cstate_name[*st]);
	pthread_condattr_t ca;
	switch (*st) {
	case C_NULL:
		return NULL;
	case C_ZERO:
		memset(&cnd, 0, sizeof cnd);
		return &cnd;
	case C_INIT_MONO:
		ENSURE(pthread_condattr_init(&ca) == 0);
		ENSURE(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
		ENSURE(pthread_cond_init(&cnd, &ca) == 0);
		*clk = CLOCK_MONOTONIC;
		return &cnd;
	case C_DESTROYED:
		ENSURE(pthread_cond_init(&cnd, NULL) == 0);
		ENSURE(pthread_cond_destroy(&cnd) == 0);
		return &cnd;
	case C_WAITED_OTHER_MUTEX:
		ENSURE(pthread_cond_init(&cnd, NULL) == 0);
		held = 0;
		releasing = 0;
		spawn(wait_other, NULL);
		wait_flag(&held);
		settle();                  /* it parks (several VPs: wherever it runs) */
		return &cnd;
	default:
		ENSURE(pthread_cond_init(&cnd, NULL) == 0);
		return &cnd;
	}
}

struct signal_arg {
	pthread_cond_t *c;
	pthread_mutex_t *m;
};

static void *signal_later(void *p)
{
	struct signal_arg *s = p;
	sleep_ns(HOLD_NS);
	pthread_mutex_lock(s->m);
	pthread_cond_broadcast(s->c);
	pthread_mutex_unlock(s->m);
	return NULL;
}

static void cond_wait_case(int variant)
{
	enum cstate cs;
	clockid_t cclk;
	pthread_cond_t *c = pick_cond(&cs, &cclk);
	/* the mutex: NULL, held by the caller (maybe recursively), not held,
	 * held by another thread */
	enum { W_NULL, W_SELF, W_FREE, W_OTHER } ms = (int)pick(8) < 5 ? W_SELF : (int)pick(3) == 0 ? W_NULL : pick(2) ? W_FREE : W_OTHER;
	static const char *const mname[] = { "NULL", "held by the caller", "not held", "held by another thread" };
	say(" [mutex %s]", mname[ms]);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	int type = (int)pick(4);
	pthread_mutexattr_settype(&ma, type);
	pthread_mutex_init(&mtx, &ma);
	/* a plain (or adaptive) mutex nobody holds: the wait goes on as with
	 * the caller holding it, and the mutex is the caller's after, as
	 * NPTL does (POSIX: undefined; glibc's tst-eintr5 relies on it) */
	bool lax = ms == W_FREE && (type == PTHREAD_MUTEX_NORMAL || type == PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_t *m = ms == W_NULL ? NULL : &mtx;
	if (ms == W_SELF)
		ENSURE(pthread_mutex_lock(&mtx) == 0);
	if (ms == W_OTHER) {
		held = 0;
		releasing = 0;
		harg = (struct hold_arg){ &mtx, -1, 0 };
		spawn(hold_mutex, &harg);
		wait_flag(&held);
	}
	bool clock_ok = true;
	clockid_t clk = variant == 2 ? pick_clock(&clock_ok) : cclk;
	enum tclass tc = T_FOREVER;
	struct timespec ts;
	const struct timespec *tsp = NULL;
	if (variant) {
		ts = pick_abs(clk, &tc);
		tsp = &ts;
		if (pick(12) == 0) {
			tsp = NULL;
			tc = T_INVALID;
			say(" [abstime NULL]");
		}
	}
	static struct signal_arg sa;
	sa = (struct signal_arg){ c, m };
	bool can_wait = c && m && (ms == W_SELF || lax) && cs != C_WAITED_OTHER_MUTEX;
	if (can_wait && (tc == T_FOREVER || tc == T_NEAR))
		spawn(signal_later, &sa);
	const int *allowed;
	if (!c || !m || (variant == 2 && !clock_ok))
		allowed = ALLOW(EINVAL);
	else if (tc == T_INVALID)
		allowed = ALLOW(EINVAL, EPERM);
	else if (ms != W_SELF && !lax)
		allowed = ALLOW(EPERM);
	else if (cs == C_WAITED_OTHER_MUTEX)
		allowed = ALLOW(EINVAL);
	else
		allowed = tc == T_PAST ? ALLOW(ETIMEDOUT) : tc == T_NEAR ? ALLOW(ETIMEDOUT, 0) : ALLOW(0);
	say("\n  pthread_cond_%s(c, m...)", variant == 0 ? "wait" : variant == 1 ? "timedwait" : "clockwait");
	int r = variant == 0 ? pthread_cond_wait(c, m) : variant == 1 ? pthread_cond_timedwait(c, m, tsp)
								 : pthread_cond_clockwait(c, m, clk, tsp);
	expect_in("cond wait", r, allowed);
	if (ms == W_SELF || (lax && c && (r == 0 || r == ETIMEDOUT)))
		EXPECT(pthread_mutex_unlock(&mtx), ALLOW(0));   /* held again after the wait */
}

static void f_pthread_cond_wait(void) { cond_wait_case(0); }
static void f_pthread_cond_timedwait(void) { cond_wait_case(1); }
static void f_pthread_cond_clockwait(void) { cond_wait_case(2); }

static void f_pthread_cond_signal_destroy(void)
{
	enum cstate cs;
	clockid_t clk;
	pthread_cond_t *c = pick_cond(&cs, &clk);
	EXPECT(pthread_cond_signal(c), c ? ALLOW(0) : ALLOW(EINVAL));
	if (cs == C_WAITED_OTHER_MUTEX)
		sched_yield();
	EXPECT(pthread_cond_broadcast(c), c ? ALLOW(0) : ALLOW(EINVAL));
	if (cs == C_WAITED_OTHER_MUTEX) {
		/* the waiter may still be queued on the mutex, not the cond */
		EXPECT(pthread_cond_destroy(c), ALLOW(0, EBUSY));
		return;
	}
	EXPECT(pthread_cond_destroy(c), c ? ALLOW(0) : ALLOW(EINVAL));
}

static void f_pthread_cond_destroy_waited(void)
{
	enum cstate cs;
	clockid_t clk;
	pthread_cond_t *c = pick_cond(&cs, &clk);
	EXPECT(pthread_cond_destroy(c), !c ? ALLOW(EINVAL) : cs == C_WAITED_OTHER_MUTEX ? ALLOW(EBUSY) : ALLOW(0));
	pthread_condattr_t ca;
	pthread_condattr_t *cap = NULL;
	if (coin()) {
		int v = (int)rnd();
		if (coin())
			v = (int)pick(3);
		memcpy(&ca, &v, sizeof v);
		cap = &ca;
		say(" [condattr garbage %d]", v);
	}
	if (cs != C_WAITED_OTHER_MUTEX)
		EXPECT(pthread_cond_init(c, cap), c ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
}

static void f_pthread_condattr(void)
{
	pthread_condattr_t obj, *a = pick(5) ? &obj : NULL;
	say(" [condattr %s]", a ? "valid" : "NULL");
	if (a)
		ENSURE(pthread_condattr_init(a) == 0);
	bool ok = a != NULL;
	clockid_t got;
	int p;
	switch (pick(4)) {
	case 0: {
		bool sync_ok;
		clockid_t c = pick_clock(&sync_ok);
		EXPECT(pthread_condattr_setclock(a, c), ok && sync_ok ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_condattr_getclock(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 1: {
		static const int good[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
		int v = pick_int(good, 2);
		EXPECT(pthread_condattr_setpshared(a, v), !ok || !in_set(v, good, 2) ? ALLOW(EINVAL) :
		       v == PTHREAD_PROCESS_SHARED ? ALLOW(ENOTSUP, 0) : ALLOW(0));
		EXPECT(pthread_condattr_getpshared(a, coin() ? &p : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 2:
		EXPECT(pthread_condattr_destroy(a), ok ? ALLOW(0) : ALLOW(EINVAL));
		break;
	default:
		EXPECT(pthread_condattr_init(a), ok ? ALLOW(0) : ALLOW(EINVAL));
	}
}

/* ------------------------------------------------------------------ */
/* Reader-writer locks                                                 */

enum rstate { R_NULL, R_ZERO, R_INIT, R_DESTROYED, R_RD_SELF, R_WR_SELF, R_RD_OTHER, R_WR_OTHER,
	      R_WR_OTHER_FOREVER, R_NSTATES };
static const char *const rstate_name[] = { "NULL", "all zero", "initialised", "destroyed",
	"read-held by the caller", "write-held by the caller", "read-held by another thread",
	"write-held by another thread", "write-held by another thread for ever" };
static pthread_rwlock_t rwl;

static void *hold_rwlock(void *p)
{
	struct hold_arg *h = p;
	if (h->what)
		pthread_rwlock_wrlock(h->obj);
	else
		pthread_rwlock_rdlock(h->obj);
	held = 1;
	if (h->ns < 0)
		weft_event_wait(&hold_ev);
	sleep_ns(h->ns);
	releasing = 1;
	pthread_rwlock_unlock(h->obj);
	return NULL;
}

static pthread_rwlock_t *pick_rwlock(enum rstate *st, bool allow_forever)
{
	*st = (enum rstate)pick(R_NSTATES);
	if (!allow_forever && *st == R_WR_OTHER_FOREVER)
		*st = R_WR_OTHER;
	say(" [rwlock %s]", rstate_name[*st]);
	if (*st == R_NULL)
		return NULL;
	if (*st == R_ZERO) {
		memset(&rwl, 0, sizeof rwl);
		return &rwl;
	}
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	int kind = (int)pick(3);
	pthread_rwlockattr_setkind_np(&ra, kind);
	say(" [kind %d]", kind);
	ENSURE(pthread_rwlock_init(&rwl, &ra) == 0);
	switch (*st) {
	case R_DESTROYED:
		ENSURE(pthread_rwlock_destroy(&rwl) == 0);
		break;
	case R_RD_SELF:
		ENSURE(pthread_rwlock_rdlock(&rwl) == 0);
		break;
	case R_WR_SELF:
		ENSURE(pthread_rwlock_wrlock(&rwl) == 0);
		break;
	case R_RD_OTHER: case R_WR_OTHER: case R_WR_OTHER_FOREVER:
		held = 0;
		releasing = 0;
		harg = (struct hold_arg){ &rwl, *st == R_WR_OTHER_FOREVER ? -1 : HOLD_NS, *st != R_RD_OTHER };
		spawn(hold_rwlock, &harg);
		wait_flag(&held);
		break;
	default:
		break;
	}
	return &rwl;
}

/* variant: 0 rdlock, 1 wrlock, 2 tryrd, 3 trywr, 4 timedrd, 5 timedwr,
 * 6 clockrd, 7 clockwr */
static void rwlock_case(int variant)
{
	bool write = variant & 1, try_only = variant == 2 || variant == 3, timed = variant >= 4;
	enum rstate st;
	pthread_rwlock_t *l = pick_rwlock(&st, try_only || timed);
	bool clock_ok = true;
	clockid_t clk = variant >= 6 ? pick_clock(&clock_ok) : CLOCK_REALTIME;
	enum tclass tc = T_FOREVER;
	struct timespec ts;
	const struct timespec *tsp = NULL;
	if (timed) {
		ts = pick_abs(clk, &tc);
		tsp = &ts;
		if (pick(12) == 0) {
			tsp = NULL;
			tc = T_INVALID;
			say(" [abstime NULL]");
		}
	}
	/* would it have to wait, and could it ever get in? */
	bool busy, releases = true;
	switch (st) {
	case R_RD_SELF: busy = write; releases = false; break;
	case R_RD_OTHER: busy = write; break;
	case R_WR_OTHER: busy = true; break;
	case R_WR_OTHER_FOREVER: busy = true; releases = false; break;
	default: busy = false;
	}
	const int *allowed;
	if (!l || (variant >= 6 && !clock_ok))
		allowed = ALLOW(EINVAL);
	else if (st == R_WR_SELF)
		allowed = try_only ? ALLOW(EBUSY, EDEADLK) : ALLOW(EDEADLK, EINVAL);
	else if (st == R_DESTROYED)
		allowed = ALLOW(0, EINVAL);
	else if (!busy)
		allowed = tc == T_INVALID ? ALLOW(0, EINVAL) : ALLOW(0);
	else if (try_only)
		allowed = ALLOW(EBUSY);
	else if (tc == T_INVALID)
		allowed = ALLOW(EINVAL, EDEADLK);
	else if (tc == T_PAST)
		allowed = ALLOW(ETIMEDOUT, EDEADLK);
	else if (tc == T_NEAR)
		allowed = releases ? ALLOW(ETIMEDOUT, 0) : ALLOW(ETIMEDOUT, EDEADLK);
	else if (!releases)
		return;                        /* would wait for ever (a reader's own wrlock) */
	else
		allowed = ALLOW(0);
	static const char *const names[] = { "rdlock", "wrlock", "tryrdlock", "trywrlock", "timedrdlock",
					     "timedwrlock", "clockrdlock", "clockwrlock" };
	say("\n  pthread_rwlock_%s(l...)", names[variant]);
	int r;
	switch (variant) {
	case 0: r = pthread_rwlock_rdlock(l); break;
	case 1: r = pthread_rwlock_wrlock(l); break;
	case 2: r = pthread_rwlock_tryrdlock(l); break;
	case 3: r = pthread_rwlock_trywrlock(l); break;
	case 4: r = pthread_rwlock_timedrdlock(l, tsp); break;
	case 5: r = pthread_rwlock_timedwrlock(l, tsp); break;
	case 6: r = pthread_rwlock_clockrdlock(l, clk, tsp); break;
	default: r = pthread_rwlock_clockwrlock(l, clk, tsp); break;
	}
	expect_in("rwlock lock", r, allowed);
	if (r == 0)
		EXPECT(pthread_rwlock_unlock(l), ALLOW(0));
}

static void f_pthread_rwlock_rdlock(void) { rwlock_case(0); }
static void f_pthread_rwlock_wrlock(void) { rwlock_case(1); }
static void f_pthread_rwlock_tryrdlock(void) { rwlock_case(2); }
static void f_pthread_rwlock_trywrlock(void) { rwlock_case(3); }
static void f_pthread_rwlock_timedrdlock(void) { rwlock_case(4); }
static void f_pthread_rwlock_timedwrlock(void) { rwlock_case(5); }
static void f_pthread_rwlock_clockrdlock(void) { rwlock_case(6); }
static void f_pthread_rwlock_clockwrlock(void) { rwlock_case(7); }

static void f_pthread_rwlock_unlock_destroy(void)
{
	enum rstate st;
	pthread_rwlock_t *l = pick_rwlock(&st, true);
	if (coin()) {
		const int *allowed = !l ? ALLOW(EINVAL) : st == R_RD_SELF || st == R_WR_SELF ? ALLOW(0) :
				     st == R_RD_OTHER ? ALLOW(0, EPERM) : ALLOW(EPERM);
		EXPECT(pthread_rwlock_unlock(l), allowed);
	} else {
		const int *allowed = !l ? ALLOW(EINVAL) : st == R_WR_OTHER || st == R_WR_OTHER_FOREVER ? ALLOW(EBUSY) :
				     st == R_RD_SELF || st == R_RD_OTHER || st == R_WR_SELF ? ALLOW(0, EBUSY) : ALLOW(0);
		int r = pthread_rwlock_destroy(l);
		say("\n  pthread_rwlock_destroy(l) = %s", ename(r));
		if (l && st == R_WR_OTHER && releasing)
			allowed = ALLOW(0, EBUSY);        /* the helper's hold had ended */
		expect_in("pthread_rwlock_destroy", r, allowed);
		if (r == 0 || !l) {
			pthread_rwlockattr_t ra;
			pthread_rwlockattr_t *rap = NULL;
			if (coin()) {
				uint64_t v = rnd();
				if (coin())
					v &= 3;
				memcpy(&ra, &v, sizeof ra);
				rap = &ra;
				say(" [rwlockattr garbage %#llx]", (unsigned long long)v);
			}
			EXPECT(pthread_rwlock_init(l, rap), l ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		}
	}
}

static void f_pthread_rwlockattr(void)
{
	pthread_rwlockattr_t obj, *a = pick(5) ? &obj : NULL;
	say(" [rwlockattr %s]", a ? "valid" : "NULL");
	if (a)
		ENSURE(pthread_rwlockattr_init(a) == 0);
	bool ok = a != NULL;
	int got;
	switch (pick(4)) {
	case 0: {
		static const int good[] = { PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
					    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP };
		int v = pick_int(good, 3);
		EXPECT(pthread_rwlockattr_setkind_np(a, v), ok && in_set(v, good, 3) ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(pthread_rwlockattr_getkind_np(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 1: {
		static const int good[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
		int v = pick_int(good, 2);
		EXPECT(pthread_rwlockattr_setpshared(a, v), !ok || !in_set(v, good, 2) ? ALLOW(EINVAL) :
		       v == PTHREAD_PROCESS_SHARED ? ALLOW(ENOTSUP, 0) : ALLOW(0));
		EXPECT(pthread_rwlockattr_getpshared(a, coin() ? &got : NULL), ok ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		break;
	}
	case 2:
		EXPECT(pthread_rwlockattr_destroy(a), ok ? ALLOW(0) : ALLOW(EINVAL));
		break;
	default:
		EXPECT(pthread_rwlockattr_init(a), ok ? ALLOW(0) : ALLOW(EINVAL));
	}
}

/* ------------------------------------------------------------------ */
/* Barriers, spinlocks, semaphores                                     */

static pthread_barrier_t bar;

static void *barrier_wait_helper(void *p)
{
	pthread_barrier_wait(p);
	return NULL;
}

static void f_pthread_barrier(void)
{
	static const unsigned counts[] = { 0, 1, 2, 3, 0x7fffffffu, 0x80000000u, UINT_MAX };
	unsigned count = pick(4) ? counts[pick(4)] : counts[pick(7)];
	pthread_barrier_t *b = pick(10) ? &bar : NULL;
	pthread_barrierattr_t ba, *bap = NULL;
	bool attr_ok = true;
	switch (pick(3)) {
	case 0: break;
	case 1: ENSURE(pthread_barrierattr_init(&ba) == 0); bap = &ba; break;
	default: {
		int v = coin() ? (int)rnd() : (int)pick(2);
		memcpy(&ba, &v, sizeof v);
		bap = &ba;
		attr_ok = v == PTHREAD_PROCESS_PRIVATE;
		say(" [barrierattr garbage %d]", v);
	}
	}
	say(" [barrier %s, count %u]", b ? "ok" : "NULL", count);
	bool ok = b && count >= 1 && count <= INT_MAX;
	int r = pthread_barrier_init(b, bap, count);
	say("\n  pthread_barrier_init(...) = %s", ename(r));
	expect_in("pthread_barrier_init", r, !ok ? ALLOW(EINVAL) : attr_ok ? ALLOW(0) : ALLOW(EINVAL, 0));
	if (r != 0) {
		if (b && coin()) {
			memset(b, 0, sizeof *b);
			say(" [barrier all zero]");
			EXPECT(pthread_barrier_wait(b), ALLOW(EINVAL));
		}
		EXPECT(pthread_barrier_destroy(b), b ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
		return;
	}
	if (count <= 3) {
		for (unsigned i = 1; i < count; i++)
			spawn(barrier_wait_helper, b);
		/* every helper waits at the barrier (several VPs: yields
		 * need not run them; a destroy before they arrive is 0) */
		settle();
		if (count > 1 && coin()) {
			EXPECT(pthread_barrier_destroy(b), ALLOW(EBUSY));
		}
		EXPECT(pthread_barrier_wait(b), ALLOW(0, PTHREAD_BARRIER_SERIAL_THREAD));
	}
	EXPECT(pthread_barrier_destroy(b), ALLOW(0, EBUSY));
	if (count <= 3)
		EXPECT(pthread_barrier_wait(b), ALLOW(EINVAL));   /* destroyed */
}

static void f_pthread_barrierattr(void)
{
	pthread_barrierattr_t obj, *a = pick(5) ? &obj : NULL;
	say(" [barrierattr %s]", a ? "valid" : "NULL");
	if (a)
		ENSURE(pthread_barrierattr_init(a) == 0);
	static const int good[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
	int v = pick_int(good, 2), got;
	EXPECT(pthread_barrierattr_setpshared(a, v), !a || !in_set(v, good, 2) ? ALLOW(EINVAL) :
	       v == PTHREAD_PROCESS_SHARED ? ALLOW(ENOTSUP, 0) : ALLOW(0));
	EXPECT(pthread_barrierattr_getpshared(a, coin() ? &got : NULL), a ? ALLOW(0, EINVAL) : ALLOW(EINVAL));
	EXPECT(pthread_barrierattr_destroy(a), a ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(pthread_barrierattr_init(a), a ? ALLOW(0) : ALLOW(EINVAL));
}

static pthread_spinlock_t spn;

static void *hold_spin(void *p)
{
	struct hold_arg *h = p;
	pthread_spin_lock(h->obj);
	held = 1;
	if (h->ns < 0)
		weft_event_wait(&hold_ev);
	sleep_ns(h->ns);
	pthread_spin_unlock(h->obj);
	return NULL;
}

static void f_pthread_spin(void)
{
	enum { S_NULL, S_FREE, S_SELF, S_OTHER, S_OTHER_FOREVER } st = (int)pick(5);
	static const char *const names[] = { "NULL", "free", "held by the caller", "held by another thread",
					     "held by another thread for ever" };
	say(" [spinlock %s]", names[st]);
	pthread_spinlock_t *s = st == S_NULL ? NULL : &spn;
	static const int good[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
	int ps = pick_int(good, 2);
	int r = pthread_spin_init(s, ps);
	say("\n  pthread_spin_init(s, %d) = %s", ps, ename(r));
	expect_in("pthread_spin_init", r, !s || !in_set(ps, good, 2) ? ALLOW(EINVAL) :
		  ps == PTHREAD_PROCESS_SHARED ? ALLOW(ENOTSUP, 0) : ALLOW(0));
	if (s)
		ENSURE(pthread_spin_init(s, PTHREAD_PROCESS_PRIVATE) == 0);
	if (st == S_SELF)
		ENSURE(pthread_spin_lock(s) == 0);
	if (st == S_OTHER || st == S_OTHER_FOREVER) {
		held = 0;
		releasing = 0;
		harg = (struct hold_arg){ (void *)(uintptr_t)s, st == S_OTHER ? HOLD_NS : -1, 0 };
		spawn(hold_spin, &harg);
		wait_flag(&held);
	}
	switch (pick(4)) {
	case 0:
		if (st == S_SELF || st == S_OTHER_FOREVER)
			return;                  /* would spin for ever, as on glibc */
		EXPECT(pthread_spin_lock(s), s ? ALLOW(0) : ALLOW(EINVAL));
		if (s)
			EXPECT(pthread_spin_unlock(s), ALLOW(0));
		break;
	case 1:
		EXPECT(pthread_spin_trylock(s), !s ? ALLOW(EINVAL) : st == S_FREE ? ALLOW(0) : ALLOW(EBUSY));
		break;
	case 2:
		EXPECT(pthread_spin_unlock(s), !s ? ALLOW(EINVAL) : st == S_SELF ? ALLOW(0) : ALLOW(EPERM, 0));
		break;
	default:
		EXPECT(pthread_spin_destroy(s), !s ? ALLOW(EINVAL) : st == S_FREE ? ALLOW(0) : ALLOW(EBUSY, 0));
	}
}

static sem_t sm;

static void *post_later(void *p)
{
	sleep_ns(HOLD_NS);
	sem_post(p);
	return NULL;
}

static void *sem_waiter(void *p)
{
	held = 1;
	sem_wait(p);
	return NULL;
}

static void sem_case(int variant)
{
	enum { SE_NULL, SE_ZERO, SE_EMPTY, SE_ONE, SE_MAX, SE_DESTROYED, SE_WAITED } st = (int)pick(7);
	static const char *const names[] = { "NULL", "all zero", "value 0", "value 1", "SEM_VALUE_MAX",
					     "destroyed", "waited on" };
	say(" [sem %s]", names[st]);
	sem_t *s = st == SE_NULL ? NULL : &sm;
	switch (st) {
	case SE_ZERO: memset(&sm, 0, sizeof sm); break;
	case SE_EMPTY: ENSURE(sem_init(&sm, 0, 0) == 0); break;
	case SE_ONE: ENSURE(sem_init(&sm, 0, 1) == 0); break;
	case SE_MAX: ENSURE(sem_init(&sm, 0, SEM_VALUE_MAX) == 0); break;
	case SE_DESTROYED: ENSURE(sem_init(&sm, 0, 1) == 0); ENSURE(sem_destroy(&sm) == 0); break;
	case SE_WAITED:
		ENSURE(sem_init(&sm, 0, 0) == 0);
		held = 0;
		releasing = 0;
		spawn(sem_waiter, &sm);
		wait_flag(&held);
		settle();                  /* it parks (several VPs: wherever it runs) */
		break;
	default: break;
	}
	bool has_unit = st == SE_ONE || st == SE_MAX || st == SE_DESTROYED;
	int posts = st == SE_WAITED ? 2 : 1;       /* the waiter takes the first */
	switch (variant) {
	case 0: { /* init */
		static const unsigned vals[] = { 0, 1, SEM_VALUE_MAX, (unsigned)SEM_VALUE_MAX + 1, UINT_MAX };
		unsigned v = vals[pick(5)];
		static const int good[] = { 0 };
		int ps = pick_int(good, 1);
		if (st == SE_WAITED)
			return;
		EXPECT(sem_init(s, ps, v) == 0 ? 0 : errno, !s || v > SEM_VALUE_MAX ? ALLOW(EINVAL) :
		       ps ? ALLOW(ENOTSUP, 0, EINVAL) : ALLOW(0));
		break;
	}
	case 1: /* wait */
		if (!has_unit && s)
			for (int i = 0; i < posts; i++)
				spawn(post_later, s);
		EXPECT(ERRNO_OF(sem_wait(s)), s ? ALLOW(0) : ALLOW(EINVAL));
		break;
	case 2:
		EXPECT(ERRNO_OF(sem_trywait(s)), !s ? ALLOW(EINVAL) : has_unit ? ALLOW(0) : ALLOW(EAGAIN));
		break;
	case 3: case 4: { /* timedwait, clockwait */
		bool clock_ok = true;
		clockid_t clk = variant == 4 ? pick_clock(&clock_ok) : CLOCK_REALTIME;
		enum tclass tc;
		struct timespec ts = pick_abs(clk, &tc);
		const struct timespec *tsp = &ts;
		if (pick(12) == 0) {
			tsp = NULL;
			tc = T_INVALID;
			say(" [abstime NULL]");
		}
		if (s && !has_unit && (tc == T_FOREVER || tc == T_NEAR))
			for (int i = 0; i < posts; i++)
				spawn(post_later, s);
		const int *allowed = !s || !clock_ok ? ALLOW(EINVAL) : has_unit ? (tc == T_INVALID ? ALLOW(0, EINVAL) : ALLOW(0)) :
				     tc == T_INVALID ? ALLOW(EINVAL) : tc == T_PAST ? ALLOW(ETIMEDOUT) :
				     tc == T_NEAR ? ALLOW(ETIMEDOUT, 0) : ALLOW(0);
		say("\n  sem_%swait(s, ...)", variant == 3 ? "timed" : "clock");
		int r = variant == 3 ? sem_timedwait(s, tsp) : sem_clockwait(s, clk, tsp);
		expect_in("sem timed wait", r == 0 ? 0 : errno, allowed);
		break;
	}
	case 5: /* post */
		EXPECT(ERRNO_OF(sem_post(s)), !s ? ALLOW(EINVAL) : st == SE_MAX ? ALLOW(EOVERFLOW) : ALLOW(0));
		break;
	case 6: { /* getvalue */
		int v = -7, *vp = pick(6) ? &v : NULL;
		EXPECT(ERRNO_OF(sem_getvalue(s, vp)), s && vp ? ALLOW(0) : ALLOW(EINVAL));
		ENSURE(v == -7 || (v >= 0 && v <= SEM_VALUE_MAX) || (st == SE_WAITED && v <= 0));
		break;
	}
	default: /* destroy */
		EXPECT(ERRNO_OF(sem_destroy(s)), !s ? ALLOW(EINVAL) : st == SE_WAITED ? ALLOW(EBUSY) : ALLOW(0));
	}
}

static void f_sem_init(void) { sem_case(0); }
static void f_sem_wait(void) { sem_case(1); }
static void f_sem_trywait(void) { sem_case(2); }
static void f_sem_timedwait(void) { sem_case(3); }
static void f_sem_clockwait(void) { sem_case(4); }
static void f_sem_post(void) { sem_case(5); }
static void f_sem_getvalue(void) { sem_case(6); }
static void f_sem_destroy(void) { sem_case(7); }

/* ------------------------------------------------------------------ */
/* Keys, once, cancellation state, scheduling calls                    */

static void dtor(void *v) { (void)v; }

static void f_pthread_key(void)
{
	pthread_key_t k;
	EXPECT(pthread_key_create(NULL, dtor), ALLOW(EINVAL));
	EXPECT(pthread_key_create(&k, coin() ? dtor : NULL), ALLOW(0));
	static const unsigned bad[] = { PTHREAD_KEYS_MAX, PTHREAD_KEYS_MAX + 1, UINT_MAX, 0x80000000u };
	pthread_key_t other = pick(3) ? bad[pick(4)] : (pthread_key_t)rnd();
	say(" [other key %u]", other);
	bool other_live = other == k;
	EXPECT(pthread_setspecific(other, (void *)1), other_live ? ALLOW(0) : ALLOW(EINVAL, 0));
	(void)pthread_getspecific(other);
	EXPECT(pthread_key_delete(other), other_live ? ALLOW(0) : ALLOW(EINVAL, 0));
	if (pick(4) == 0) {
		/* all the keys there are, then one more */
		int n = 0, r;
		pthread_key_t last = 0;
		while ((r = pthread_key_create(&last, NULL)) == 0)
			n++;
		say("\n  created %d more keys, then %s", n, ename(r));
		expect_in("pthread_key_create", r, ALLOW(EAGAIN));
		EXPECT(pthread_key_delete(last), ALLOW(0));
		EXPECT(pthread_key_create(&last, NULL), ALLOW(0));
	}
	if (!other_live) {
		EXPECT(pthread_setspecific(k, (void *)2), ALLOW(0));
		ENSURE(pthread_getspecific(k) == (void *)2);
		EXPECT(pthread_key_delete(k), ALLOW(0));
		ENSURE(pthread_getspecific(k) == NULL);
		EXPECT(pthread_key_delete(k), ALLOW(EINVAL));
		EXPECT(pthread_setspecific(k, (void *)3), ALLOW(EINVAL));
	}
}

static int once_runs;
static void once_fn(void) { once_runs++; }

static void f_pthread_once(void)
{
	pthread_once_t o = PTHREAD_ONCE_INIT;
	EXPECT(pthread_once(NULL, once_fn), ALLOW(EINVAL));
	EXPECT(pthread_once(&o, NULL), ALLOW(EINVAL, 0));
	EXPECT(pthread_once(&o, once_fn), ALLOW(0));
	EXPECT(pthread_once(&o, once_fn), ALLOW(0));
	ENSURE(once_runs <= 1);
}

static void *cancel_self(void *arg)
{
	static const int good[] = { PTHREAD_CANCEL_ENABLE, PTHREAD_CANCEL_DISABLE };
	static const int types[] = { PTHREAD_CANCEL_DEFERRED, PTHREAD_CANCEL_ASYNCHRONOUS };
	int old = -7;
	ENSURE(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL) == 0);
	ENSURE(pthread_cancel(pthread_self()) == 0);
	int t = pick_int(types, 2);
	EXPECT(pthread_setcanceltype(t, coin() ? &old : NULL), in_set(t, types, 2) ? ALLOW(0) : ALLOW(EINVAL));
	int v = pick_int(good, 2);
	EXPECT(pthread_setcancelstate(v, coin() ? &old : NULL), in_set(v, good, 2) ? ALLOW(0) : ALLOW(EINVAL));
	ENSURE(old == -7 || in_set(old, good, 2) || in_set(old, types, 2));
	pthread_testcancel();
	return arg;
}

static void f_pthread_setcancelstate_type(void)
{
	pthread_t t = spawn(cancel_self, (void *)5);
	void *r;
	EXPECT(pthread_join(t, &r), ALLOW(0));
	ENSURE(r == (void *)5 || r == PTHREAD_CANCELED);
}

static void f_sched_calls(void)
{
	static const int good[] = { SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE };
	int p = pick_int(good, 5);
	bool known = in_set(p, good, 5);
	errno = 0;
	int mx = sched_get_priority_max(p), mn = sched_get_priority_min(p);
	say("\n  sched_get_priority_max/min(%d) = %d/%d, errno %s", p, mx, mn, ename(errno));
	if (known)
		ENSURE(mx >= mn && mn >= 0);
	else
		ENSURE(mx == -1 && mn == -1 && errno == EINVAL);
	static const pid_t pids[] = { 0, -1, 1, INT_MAX, 999999, INT_MIN };
	pid_t pid = coin() ? getpid() : pids[pick(6)];
	struct timespec ts, *tsp = pick(6) ? &ts : NULL;
	say(" [pid %d, tp %s]", pid, tsp ? "ok" : "NULL");
	EXPECT(ERRNO_OF(sched_rr_get_interval(pid, tsp)), ALLOW(0, EINVAL, ESRCH, EPERM, EFAULT));
	EXPECT(sched_yield(), ALLOW(0));
	static const int lv[] = { 0, 1, 2, 1000 };
	int l = pick_int(lv, 4);
	EXPECT(pthread_setconcurrency(l), l >= 0 ? ALLOW(0) : ALLOW(EINVAL));
	ENSURE(pthread_getconcurrency() >= 0);
}

/* glibc's header turns pthread_yield into sched_yield; old binaries call it. */
static void f_pthread_yield(void)
{
	int (*y)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "pthread_yield");
	if (y)
		EXPECT(y(), ALLOW(0));
}

/* ---- cleanup handlers: the old ABI (_pthread_cleanup_*) and the new
 * (pthread_cleanup_push/pop: __pthread_register_cancel and friends) ---- */

struct _pthread_cleanup_buffer;
void _pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute);
void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute);

static int cleanups;
static void count_cleanup(void *arg) { cleanups += arg == (void *)9; }

static void *cleanup_thread(void *arg)
{
	int how = (int)(intptr_t)arg;
	pthread_cleanup_push(count_cleanup, (void *)9);
	if (how == 0)
		pthread_exit((void *)4);
	if (how == 1) {
		pthread_cancel(pthread_self());
		pthread_testcancel();
	}
	pthread_cleanup_pop(how == 2);
	return (void *)4;
}

static void f_cleanup(void)
{
	union { char bytes[64]; void *align; } b1;
	struct _pthread_cleanup_buffer *p1 = (void *)&b1;
	int execute = pick(3) == 0 ? 0 : (int)rnd() | 1;
	bool defer = coin();
	say(" [execute %d%s]", execute, defer ? ", defer/restore" : "");
	cleanups = 0;
	/* (popping a buffer that was not pushed last is undefined: the
	 * macros pair them; glibc runs its routine whatever it is) */
	say("\n  _pthread_cleanup_push(NULL, ...); pop(NULL)");
	_pthread_cleanup_push(NULL, count_cleanup, (void *)9);
	_pthread_cleanup_pop(NULL, execute);
	_pthread_cleanup_pop_restore(NULL, execute);
	ENSURE(cleanups == 0);
	say("\n  push(b1); pop(b1, execute)");
	if (defer) {
		_pthread_cleanup_push_defer(p1, count_cleanup, (void *)9);
		_pthread_cleanup_pop_restore(p1, execute);
	} else {
		_pthread_cleanup_push(p1, count_cleanup, (void *)9);
		_pthread_cleanup_pop(p1, execute);
	}
	ENSURE(cleanups == (execute != 0));
	int how = (int)pick(4);
	say("\n  a thread with pthread_cleanup_push, ending by %s",
	    how == 0 ? "pthread_exit" : how == 1 ? "cancellation" : how == 2 ? "pop(1)" : "pop(0)");
	cleanups = 0;
	pthread_t t = spawn(cleanup_thread, (void *)(intptr_t)how);
	void *r;
	EXPECT(pthread_join(t, &r), ALLOW(0));
	ENSURE(r == (how == 1 ? PTHREAD_CANCELED : (void *)4));
	ENSURE(cleanups == (how <= 2));
}

/* ------------------------------------------------------------------ */
/* Sleeps and pause                                                    */

static void f_nanosleep(void)
{
	enum tclass tc;
	struct timespec ts = pick_rel(&tc, false), rem;
	const struct timespec *tsp = &ts;
	if (pick(10) == 0) {
		tsp = NULL;
		tc = T_INVALID;
		say(" [req NULL]");
	}
	EXPECT(ERRNO_OF(nanosleep(tsp, coin() ? &rem : NULL)), tc == T_INVALID ? ALLOW(EINVAL, EFAULT) : ALLOW(0));
}

static void f_clock_nanosleep(void)
{
	bool sync_ok;
	clockid_t clk = pick_clock(&sync_ok);
	bool sleepable = clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC || clk == CLOCK_BOOTTIME || clk == CLOCK_TAI;
	static const int good[] = { 0, TIMER_ABSTIME };
	int flags = pick_int(good, 2);
	enum tclass tc;
	struct timespec ts;
	if (flags & TIMER_ABSTIME) {
		ts = pick_abs(clk, &tc);
		if (tc == T_FOREVER) {
			ts.tv_sec = LLONG_MIN;                /* never sleep for ever here */
			tc = T_PAST;
			say(" (made LLONG_MIN)");
		}
	} else {
		ts = pick_rel(&tc, false);
	}
	const struct timespec *tsp = &ts;
	if (pick(10) == 0) {
		tsp = NULL;
		tc = T_INVALID;
		say(" [req NULL]");
	}
	/* an absolute time before the epoch is not a valid timespec for the kernel */
	bool neg = tsp && ts.tv_sec < 0;
	const int *allowed = !sleepable ? ALLOW(EINVAL, ENOTSUP) :
			     tc == T_INVALID || neg ? ALLOW(EINVAL, EFAULT) : ALLOW(0);
	struct timespec rem;
	EXPECT(clock_nanosleep(clk, flags, tsp, coin() ? &rem : NULL), allowed);
}

static void f_usleep_sleep(void)
{
	static const useconds_t us[] = { 0, 1, 500, 2000 };
	useconds_t u = us[pick(4)];
	say(" [usec %u]", u);
	EXPECT(ERRNO_OF(usleep(u)), ALLOW(0));
	EXPECT(sleep(0), ALLOW(0));
}

static volatile int alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

static void f_pause(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	/* periodic: a signal caught while the VP is not yet idle does not end
	 * pause() (runtime/sched.c, reported), the next one does */
	struct itimerval it = { { 0, 2000 }, { 0, 1000 + (long)pick(3000) } };
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT(pause() == -1 ? errno : 0, ALLOW(EINTR));
	ENSURE(alarms >= 1);
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* ------------------------------------------------------------------ */
/* futex(2) through syscall()                                          */

static uint32_t fword;

struct wake_arg {
	uint32_t *addr;
	int op;
};

static void *futex_wake_later(void *p)
{
	struct wake_arg *w = p;
	sleep_ns(HOLD_NS);
	__atomic_add_fetch(w->addr, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, w->addr, w->op, INT_MAX, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	return NULL;
}

static void f_futex(void)
{
	static uint32_t words[2];
	fword = (uint32_t)pick(3);
	words[0] = fword;
	enum { FA_OK, FA_NULL, FA_UNALIGNED } ak = pick(8) == 0 ? FA_NULL : pick(8) == 0 ? FA_UNALIGNED : FA_OK;
	uint32_t *addr = ak == FA_OK ? &fword : ak == FA_NULL ? NULL : (uint32_t *)((char *)&fword + 1);
	int priv = coin() ? FUTEX_PRIVATE_FLAG : 0;
	static const int cmds[] = { FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET,
				    FUTEX_REQUEUE, FUTEX_CMP_REQUEUE };
	int cmd = cmds[pick(6)];
	if (pick(10) == 0 && priv)
		cmd = 13 + (int)pick(20);               /* not emulated, private */
	uint32_t bitset = pick(6) ? FUTEX_BITSET_MATCH_ANY : pick(2) ? 0 : (uint32_t)rnd();
	say(" [futex addr %s, cmd %d%s, word %u, bitset %#x]", ak == FA_OK ? "ok" : ak == FA_NULL ? "NULL" : "unaligned",
	    cmd, priv ? " private" : "", fword, bitset);
	long r;
	const int *allowed;
	if (ak != FA_OK) {
		r = syscall(SYS_futex, addr, cmd | priv, 0, NULL, NULL, bitset);
		say("\n  futex(bad addr) = %ld errno %s", r, ename(errno));
		expect_in("futex", r == -1 ? errno : 0, ALLOW(EINVAL, EFAULT, ENOSYS));
		return;
	}
	switch (cmd) {
	case FUTEX_WAIT: case FUTEX_WAIT_BITSET: {
		uint32_t val = coin() ? fword : fword + 1;
		enum tclass tc;
		struct timespec ts;
		bool realtime = cmd == FUTEX_WAIT_BITSET && coin();
		if (cmd == FUTEX_WAIT)
			ts = pick_rel(&tc, true);
		else
			ts = pick_abs(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &tc);
		const struct timespec *tsp = &ts;
		if (pick(4) == 0) {
			tsp = NULL;
			tc = T_FOREVER;
			say(" [no timeout]");
		}
		/* an absolute time before the epoch is invalid for the kernel */
		if (cmd == FUTEX_WAIT_BITSET && tsp && tc == T_PAST && ts.tv_sec < 0)
			tc = T_INVALID;
		static struct wake_arg wa;
		wa = (struct wake_arg){ &fword, FUTEX_WAKE | priv };
		bool match = val == fword;
		if (match && (tc == T_FOREVER || tc == T_NEAR) && (bitset || cmd == FUTEX_WAIT))
			spawn(futex_wake_later, &wa);
		if (cmd == FUTEX_WAIT_BITSET && !bitset)
			allowed = ALLOW(EINVAL);
		else if (tc == T_INVALID)
			allowed = ALLOW(EINVAL, EAGAIN, ETIMEDOUT);
		else if (!match)
			allowed = ALLOW(EAGAIN);
		else if (tc == T_PAST)
			allowed = ALLOW(ETIMEDOUT);
		else if (tc == T_NEAR)
			allowed = ALLOW(ETIMEDOUT, 0);
		else
			allowed = ALLOW(0, EAGAIN);
		r = syscall(SYS_futex, addr, cmd | priv | (realtime ? FUTEX_CLOCK_REALTIME : 0), val, tsp, NULL, bitset);
		break;
	}
	case FUTEX_WAKE: case FUTEX_WAKE_BITSET: {
		static const long counts[] = { 0, 1, INT_MAX, -1, LONG_MIN };
		long n = counts[pick(5)];
		allowed = cmd == FUTEX_WAKE_BITSET && !bitset ? ALLOW(EINVAL) : ALLOW(0);
		r = syscall(SYS_futex, addr, cmd | priv, n, NULL, NULL, bitset);
		if (r > 0)
			r = 0;
		break;
	}
	default: { /* requeue */
		static const long counts[] = { 0, 1, INT_MAX, -1 };
		long nwake = counts[pick(4)], nmove = counts[pick(4)];
		uint32_t *to = pick(6) ? &words[1] : pick(2) ? NULL : (uint32_t *)((char *)&words[1] + 2);
		uint32_t v3 = coin() ? fword : fword + 1;
		say(" [nwake %ld nmove %ld to %s]", nwake, nmove, to == &words[1] ? "ok" : "bad");
		if (cmd != FUTEX_REQUEUE && cmd != FUTEX_CMP_REQUEUE)
			allowed = ALLOW(ENOSYS, EINVAL, 0);
		else if (!priv)
			allowed = ALLOW(0, EINVAL, EAGAIN, EFAULT);   /* the kernel's own */
		else if (nwake < 0 || nmove < 0 || to != &words[1])
			allowed = ALLOW(EINVAL);
		else if (cmd == FUTEX_CMP_REQUEUE && v3 != fword)
			allowed = ALLOW(EAGAIN);
		else
			allowed = ALLOW(0);
		r = syscall(SYS_futex, addr, cmd | priv, nwake, (void *)nmove, to, v3);
		if (r > 0)
			r = 0;
	}
	}
	say("\n  futex(...) = %ld, errno %s", r, ename(errno));
	expect_in("futex", r == -1 ? errno : r, allowed);
}

/* ------------------------------------------------------------------ */
/* weft.h                                                              */

static void f_weft_misc(void)
{
	ENSURE(weft_version() != NULL);
	struct weft_stats st[2];
	static const size_t sizes[] = { 0, 1, 8, sizeof st[0], sizeof st[0] + 1, sizeof st };
	size_t sz = sizes[pick(6)];
	EXPECT(weft_stats_get(pick(6) ? st : NULL, sz), ALLOW(0, EINVAL));
	static const uint64_t slices[] = { 0, 1, 9999, 10000, 1000000, 10000000, 1000000000ull,
					   10000000000ull, UINT64_MAX };
	uint64_t ns = pick(6) ? slices[pick(9)] : rnd();
	say(" [slice %llu]", (unsigned long long)ns);
	uint64_t old = weft_timeslice_get();
	int set = weft_timeslice_set(ns);
	EXPECT(set, ns != 0 && ns < 10000 ? ALLOW(EINVAL, ENOTSUP) : ALLOW(0, EINVAL, ENOTSUP));
	/* a slice below what this machine's tick costs is raised to that
	 * floor (measured at the first slice; 10-100 us in a forked child) */
	uint64_t now = weft_timeslice_get();
	ENSURE(set != 0 ? now == old : ns == 0 ? now == 0 : now >= ns);
	weft_timeslice_set(old);
}

static void ras_target(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

static void f_weft_ras_register(void)
{
	const char *f = (const char *)(uintptr_t)ras_target;
	switch (pick(4)) {
	case 0:
		EXPECT(weft_ras_register(NULL, NULL), ALLOW(EINVAL));
		break;
	case 1:
		EXPECT(weft_ras_register(f + 4, f), ALLOW(EINVAL));
		EXPECT(weft_ras_register(f, f), ALLOW(EINVAL));
		break;
	case 2:
		EXPECT(weft_ras_register(f, f + 4), ALLOW(0, EAGAIN, ENOTSUP));
		break;
	default: {
		/* distinct ranges (the same one again is not a new entry), in
		 * memory that never runs */
		static char never_run[256];
		int n = 0, r;
		while ((r = weft_ras_register(never_run + n, never_run + n + 1)) == 0 && n < 200)
			n++;
		say("\n  registered %d, then %s", n, ename(r));
		expect_in("weft_ras_register", r, ALLOW(EAGAIN, ENOTSUP));
	}
	}
}

static weft_event_t evt;

static void *set_later(void *p)
{
	sleep_ns(HOLD_NS);
	weft_event_set(p);
	return NULL;
}

static void *event_waiter(void *p)
{
	held = 1;
	weft_event_wait(p);
	return NULL;
}

static void f_weft_event(void)
{
	enum { E_NULL, E_ZERO, E_INIT, E_SET, E_DESTROYED, E_WAITED } st = (int)pick(6);
	static const char *const names[] = { "NULL", "all zero", "initialised", "set", "destroyed", "waited on" };
	say(" [event %s]", names[st]);
	weft_event_t *e = st == E_NULL ? NULL : &evt;
	if (e) {
		memset(&evt, 0, sizeof evt);
		if (st != E_ZERO)
			ENSURE(weft_event_init(&evt) == 0);
		if (st == E_SET)
			ENSURE(weft_event_set(&evt) == 0);
		if (st == E_DESTROYED)
			ENSURE(weft_event_destroy(&evt) == 0);
		if (st == E_WAITED) {
			held = 0;
			releasing = 0;
		releasing = 0;
			spawn(event_waiter, &evt);
			wait_flag(&held);
			settle();          /* it parks (several VPs: wherever it runs) */
		}
	}
	bool is_set = st == E_SET;
	switch (pick(5)) {
	case 0:
		if (e && !is_set)
			spawn(set_later, e);
		EXPECT(weft_event_wait(e), e ? ALLOW(0) : ALLOW(EINVAL));
		break;
	case 1: {
		bool clock_ok;
		clockid_t clk = pick_clock(&clock_ok);
		enum tclass tc;
		struct timespec ts = pick_abs(clk, &tc);
		const struct timespec *tsp = pick(12) ? &ts : NULL;
		if (!tsp)
			tc = T_INVALID;
		if (e && !is_set && (tc == T_FOREVER || tc == T_NEAR))
			spawn(set_later, e);
		const int *allowed = !e || !clock_ok ? ALLOW(EINVAL) : tc == T_INVALID ? (is_set ? ALLOW(EINVAL, 0) : ALLOW(EINVAL)) :
				     is_set ? ALLOW(0) : tc == T_PAST ? ALLOW(ETIMEDOUT) : tc == T_NEAR ? ALLOW(ETIMEDOUT, 0) : ALLOW(0);
		EXPECT(weft_event_timedwait(e, clk, tsp), allowed);
		break;
	}
	case 2:
		EXPECT(weft_event_set(e), e ? ALLOW(0) : ALLOW(EINVAL));
		EXPECT(weft_event_clear(e), e ? ALLOW(0) : ALLOW(EINVAL));
		break;
	case 3:
		EXPECT(weft_event_destroy(e), !e ? ALLOW(EINVAL) : st == E_WAITED ? ALLOW(EBUSY) : ALLOW(0));
		break;
	default:
		if (st != E_WAITED)
			EXPECT(weft_event_init(e), e ? ALLOW(0) : ALLOW(EINVAL));
	}
}

struct send_arg {
	pthread_t to;
	uintptr_t msg;
};

static void *send_later(void *p)
{
	struct send_arg *s = p;
	sleep_ns(HOLD_NS);
	weft_send(s->to, s->msg);
	return NULL;
}

static void f_weft_mailbox(void)
{
	bool full = coin();
	uintptr_t msg = (uintptr_t)rnd(), got = 0, *gp = pick(8) ? &got : NULL;
	say(" [mailbox %s, out %s]", full ? "full" : "empty", gp ? "ok" : "NULL");
	if (full)
		ENSURE(weft_send(pthread_self(), msg) == 0);
	static struct send_arg sa;
	sa = (struct send_arg){ pthread_self(), msg };
	switch (pick(3)) {
	case 0:
		if (gp && !full)
			spawn(send_later, &sa);
		EXPECT(weft_receive(gp), gp ? ALLOW(0) : ALLOW(EINVAL));
		break;
	case 1: {
		enum tclass tc;
		struct timespec ts = pick_rel(&tc, true);
		const struct timespec *tsp = pick(12) ? &ts : NULL;
		if (!tsp)
			tc = T_INVALID;
		if (gp && !full && (tc == T_FOREVER || tc == T_NEAR))
			spawn(send_later, &sa);
		const int *allowed = !gp || tc == T_INVALID ? ALLOW(EINVAL) : full ? ALLOW(0) :
				     tc == T_PAST ? ALLOW(ETIMEDOUT) : tc == T_NEAR ? ALLOW(ETIMEDOUT, 0) : ALLOW(0);
		EXPECT(weft_recvtime(gp, tsp), allowed);
		break;
	}
	default:
		EXPECT(weft_recvclr(gp), !gp ? ALLOW(EINVAL) : full ? ALLOW(0) : ALLOW(EAGAIN));
	}
	if (gp && got)
		ENSURE(got == msg);
}

/* The LinuxThreads-era condition variable ABI (pthread_cond_*@GLIBC_2.2.5),
 * when the library in use is Weft's (not in a static link). */
static void f_compat_cond(void)
{
	int (*init)(void *, void *) = (int (*)(void *, void *))dlvsym(RTLD_DEFAULT, "pthread_cond_init", "GLIBC_2.2.5");
	int (*destroy)(void *) = (int (*)(void *))dlvsym(RTLD_DEFAULT, "pthread_cond_destroy", "GLIBC_2.2.5");
	int (*sig)(void *) = (int (*)(void *))dlvsym(RTLD_DEFAULT, "pthread_cond_signal", "GLIBC_2.2.5");
	int (*bcast)(void *) = (int (*)(void *))dlvsym(RTLD_DEFAULT, "pthread_cond_broadcast", "GLIBC_2.2.5");
	int (*tw)(void *, void *, const struct timespec *) =
		(int (*)(void *, void *, const struct timespec *))dlvsym(RTLD_DEFAULT, "pthread_cond_timedwait", "GLIBC_2.2.5");
	Dl_info di;
	if (!init || !destroy || !sig || !bcast || !tw || !dladdr((void *)(uintptr_t)init, &di) ||
	    !di.dli_fname || !strstr(di.dli_fname, "libweft"))
		return;
	void *old[8] = { 0 };
	void *c = pick(6) ? old : NULL;
	say(" [old cond %s]", c ? "ok" : "NULL");
	EXPECT(init(c, NULL), c ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(sig(c), c ? ALLOW(0) : ALLOW(EINVAL));
	EXPECT(bcast(c), c ? ALLOW(0) : ALLOW(EINVAL));
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	enum tclass tc;
	struct timespec ts = pick_abs(CLOCK_REALTIME, &tc);
	bool lock = coin();
	if (lock)
		pthread_mutex_lock(&m);
	/* a plain mutex, held or not (NPTL waits with one nobody holds) */
	if (c && tc == T_FOREVER)
		tc = T_PAST, ts = (struct timespec){ 0, 0 };
	EXPECT(tw(c, &m, &ts), !c || tc == T_INVALID ? ALLOW(EINVAL, EPERM) :
	       tc == T_NEAR || tc == T_PAST ? ALLOW(ETIMEDOUT) : ALLOW(0));
	EXPECT(destroy(c), c ? ALLOW(0) : ALLOW(EINVAL));
}

/* ------------------------------------------------------------------ */
/* The table and the driver                                            */

struct target {
	const char *name;
	void (*run)(void);
};

static const struct target targets[] = {
	{ "pthread_join", f_pthread_join },
	{ "pthread_tryjoin_np", f_pthread_tryjoin_np },
	{ "pthread_timedjoin_np", f_pthread_timedjoin_np },
	{ "pthread_clockjoin_np", f_pthread_clockjoin_np },
	{ "pthread_join* from a thread (main's handle)", f_join_main_from_thread },
	{ "pthread_detach", f_pthread_detach },
	{ "pthread_cancel", f_pthread_cancel },
	{ "pthread_kill", f_pthread_kill },
	{ "pthread_sigqueue", f_pthread_sigqueue },
	{ "pthread_setschedparam", f_pthread_setschedparam },
	{ "pthread_getschedparam", f_pthread_getschedparam },
	{ "pthread_setschedprio", f_pthread_setschedprio },
	{ "pthread_setname_np", f_pthread_setname_np },
	{ "pthread_getname_np", f_pthread_getname_np },
	{ "pthread_getattr_np", f_pthread_getattr_np },
	{ "pthread_[gs]etaffinity_np", f_pthread_affinity_np },
	{ "pthread_getcpuclockid", f_pthread_getcpuclockid },
	{ "pthread_equal, pthread_self", f_pthread_equal_self },
	{ "pthread_exit", f_pthread_exit },
	{ "weft_ping", f_weft_ping },
	{ "weft_send", f_weft_send },
	{ "weft_yield_to", f_weft_yield_to },
	{ "pthread_attr_[gs]etdetachstate", f_attr_detachstate },
	{ "pthread_attr_[gs]etinheritsched", f_attr_inheritsched },
	{ "pthread_attr_[gs]etschedpolicy/param", f_attr_sched },
	{ "pthread_attr_[gs]etscope", f_attr_scope },
	{ "pthread_attr_[gs]etstacksize/guardsize", f_attr_stacksize_guardsize },
	{ "pthread_attr_[gs]etstack/stackaddr", f_attr_stack },
	{ "pthread_attr_[gs]etaffinity_np/sigmask_np", f_attr_affinity_sigmask },
	{ "pthread_attr_init/destroy", f_attr_init_destroy },
	{ "pthread_create", f_pthread_create },
	{ "pthread_create", f_pthread_create },
	{ "pthread_[gs]etattr_default_np", f_attr_default_np },
	{ "pthread_mutex_lock", f_pthread_mutex_lock },
	{ "pthread_mutex_trylock", f_pthread_mutex_trylock },
	{ "pthread_mutex_timedlock", f_pthread_mutex_timedlock },
	{ "pthread_mutex_clocklock", f_pthread_mutex_clocklock },
	{ "pthread_mutex_unlock", f_pthread_mutex_unlock },
	{ "pthread_mutex_destroy/init", f_pthread_mutex_destroy_init },
	{ "pthread_mutex_consistent", f_pthread_mutex_consistent },
	{ "pthread_mutex_[gs]etprioceiling", f_pthread_mutex_prioceiling },
	{ "pthread_mutexattr_*", f_pthread_mutexattr },
	{ "pthread_cond_wait", f_pthread_cond_wait },
	{ "pthread_cond_timedwait", f_pthread_cond_timedwait },
	{ "pthread_cond_clockwait", f_pthread_cond_clockwait },
	{ "pthread_cond_signal/broadcast/destroy", f_pthread_cond_signal_destroy },
	{ "pthread_cond_destroy/init", f_pthread_cond_destroy_waited },
	{ "pthread_condattr_*", f_pthread_condattr },
	{ "pthread_rwlock_rdlock", f_pthread_rwlock_rdlock },
	{ "pthread_rwlock_wrlock", f_pthread_rwlock_wrlock },
	{ "pthread_rwlock_tryrdlock", f_pthread_rwlock_tryrdlock },
	{ "pthread_rwlock_trywrlock", f_pthread_rwlock_trywrlock },
	{ "pthread_rwlock_timedrdlock", f_pthread_rwlock_timedrdlock },
	{ "pthread_rwlock_timedwrlock", f_pthread_rwlock_timedwrlock },
	{ "pthread_rwlock_clockrdlock", f_pthread_rwlock_clockrdlock },
	{ "pthread_rwlock_clockwrlock", f_pthread_rwlock_clockwrlock },
	{ "pthread_rwlock_unlock/destroy/init", f_pthread_rwlock_unlock_destroy },
	{ "pthread_rwlockattr_*", f_pthread_rwlockattr },
	{ "pthread_barrier_*", f_pthread_barrier },
	{ "pthread_barrierattr_*", f_pthread_barrierattr },
	{ "pthread_spin_*", f_pthread_spin },
	{ "sem_init", f_sem_init },
	{ "sem_wait", f_sem_wait },
	{ "sem_trywait", f_sem_trywait },
	{ "sem_timedwait", f_sem_timedwait },
	{ "sem_clockwait", f_sem_clockwait },
	{ "sem_post", f_sem_post },
	{ "sem_getvalue", f_sem_getvalue },
	{ "sem_destroy", f_sem_destroy },
	{ "pthread_key_*, [gs]etspecific", f_pthread_key },
	{ "pthread_once", f_pthread_once },
	{ "pthread_setcancelstate/type, testcancel", f_pthread_setcancelstate_type },
	{ "_pthread_cleanup_*, pthread_cleanup_push/pop", f_cleanup },
	{ "sched_*, pthread_[gs]etconcurrency", f_sched_calls },
	{ "pthread_yield", f_pthread_yield },
	{ "nanosleep", f_nanosleep },
	{ "clock_nanosleep", f_clock_nanosleep },
	{ "usleep, sleep", f_usleep_sleep },
	{ "pause", f_pause },
	{ "syscall(SYS_futex)", f_futex },
	{ "syscall(SYS_futex)", f_futex },
	{ "weft_version, weft_stats_get, weft_timeslice_*", f_weft_misc },
	{ "weft_ras_register", f_weft_ras_register },
	{ "weft_event_*", f_weft_event },
	{ "weft_receive, weft_recvtime, weft_recvclr", f_weft_mailbox },
	{ "pthread_cond_*@GLIBC_2.2.5", f_compat_cond },
};
enum { NTARGETS = sizeof targets / sizeof targets[0] };

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 0) : dflt;
}

static uint64_t case_seed(uint64_t seed, long k)
{
	return seed ^ ((uint64_t)k * 0xd1b54a32d192ed03ull);
}

/* In the child: the case itself. */
static void run_in_child(uint64_t seed, long k, const struct target *t)
{
	fuzz_rng = case_seed(seed, k);
	snprintf(fuzz_desc, FUZZ_DESC, "case %ld: %s", k, t->name);
	pthread_attr_init(&helper_attr);
	pthread_attr_setstacksize(&helper_attr, 64 * 1024);
	t->run();
	_exit(0);
}

/* Wait for child pid at most timeout_ms; its status, or -1 if it hung. */
static int wait_child(pid_t pid, long timeout_ms)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end = ts_add(end, timeout_ms * 1000000L);
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		struct timespec now, left;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ns = (end.tv_sec - now.tv_sec) * 1000000000L + (end.tv_nsec - now.tv_nsec);
		if (ns <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		left = (struct timespec){ ns / 1000000000L, ns % 1000000000L };
		sigtimedwait(&chld, NULL, &left);
	}
}

int main(void)
{
	long cases = env_long("WEFT_FUZZ_CASES", 3000);
	long only = env_long("WEFT_FUZZ_CASE", -1);
	long timeout_ms = env_long("WEFT_FUZZ_TIMEOUT_MS", 10000);
	bool verbose = env_long("WEFT_FUZZ_VERBOSE", 0) != 0;
	const char *match = getenv("WEFT_FUZZ_MATCH");
	const char *sv = getenv("WEFT_FUZZ_SEED");
	uint64_t seed;
	if (sv && *sv) {
		seed = strtoull(sv, NULL, 0);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid();
	}
	fuzz_desc = mmap(NULL, FUZZ_DESC, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fuzz_desc == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	long failures = 0, ran = 0;
	long first = only >= 0 ? only : 0, last = only >= 0 ? only + 1 : cases;
	for (long k = first; k < last; k++) {
		const struct target *t = &targets[k % NTARGETS];
		if (match && !strstr(t->name, match))
			continue;
		fuzz_desc[0] = 0;
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			sigprocmask(SIG_UNBLOCK, &chld, NULL);
			run_in_child(seed, k, t);
		}
		int st = wait_child(pid, timeout_ms);
		ran++;
		if (verbose)
			fprintf(stderr, "%s\n", fuzz_desc);
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		failures++;
		if (st == -1)
			fprintf(stderr, "%s\n  => hung: killed after %ld ms\n", fuzz_desc, timeout_ms);
		else if (WIFSIGNALED(st))
			fprintf(stderr, "%s\n  => crashed: signal %d (%s)\n", fuzz_desc, WTERMSIG(st),
				strsignal(WTERMSIG(st)));
		fprintf(stderr, "api_fuzz: seed %#llx case %ld (%s) failed; run it again with:\n"
				"  WEFT_FUZZ_SEED=%#llx WEFT_FUZZ_CASE=%ld %s\n",
			(unsigned long long)seed, k, t->name, (unsigned long long)seed, k,
			"tests/fuzz/api_fuzz");
		if (failures >= 10)
			break;
	}
	if (failures) {
		fprintf(stderr, "api_fuzz: %ld of %ld cases failed (seed %#llx)\n", failures, ran,
			(unsigned long long)seed);
		return 1;
	}
	if (verbose)
		fprintf(stderr, "api_fuzz: %ld cases passed (seed %#llx)\n", ran, (unsigned long long)seed);
	return 0;
}
