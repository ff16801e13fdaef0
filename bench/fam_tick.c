/*
 * fam_tick.c — the tick and preemption rows of "Kernel and processes":
 * the kernel's cost of a timer signal to an empty handler, Weft's whole
 * preemption tick, and preemption latency (a timer expires, a
 * higher-priority sleeper runs while another thread spins).
 *
 * These rows do not use the harness's calibrated loop: each says how it
 * measures where it is defined.  Invariant: the busy work runs in this
 * file's own text (the program's, where a tick may preempt at once), and
 * the cost rows count process CPU time, not wall time, so that other
 * programs on a shared machine do not inflate them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Kernel and processes"

/* ------------------------------------------------------------------ */
/* The preemption tick (Weft): what time slicing costs two busy threads */

struct busy_work {
	uint64_t n, sink;
};

/* Work in the program's own text, where a tick may preempt at once. */
static BENCH_ALIGNED void *busy(void *p)
{
	struct busy_work *w = p;
	uint64_t x = 1;
	for (uint64_t i = 0; i < w->n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		KEEP(x);
	}
	w->sink = x;
	return NULL;
}

/*
 * The kernel's share of a tick: a busy loop on the main thread, once alone
 * and once under a 100 us periodic POSIX timer whose signal goes to an empty
 * handler; the extra CPU time per signal.  The same in both binaries (Weft's
 * own tick is off while a single UT exists), and what Weft's tick builds on.
 * CPU time, not wall time: on a shared machine a busy loop's wall time
 * grows with everyone else's load (and once made this row negative), while
 * its CPU time grows only with the work the signals add.
 */
#define SIGNAL_PERIOD_NS 100000
static volatile uint64_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

static int64_t busy_main(uint64_t n)
{
	struct busy_work w = { .n = n };
	int64_t t0 = cpu_ns();
	busy(&w);
	return cpu_ns() - t0;
}

static void periodic(timer_t tm, long ns)
{
	struct itimerspec its = { { 0, ns }, { 0, ns } };
	timer_settime(tm, 0, &its, NULL);
}

static void m_signal_tick(struct result *r)
{
	int sig = SIGRTMIN + 3;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	if (sigaction(sig, &sa, NULL) || timer_create(CLOCK_MONOTONIC, &sev, &tm)) {
		na(r, "no POSIX timer: %s", strerror(errno));
		return;
	}
	uint64_t n = 1000;
	int64_t t = busy_main(n);
	while (t < (int64_t)(target_ns / 10)) {
		n *= 4;
		t = busy_main(n);
	}
	n = (uint64_t)((double)n * target_ns / (double)t) + 1;
	double v[32];
	uint64_t total = 0;
	for (int i = 0; i < reps; i++) {
		int64_t off = busy_main(n);
		uint64_t c0 = signals_seen;
		periodic(tm, SIGNAL_PERIOD_NS);
		int64_t on = busy_main(n);
		periodic(tm, 0);
		uint64_t c = signals_seen - c0;
		if (c == 0) {
			na(r, "no signal arrived");
			return;
		}
		total += c;
		v[i] = (double)(on - off) / (double)c;
	}
	timer_delete(tm);
	set_median(r, v);
	r->iters = total / (uint64_t)reps;
	r->sw_per_op = -1;
	snprintf(r->note, sizeof r->note, "100 us period; CPU time; %" PRIu64 " signals per repetition", r->iters);
}

#ifdef BENCH_WEFT
#define TICK_SLICE_NS tick_slice_ns()

/* 100 us unless BENCH_SLICE_US says otherwise (for looking closer). */
static unsigned tick_slice_ns(void)
{
	const char *e = getenv("BENCH_SLICE_US");
	long us = e && *e ? strtol(e, NULL, 10) : 100;
	return (unsigned)(us < 10 ? 10 : us) * 1000u;
}

static int64_t two_busy(uint64_t n)
{
	struct busy_work a = { .n = n }, b = { .n = n };
	int64_t t0 = cpu_ns();
	pthread_t ta = spawn(busy, &a), tb = spawn(busy, &b);
	join(ta);
	join(tb);
	return cpu_ns() - t0;
}

