/*
 * fam_seeds.c — the "Seed interfaces" rows: the papers' own measurements
 * made through their own interfaces, <weft/xthreads.h> and <weft/myth.h>
 * (libweft-xthreads, libweft-myth), beside the figures the papers printed.
 *
 *   Xthreads (Sang, Knop & Rego 1993), the latency table of section 4
 *   (Table 4 in the text, captioned Table 3): creation plus destruction,
 *   measured as Figure 15 does (create a thread that returns at once, yield
 *   to it by name), and the thread switch, as Figure 16 does (two threads
 *   yield to each other by name; per switch).
 *   Myth (Small & Seltzer 1995): Table 1, an uncontested th_mutex_lock +
 *   th_mutex_unlock pair; Table 3, th_fork of a child that returns at once
 *   and th_join with it, and th_self; Table 4, a parent and a child that
 *   th_yield to each other (per yield).  Table 2's nullfunc(arg) is the
 *   "function call" row of the Floor family.
 *
 * bench-nptl runs the nearest pthread program for each (the label says
 * which), the Threads and Synchronisation families' own loops: create +
 * join, a sched_yield ping-pong, pthread_mutex lock + unlock, pthread_self.
 * Invariant: the timed loops call only the operation they time; partners
 * are made and ended outside the timed part and waited for by yielding,
 * never by spinning.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "harness.h"

#ifdef BENCH_WEFT
#include <weft/myth.h>
#include <weft/xthreads.h>
#endif

#define GROUP "Seed interfaces"

/* ------------------------------------------------------------------ */
/* Xthreads                                                            */

#ifdef BENCH_WEFT
static BENCH_ALIGNED void *noop(void *a) { return a; }
static BENCH_ALIGNED void xt_returns(void) {}

/* Figure 15: create, yield to the new thread, which returns and ends. */
static BENCH_ALIGNED int64_t m_xt_create_destroy(uint64_t n)
{
	xthread_t t;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (xthread_create(&t, NULL, xt_returns, 0) != XTOK)
			die("xthread_create", EAGAIN);
		xthread_yield(t);
	}
	return now_ns() - t0;
}

static xthread_t xt_main, xt_partner;
static uint64_t xt_rounds;

static BENCH_ALIGNED void xt_bounce(void)
{
	for (uint64_t i = 0; i < xt_rounds; i++)
		xthread_yield(xt_main);
}

/* Figure 16: main and a partner yield to each other by name. */
static BENCH_ALIGNED int64_t m_xt_switch(uint64_t n)
{
	uint64_t half = n / 2 > 0 ? n / 2 : 1;
	xt_rounds = half + 1;
	if (xthread_self(&xt_main) != XTOK || xthread_create(&xt_partner, NULL, xt_bounce, 0) != XTOK)
		die("xthread_create", EAGAIN);
	xthread_yield(xt_partner);               /* started: it yielded back */
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < half; i++)
		xthread_yield(xt_partner);
	int64_t dt = now_ns() - t0;
	while (xthread_yield(xt_partner) == XTOK)
		;                                /* until it has ended */
	return dt * (int64_t)n / (int64_t)(2 * half);
}
#endif

/* ------------------------------------------------------------------ */
/* Myth                                                                */

#ifdef BENCH_WEFT
static th_mutex_t lock BENCH_ALIGNED = TH_MUTEX_INITIALIZER;

static BENCH_ALIGNED int64_t m_myth_lock(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		th_mutex_lock(&lock);
		th_mutex_unlock(&lock);
	}
	return now_ns() - t0;
}

static BENCH_ALIGNED int64_t m_myth_fork(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		void *v = th_join(th_fork(noop, NULL));
		KEEP(v);
	}
	return now_ns() - t0;
}

static th_thread_t (*volatile self_fn)(void) = th_self;

static BENCH_ALIGNED int64_t m_myth_self(uint64_t n)
{
	th_thread_t (*f)(void) = self_fn;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		th_thread_t t = f();
		KEEP(t);
	}
	return now_ns() - t0;
}

static BENCH_ALIGNED void *myth_yielder(void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;
	for (uint64_t i = 0; i < k; i++)
		th_yield();
	return NULL;
}

/* The child and the parent yield to each other: n yields in all. */
static BENCH_ALIGNED int64_t m_myth_yield(uint64_t n)
{
	uint64_t half = n / 2 > 0 ? n / 2 : 1;
	th_thread_t c = th_fork(myth_yielder, (void *)(uintptr_t)(half + 1));
	if (!c)
		die("th_fork", errno);
	th_yield();                              /* the child has started */
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < half; i++)
		th_yield();
	int64_t dt = now_ns() - t0;
	th_join(c);
	return dt * (int64_t)n / (int64_t)(2 * half);
}
#else
/* NPTL runs the nearest pthread program of each row: the Threads and
 * Synchronisation families' own loops (harness.h). */
#define m_xt_create_destroy bench_create_join
#define m_xt_switch bench_yield_busy
#define m_myth_lock bench_mutex
#define m_myth_fork bench_create_join
#define m_myth_self bench_self
#define m_myth_yield bench_yield_busy
#endif

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "xt_create_destroy", GROUP, U_NS, F_UNPINNED,
	  "Xthreads create + destroy, Fig. 15 (NPTL: create + join)",
	  "87 µs nCUBE2; 13 µs iPSC860; 15 µs RS6000; 660 µs SPARC IPC (Sang, Knop & Rego, latency table)",
	  NULL, m_xt_create_destroy },
	{ "xt_switch", GROUP, U_NS, F_UNPINNED,
	  "Xthreads directed switch, Fig. 16; per switch (NPTL: sched_yield pair)",
	  "30 µs nCUBE2; 5 µs iPSC860; 6 µs RS6000; 70 µs SPARC IPC (same table)", NULL, m_xt_switch },
	{ "myth_lock", GROUP, U_NS, 0, "Myth th_mutex_lock + unlock, no contention (NPTL: pthread_mutex)",
	  "4.1 µs Myth; 1.8 µs Myth-asm; 45.5 µs kernel lock (Small & Seltzer Table 1; 486DX2-66)",
	  SYNC_MUTEX, m_myth_lock },
	{ "myth_fork", GROUP, U_NS, F_UNPINNED, "Myth th_fork + th_join (NPTL: create + join)",
	  "102.8 µs Myth; 2076 µs sfork; 8470 µs fork (Table 3)", NULL, m_myth_fork },
	{ "myth_self", GROUP, U_NS, 0, "Myth th_self (NPTL: pthread_self)", "0.79 µs (Table 3)", NULL,
	  m_myth_self },
	{ "myth_yield", GROUP, U_NS, F_UNPINNED,
	  "Myth th_yield, parent and child; per yield (NPTL: sched_yield pair)",
	  "7.8 µs thread yield; 105.7 µs 2-process switch (Table 4)", NULL, m_myth_yield },
};

BENCH_FAMILY(fam_seeds, rows);
