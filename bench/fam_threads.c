/*
 * fam_threads.c — the "Threads" rows: pthread_once, pthread_self,
 * pthread_getspecific, yield (alone and with a partner), create, create +
 * join (default stack and 64 KiB).
 *
 * Each row is a timed metric (harness.h): it performs n operations and
 * returns the nanoseconds its loop took; partners are created and joined
 * outside the timed part.  Invariant: a partner thread is waited for with
 * wait_until (a sched_yield loop) or a join, never a plain spin.
 */
#define _GNU_SOURCE
#include "harness.h"

#define GROUP "Threads"

static void *noop(void *a) { return a; }

static pthread_once_t once_ctl = PTHREAD_ONCE_INIT;
static void once_init(void) {}

static BENCH_ALIGNED int64_t m_once(uint64_t n)
{
	pthread_once(&once_ctl, once_init);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int e = pthread_once(&once_ctl, once_init);
		KEEP(e);
	}
	return now_ns() - t0;
}

/* glibc declares pthread_self const: call it through an opaque pointer so
 * that every iteration really calls it. */
static pthread_t (*volatile self_fn)(void) = pthread_self;

BENCH_ALIGNED int64_t bench_self(uint64_t n)
{
	pthread_t (*f)(void) = self_fn;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_t t = f();
		KEEP(t);
	}
	return now_ns() - t0;
}

/* A key with a value set, read back: the thread-specific data lookup. */
static pthread_key_t spec_key;
static int spec_value;

static BENCH_ALIGNED int64_t m_getspecific(uint64_t n)
{
	static bool made;
	if (!made) {
		int e = pthread_key_create(&spec_key, NULL);
		if (!e)
			e = pthread_setspecific(spec_key, &spec_value);
		if (e)
			die("pthread_key_create/setspecific", e);
		made = true;
	}
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		void *v = pthread_getspecific(spec_key);
		KEEP(v);
	}
	return now_ns() - t0;
}

static BENCH_ALIGNED int64_t m_yield_idle(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		sched_yield();
	return now_ns() - t0;
}

struct yield_pair {
	uint64_t n;
	int ready;
};

static BENCH_ALIGNED void *yield_partner(void *p)
{
	struct yield_pair *y = p;
	store(&y->ready, 1);
	for (uint64_t i = 0; i < y->n; i++)
		sched_yield();
	return NULL;
}

/* Two threads yield to each other: n yields in all, one switch each. */
BENCH_ALIGNED int64_t bench_yield_busy(uint64_t n)
{
	struct yield_pair y = { .n = n / 2 + 1 };
	pthread_t t = spawn(yield_partner, &y);
	wait_until(&y.ready, 1);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n / 2; i++)
		sched_yield();
	int64_t dt = now_ns() - t0;
	join(t);
	return n >= 2 ? dt * (int64_t)n / (int64_t)(n / 2 * 2) : dt;
}

/* The same with a third thread asleep for a minute: a timer is pending on
 * every switch, as in a server with a housekeeping thread or a poller's
 * quantum.  Weft's scheduler looks at the earliest deadline on every switch;
 * this row is what that look costs (runtime/timer.c: the cycle counter
 * answers "not yet" without a clock read). */
static BENCH_ALIGNED void *long_sleeper(void *p)
{
	(void)p;
	struct timespec ts = { .tv_sec = 60 };
	nanosleep(&ts, NULL);                 /* ended by pthread_cancel */
	return NULL;
}

static BENCH_ALIGNED int64_t m_yield_busy_timer(uint64_t n)
{
	pthread_t s = spawn(long_sleeper, NULL);
	sched_yield();                        /* it parks with its deadline */
	int64_t dt = bench_yield_busy(n);
	pthread_cancel(s);
	join(s);
	return dt;
}

/* Creation alone, in batches small enough to stay in NPTL's stack cache
 * for most threads; the batch is joined outside the timed part. */
#define CREATE_BATCH 16

static BENCH_ALIGNED int64_t m_create(uint64_t n)
{
	pthread_t t[CREATE_BATCH];
	int64_t total = 0;
	for (uint64_t done = 0; done < n;) {
		unsigned b = n - done < CREATE_BATCH ? (unsigned)(n - done) : CREATE_BATCH;
		int64_t t0 = now_ns();
		for (unsigned i = 0; i < b; i++)
			t[i] = spawn(noop, NULL);
		total += now_ns() - t0;
		for (unsigned i = 0; i < b; i++)
			join(t[i]);
		done += b;
	}
	return total;
}

BENCH_ALIGNED int64_t bench_create_join(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		join(spawn(noop, NULL));
	return now_ns() - t0;
}

/* Create + join with a 64 KiB stack set in the attributes: what a program
 * that sizes its stacks pays (the peers' rows of the same name create
 * with a 64 KiB stack too). */
#define SMALL_STACK (64 * 1024)

static BENCH_ALIGNED int64_t m_create_join_64k(uint64_t n)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	int e = pthread_attr_setstacksize(&a, SMALL_STACK);
	if (e)
		die("pthread_attr_setstacksize", e);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_t t;
		e = pthread_create(&t, &a, noop, NULL);
		if (e)
			die("pthread_create", e);
		join(t);
	}
	int64_t dt = now_ns() - t0;
	pthread_attr_destroy(&a);
	return dt;
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "once", GROUP, U_NS, F_PEERS, "pthread_once, already done", "-", NULL, m_once },
	{ "self", GROUP, U_NS, F_PEERS, "pthread_self",
	  "0.79 µs th_self (Small & Seltzer; 486DX2-66)", NULL, bench_self },
	{ "getspecific", GROUP, U_NS, F_PEERS, "pthread_getspecific (a key with a value set)", "-",
	  "pthread_key_create pthread_setspecific pthread_getspecific", m_getspecific },
	{ "yield_idle", GROUP, U_NS, 0, "yield, not busy (no other thread ready)",
	  "2.19 µs (Marovich; HP 9000/835); 4.0 µs (HP 9000/370)", NULL, m_yield_idle },
	{ "yield_busy", GROUP, U_NS, F_UNPINNED | F_PEERS, "yield, busy (two threads; per switch)",
	  "22.2 µs (Marovich; HP 835); 37 µs (Mueller; SPARC IPX); 7.8 µs (Small & Seltzer; 486); "
	  "5 µs (Xthreads; iPSC860); peers: Go 1 P 132 ns; GNU Pth 2.1 µs",
	  NULL, bench_yield_busy },
	{ "yield_busy_timer", GROUP, U_NS, F_UNPINNED, "yield, busy, a third thread asleep (a timer pending)",
	  "-", NULL, m_yield_busy_timer },
	{ "create", GROUP, U_NS, 0, "create, no switch",
	  "12 µs (Mueller; SPARC IPX); SunOS 56 µs (SPARC 1+)", NULL, m_create },
	{ "create_join", GROUP, U_NS, F_UNPINNED | F_PEERS, "create + join",
	  "13 µs create+exit (Xthreads; iPSC860); 102.8 µs fork (Small & Seltzer; 486); "
	  "peer: State Threads 230 ns",
	  NULL, bench_create_join },
	{ "create_join_64k", GROUP, U_NS, F_UNPINNED | F_PEERS, "create + join, 64 KiB stack (pthread_attr_setstacksize)",
	  "-", NULL, m_create_join_64k },
};

BENCH_FAMILY(fam_threads, rows);