/*
 * Two busy UTs share the processor, once with time slicing off and once
 * with a TICK_SLICE_NS slice; the extra process CPU time divided by the
 * ticks taken is the cost of one tick to a running program: the timer
 * signal, the handler's PC test, the fake call, the full register and xsave
 * save, the switch, and the way back (Marovich's Table 4 timed the handler
 * alone; this is the whole tick).  Subtract the signal_tick row for Weft's
 * own share.  Off and on alternate within each repetition, so drift in the
 * machine's speed hits both halves alike.
 */
static void m_preempt_tick(struct result *r)
{
	uint64_t old = weft_timeslice_get();
	int e = weft_timeslice_set(TICK_SLICE_NS);
	if (e) {
		na(r, "time slicing unavailable (weft_timeslice_set: %s)", strerror(e));
		return;
	}
	weft_timeslice_set(0);
	uint64_t n = 1000;
	int64_t t = two_busy(n);
	while (t < (int64_t)(target_ns / 10)) {
		n *= 4;
		t = two_busy(n);
	}
	n = (uint64_t)((double)n * target_ns / (double)t) + 1;
	double v[32];
	uint64_t ticks = 0, preempted = 0;
	for (int i = 0; i < reps; i++) {
		struct weft_stats s0, s1;
		weft_timeslice_set(0);
		int64_t off = two_busy(n);
		weft_timeslice_set(TICK_SLICE_NS);
		weft_stats_get(&s0, sizeof s0);
		int64_t on = two_busy(n);
		weft_stats_get(&s1, sizeof s1);
		uint64_t dt = s1.ticks - s0.ticks;
		if (dt == 0) {
			weft_timeslice_set(old);
			na(r, "no tick arrived in %.0f ms with a %u us slice", (double)on / 1e6,
			   TICK_SLICE_NS / 1000);
			return;
		}
		ticks += dt;
		preempted += s1.preemptions - s0.preemptions;
		v[i] = (double)(on - off) / (double)dt;
	}
	weft_timeslice_set(old);
	set_median(r, v);
	r->iters = ticks / (uint64_t)reps;
	r->sw_per_op = (double)preempted / (double)ticks;
	snprintf(r->note, sizeof r->note, "%u us slice; CPU time; %" PRIu64 " ticks per repetition; %.0f%% preempted",
		 TICK_SLICE_NS / 1000, ticks / (uint64_t)reps, 100.0 * (double)preempted / (double)ticks);
}
#endif

/* ------------------------------------------------------------------ */
/* Preemption latency: a timer expires, a higher-priority thread runs   */

/*
 * A SCHED_FIFO thread (priority LAT_PRIO) sleeps until an absolute
 * CLOCK_MONOTONIC deadline LAT_GAP_NS ahead, over and over, while the main
 * thread (SCHED_OTHER) spins in the program's own text without calling the
 * thread library.  One sample: the time from the deadline to the sleeper's
 * first instruction after clock_nanosleep — the timer's expiry, the signal
 * or interrupt, the preemption of the spinner and the switch.  Under Weft
 * the spinner is interrupted by the tick (a one-shot at the sleeper's
 * deadline once a tick has seen only sleepers behind the running UT);
 * under NPTL by the kernel's wake-up preemption on the same CPU.  Timer
 * slack is set to 1 ns for the sleeper (the kernel adds 50 us to a normal
 * thread's sleeps), and NPTL falls back to SCHED_OTHER where SCHED_FIFO is
 * not allowed, saying so.  Median, min and max over the samples.
 */
#define LAT_GAP_NS 1000000
#define LAT_PRIO 10
#define LAT_LIMIT_NS 20000000000ll   /* give up after 20 s of spinning */

struct latency {
	uint64_t samples, taken;
	double *v;
	int done, stop;
};

static void *lat_sleeper(void *p)
{
	struct latency *l = p;
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	for (uint64_t i = 0; i < l->samples && !load(&l->stop); i++) {
		int64_t d = now_ns() + LAT_GAP_NS;
		struct timespec ts = { d / 1000000000, d % 1000000000 };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		l->v[i] = (double)(now_ns() - d);
		l->taken = i + 1;
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
	store(&l->done, 1);
	return NULL;
}

/* Spin in this file's text until *flag is set; false after limit_ns.  The
 * clock is read once per ~100 ms of work, so that a tick almost never
 * finds the spinner inside the vDSO (where Weft must defer). */
static bool spin_until_set(const int *flag, int64_t limit_ns)
{
	int64_t end = now_ns() + limit_ns;
	uint64_t x = 1;
	for (;;) {
		for (int k = 0; k < 1024; k++) {
			for (int i = 0; i < 65536; i++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				KEEP(x);
			}
			if (load(flag))
				return true;
		}
		if (now_ns() > end)
			return false;
	}
}

/* Create the sleeper as SCHED_FIFO LAT_PRIO; *fifo says whether it is. */
static pthread_t lat_spawn(struct latency *l, bool *fifo)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = LAT_PRIO };
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	*fifo = pthread_create(&t, &a, lat_sleeper, l) == 0;
	pthread_attr_destroy(&a);
	if (!*fifo)
		t = spawn(lat_sleeper, l);
	return t;
}

static void m_preempt_latency(struct result *r)
{
	struct latency l = { .samples = quick ? 50 : 300 };
#ifdef BENCH_WEFT
	if (weft_timeslice_get() == 0) {
		na(r, "time slicing is off (WEFT_TIMESLICE=0 or libweft linked statically)");
		return;
	}
#endif
	l.v = calloc(l.samples, sizeof *l.v);
	if (!l.v)
		die("calloc", ENOMEM);
	bool fifo;
	pthread_t t = lat_spawn(&l, &fifo);
	bool ran = spin_until_set(&l.done, LAT_LIMIT_NS);
	if (!ran)
		store(&l.stop, 1);
	join(t);
	if (!ran || l.taken < l.samples) {
		na(r, "the sleeper took %" PRIu64 " of %" PRIu64 " samples in %lld s of spinning: no preemption",
		   l.taken, l.samples, LAT_LIMIT_NS / 1000000000);
		free(l.v);
		return;
	}
	qsort(l.v, l.samples, sizeof l.v[0], cmp_double);
	r->ok = true;
	r->reps = (int)l.samples;
	r->iters = l.samples;
	r->median = l.v[l.samples / 2];
	r->min = l.v[0];
	r->max = l.v[l.samples - 1];
	r->sw_per_op = -1;
	char slice[64] = "the kernel's scheduler";
#ifdef BENCH_WEFT
	snprintf(slice, sizeof slice, "%.3g ms slice", (double)weft_timeslice_get() / 1e6);
#endif
	snprintf(r->note, sizeof r->note, "%s sleeper; %" PRIu64 " samples; %d ms sleeps; 90th percentile %.1f us; %s",
		 fifo ? "SCHED_FIFO" : "SCHED_OTHER (SCHED_FIFO not permitted)", l.samples, LAT_GAP_NS / 1000000,
		 l.v[l.samples * 9 / 10] / 1e3, slice);
	free(l.v);
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "signal_tick", GROUP, U_NS, 0,
	  "timer signal to an empty handler (the kernel's share of a tick)",
	  "154 µs UNIX signal handler (Mueller; SPARC IPX); 126.7 µs (Small & Seltzer; 486)", NULL, NULL,
	  m_signal_tick },
	{ "preempt_tick", GROUP, U_NS, 0,
	  "preemption tick: timer signal, handler, preemptive switch (two busy threads)",
	  "2.85 µs scheduler overhead, handler only (Marovich; HP 835)", NULL, NULL,
#ifdef BENCH_WEFT
	  m_preempt_tick,
#else
	  NULL,
#endif
	  NULL, "the kernel's tick: not visible from user space" },
	{ "preempt_latency", GROUP, U_NS, 0,
	  "preemption latency: timer expiry to a higher-priority sleeper running while a thread spins",
	  "-", "clock_nanosleep pthread_join", NULL, m_preempt_latency },
};

BENCH_FAMILY(fam_tick, rows);
