/*
 * fam_tas.c — mutual exclusion on a uniprocessor, Bershad's Tables 1 and
 * 4: both groups of rows, "one thread" (tas_*) and "in a preempted
 * program" (tas_*_busy), which share the locks, their verification and
 * the hammering run.
 *
 * Invariant: no mechanism is timed before it has been verified under
 * preemption (an exact count, and for a restartable sequence at least one
 * rollback); the timed loops and the workers are generated from the same
 * acquire/release code, in this file.
 *
 * Bershad (1992) §4.1 and §5: a test-and-set lock taken, a counter
 * incremented, the lock cleared, by each of these mechanisms:
 *   (a) Weft's deferral region: pthread_spin_trylock + pthread_spin_unlock,
 *       plain loads and stores inside libweft's text, which the tick never
 *       interrupts midway (Marovich's address-range test; NPTL: glibc's,
 *       a locked instruction);
 *   (b) a restartable atomic sequence (load; store 1), registered with
 *       weft_ras_register and rolled back by the tick handler: out of line
 *       (Bershad's explicit registration, a call) and inlined (his
 *       user-level detection, each copy registered);
 *   (c) `lock cmpxchg`, released by a plain store;
 *   (d) kernel emulation: the kernel does the test-and-set, one trap per
 *       acquisition (FUTEX_TRYLOCK_PI by a raw `syscall` instruction, which
 *       atomically stores the caller's TID into a free word; under M:1 every
 *       UT has the same TID, so a held lock answers EDEADLK), released by a
 *       plain store (NPTL: cmpxchg, falling back to FUTEX_UNLOCK_PI when the
 *       kernel has marked waiters, as a PI mutex must);
 *   (e) Lamport's fast mutual exclusion (1987) in plain loads and stores,
 *       with the two fences x86-TSO needs (mfence after `x = i` and after
 *       `y = i`: each is a store followed by a load of another word, the
 *       one reordering TSO allows), and without them (correct only when
 *       every thread shares one CPU: Weft's M:1, or NPTL pinned).
 * Every variant is first verified under preemption: TAS_THREADS threads
 * hammer the counter under a 100 us slice (Weft) or the kernel's scheduler
 * on the same CPU (NPTL, pinned by run.sh); the count must be exact, and for
 * (b) at least one rollback must have happened.  Only then is the
 * uncontended acquire+count+release timed, one thread, pinned.  The "in a
 * preempted program" rows time the verification itself.
 * A thread that finds the lock held yields: under M:1 the holder cannot run
 * while a waiter spins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

#define GROUP_ONE "Mutual exclusion, one thread (Bershad Tables 1 and 4)"
#define GROUP_BUSY "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)"

#define TAS_THREADS 4
#define TAS_SLICE_NS 100000

struct tas_lock {
	int word;                      /* (b) (c) (d) */
	pthread_spinlock_t spin;       /* (a) */
	volatile int x, y;             /* (e) */
	volatile int b[TAS_THREADS + 1];
	uint64_t count;
} __attribute__((aligned(64)));

#define COMPILER_BARRIER() __asm__ volatile("" ::: "memory")

/* (a) */
static inline void dr_acquire(struct tas_lock *l, int me)
{
	(void)me;
	while (pthread_spin_trylock(&l->spin))
		sched_yield();
}

static inline void dr_release(struct tas_lock *l, int me)
{
	(void)me;
	pthread_spin_unlock(&l->spin);
}

#if defined(__x86_64__)
/* (b) Every restartable sequence records (begin, end) in section
 * bench_ras; register_ras registers them all with Weft the first time a
 * restartable-sequence row runs.  The sequence is the load of the old
 * value and the store of 1, the store last: a tick with the PC on the store
 * sends it back to the load. */
extern const uintptr_t __start_bench_ras[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop_bench_ras[] __attribute__((weak, visibility("hidden")));

int bench_ras_tas(int *word);
__asm__(".text\n"
	".p2align 6\n"
	"bench_ras_tas:\n"
	"1:\tmovl (%rdi), %eax\n"
	"\tmovl $1, (%rdi)\n"
	"2:\tret\n"
	".pushsection bench_ras, \"aw\"\n"
	"\t.quad 1b, 2b\n"
	".popsection\n");

static inline int ras_tas_inline(int *word)
{
	int old;
	__asm__ volatile("1:\tmovl %1, %0\n"
			 "\tmovl $1, %1\n"
			 "2:\n"
			 ".pushsection bench_ras, \"aw\"\n"
			 "\t.quad 1b, 2b\n"
			 ".popsection"
			 : "=&r"(old), "+m"(*word)
			 :
			 : "memory");
	return old;
}

static inline void ras_acquire(struct tas_lock *l, int me)
{
	(void)me;
	while (bench_ras_tas(&l->word))
		sched_yield();
}

static inline void rasi_acquire(struct tas_lock *l, int me)
{
	(void)me;
	while (ras_tas_inline(&l->word))
		sched_yield();
}
#endif

static inline void word_release(struct tas_lock *l, int me)
{
	(void)me;
	__atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
}

/* (c) */
static inline void cas_acquire(struct tas_lock *l, int me)
{
	(void)me;
	int expect = 0;
	while (!__atomic_compare_exchange_n(&l->word, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		expect = 0;
		sched_yield();
	}
}

/* (d) */
#if defined(__x86_64__)
static inline long raw_futex(int *word, long op)
{
	long r;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 0;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"((long)SYS_futex), "D"(word), "S"(op), "d"(0L), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

static inline void emu_acquire(struct tas_lock *l, int me)
{
	(void)me;
	while (raw_futex(&l->word, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG) != 0)
		sched_yield();
}

static inline void emu_release(struct tas_lock *l, int me)
{
	(void)me;
#ifdef BENCH_WEFT
	/* one kernel thread: the kernel never sees a second owner, so it
	 * never marks waiters; clearing the word is the whole release */
	__atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
#else
	int owner = __atomic_load_n(&l->word, __ATOMIC_RELAXED) & FUTEX_TID_MASK;
	if (!__atomic_compare_exchange_n(&l->word, &owner, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		raw_futex(&l->word, FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG);
#endif
}
#endif

/* (e) Lamport, "A fast mutual exclusion algorithm" (1987), Fig. 2;
 * threads are numbered 1..TAS_THREADS. */
static inline void lamport_acquire(struct tas_lock *l, int i, bool fence)
{
	for (;;) {
		l->b[i] = 1;
		l->x = i;
		if (fence)
			__asm__ volatile("mfence" ::: "memory");
		if (l->y != 0) {
			l->b[i] = 0;
			while (l->y != 0)
				sched_yield();
			continue;
		}
		l->y = i;
		if (fence)
			__asm__ volatile("mfence" ::: "memory");
		if (l->x != i) {
			l->b[i] = 0;
			for (int j = 1; j <= TAS_THREADS; j++)
				while (l->b[j])
					sched_yield();
			if (l->y != i) {
				while (l->y != 0)
					sched_yield();
				continue;
			}
		}
		COMPILER_BARRIER();
		return;
	}
}

static inline void lamport_release(struct tas_lock *l, int i)
{
	COMPILER_BARRIER();
	l->y = 0;
	l->b[i] = 0;
}

static inline void lf_acquire(struct tas_lock *l, int i) { lamport_acquire(l, i, true); }
static inline void lu_acquire(struct tas_lock *l, int i) { lamport_acquire(l, i, false); }

struct tas_worker {
	struct tas_lock *l;
	uint64_t n;
	int me;
	int *go;
};

static struct tas_lock tas_solo;

/* The timed loop (one thread, uncontended; process CPU time, so that a
 * shared machine's load does not inflate nanoseconds) and the hammering
 * worker. */
#define TAS_VARIANT(name, acquire, release)                                    \
	static BENCH_ALIGNED int64_t tas_loop_##name(uint64_t n)               \
	{                                                                      \
		struct tas_lock *l = &tas_solo;                                \
		int64_t t0 = cpu_ns();                                         \
		for (uint64_t i = 0; i < n; i++) {                             \
			acquire(l, 1);                                         \
			l->count++;                                            \
			release(l, 1);                                         \
		}                                                              \
		return cpu_ns() - t0;                                          \
	}                                                                      \
	static BENCH_ALIGNED void *tas_worker_##name(void *p)                  \
	{                                                                      \
		struct tas_worker *w = p;                                      \
		wait_until(w->go, 1);                                          \
		for (uint64_t i = 0; i < w->n; i++) {                          \
			acquire(w->l, w->me);                                  \
			w->l->count++;                                         \
			release(w->l, w->me);                                  \
		}                                                              \
		return NULL;                                                   \
	}

TAS_VARIANT(dr, dr_acquire, dr_release)
TAS_VARIANT(cas, cas_acquire, word_release)
TAS_VARIANT(lf, lf_acquire, lamport_release)
TAS_VARIANT(lu, lu_acquire, lamport_release)
#if defined(__x86_64__)
TAS_VARIANT(ras, ras_acquire, word_release)
TAS_VARIANT(rasi, rasi_acquire, word_release)
TAS_VARIANT(emu, emu_acquire, emu_release)
#endif

enum tas_kind { TAS_DR, TAS_RAS, TAS_RASI, TAS_CAS, TAS_EMU, TAS_LF, TAS_LU, TAS_NKINDS };

struct tas_variant {
	int64_t (*loop)(uint64_t n);
	void *(*worker)(void *);
	bool ras;              /* must see rollbacks */
	bool one_cpu;          /* correct only with every thread on one CPU */
};

static const struct tas_variant tas_variants[TAS_NKINDS] = {
	[TAS_DR] = { tas_loop_dr, tas_worker_dr, false, false },
	[TAS_CAS] = { tas_loop_cas, tas_worker_cas, false, false },
	[TAS_LF] = { tas_loop_lf, tas_worker_lf, false, false },
	[TAS_LU] = { tas_loop_lu, tas_worker_lu, false, true },
#if defined(__x86_64__)
	[TAS_RAS] = { tas_loop_ras, tas_worker_ras, true, false },
	[TAS_RASI] = { tas_loop_rasi, tas_worker_rasi, true, false },
	[TAS_EMU] = { tas_loop_emu, tas_worker_emu, false, false },
#endif
};

/* What one hammering run saw. */
struct hammer {
	int64_t cpu, wall;
	uint64_t ops, count;
	uint64_t ticks, preemptions, deferrals, rollbacks;
};

#ifdef BENCH_WEFT
static bool ras_registered;

static int register_ras(void)
{
#if defined(__x86_64__)
	if (ras_registered)
		return 0;
	const uintptr_t *p = __start_bench_ras, *end = __stop_bench_ras;
	if (!p || p == end)
		return ENOENT;
	for (; p < end; p += 2) {
		int e = weft_ras_register((const void *)p[0], (const void *)p[1]);
		if (e)
			return e;
	}
	ras_registered = true;
	return 0;
#else
	return ENOTSUP;
#endif
}
#endif

/* Can this variant run here?  NULL if so, else why not. */
static const char *tas_unavailable(enum tas_kind k)
{
	static char why[200];
	const struct tas_variant *v = &tas_variants[k];
	if (!v->loop)
		return "x86-64 only";
#ifdef BENCH_WEFT
	uint64_t old = weft_timeslice_get();
	int e = weft_timeslice_set(TAS_SLICE_NS);
	weft_timeslice_set(old);
	if (e) {
		snprintf(why, sizeof why, "cannot verify without a 100 us slice (weft_timeslice_set: %s)", strerror(e));
		return why;
	}
	if (v->ras && (e = register_ras())) {
		snprintf(why, sizeof why, "weft_ras_register: %s", strerror(e));
		return why;
	}
#else
	if (v->ras)
		return "needs a tick handler that rolls the sequence back: Weft's (the kernel does not)";
	if (v->one_cpu) {
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof set, &set) || CPU_COUNT(&set) != 1)
			return "correct only with every thread on one CPU: run pinned (taskset -c 0)";
	}
#endif
#if defined(__x86_64__)
	if (k == TAS_EMU) {
		int w = 0;
		long r = raw_futex(&w, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG);
		if (r != 0) {
			snprintf(why, sizeof why, "FUTEX_TRYLOCK_PI: %s", strerror((int)-r));
			return why;
		}
	}
#endif
	return NULL;
}

/* TAS_THREADS threads each take the lock n times; a 100 us slice under
 * Weft.  Process CPU time, as the tick rows. */
static void tas_hammer(enum tas_kind k, uint64_t n, struct hammer *h)
{
	static struct tas_lock lock;
	struct tas_worker w[TAS_THREADS];
	pthread_t t[TAS_THREADS];
	int go = 0;
	memset(&lock, 0, sizeof lock);
	pthread_spin_init(&lock.spin, PTHREAD_PROCESS_PRIVATE);
#ifdef BENCH_WEFT
	uint64_t old = weft_timeslice_get();
	struct weft_stats s0, s1;
	weft_timeslice_set(TAS_SLICE_NS);
#endif
	for (int i = 0; i < TAS_THREADS; i++) {
		w[i] = (struct tas_worker){ &lock, n, i + 1, &go };
		t[i] = spawn(tas_variants[k].worker, &w[i]);
	}
#ifdef BENCH_WEFT
	weft_stats_get(&s0, sizeof s0);
#endif
	int64_t c0 = cpu_ns(), w0 = now_ns();
	store(&go, 1);
	for (int i = 0; i < TAS_THREADS; i++)
		join(t[i]);
	h->cpu = cpu_ns() - c0;
	h->wall = now_ns() - w0;
	h->ops = n * TAS_THREADS;
	h->count = lock.count;
	h->ticks = h->preemptions = h->deferrals = h->rollbacks = 0;
#ifdef BENCH_WEFT
	weft_stats_get(&s1, sizeof s1);
	weft_timeslice_set(old);
	h->ticks = s1.ticks - s0.ticks;
	h->preemptions = s1.preemptions - s0.preemptions;
	h->deferrals = s1.deferrals - s0.deferrals;
	h->rollbacks = s1.ras_rollbacks - s0.ras_rollbacks;
#endif
}

/*
 * Verify variant k: hammer until at least min_cpu_ns of CPU time has gone
 * by (and, for a restartable sequence, a rollback has happened, up to
 * TAS_VERIFY_MAX_NS).  True and the totals in *sum, or false and why.
 */
#define TAS_VERIFY_MAX_NS 5000000000ll

static bool tas_verify(enum tas_kind k, int64_t min_cpu_ns, struct hammer *sum, char *why, size_t len)
{
	uint64_t n = 1000;
	memset(sum, 0, sizeof *sum);
	for (;;) {
		struct hammer h;
		tas_hammer(k, n, &h);
		if (h.count != h.ops) {
			snprintf(why, len, "lost updates under preemption: %" PRIu64 " of %" PRIu64 " counted", h.count,
				 h.ops);
			return false;
		}
		sum->cpu += h.cpu;
		sum->wall += h.wall;
		sum->ops += h.ops;
		sum->count += h.count;
		sum->ticks += h.ticks;
		sum->preemptions += h.preemptions;
		sum->deferrals += h.deferrals;
		sum->rollbacks += h.rollbacks;
		bool enough = sum->cpu >= min_cpu_ns && (!tas_variants[k].ras || sum->rollbacks > 0);
		if (enough)
			return true;
		if (sum->cpu >= TAS_VERIFY_MAX_NS) {
			snprintf(why, len, "no rollback in %.1f s and %" PRIu64 " ticks: not verified",
				 (double)sum->cpu / 1e9, sum->ticks);
			return false;
		}
		if (h.cpu < 20000000)
			n *= 2;
	}
}

static void hammer_note(char *out, size_t len, const struct hammer *h)
{
#ifdef BENCH_WEFT
	snprintf(out, len, "%d UTs; 100 us slice; %" PRIu64 " acquisitions; count exact; %" PRIu64 " ticks; %" PRIu64
		 " preemptions; %" PRIu64 " deferrals; %" PRIu64 " rollbacks",
		 TAS_THREADS, h->ops, h->ticks, h->preemptions, h->deferrals, h->rollbacks);
#else
	cpu_set_t set;
	int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
	snprintf(out, len, "%d threads on %d CPU%s; the kernel's slice; %" PRIu64 " acquisitions; count exact",
		 TAS_THREADS, cpus, cpus == 1 ? "" : "s", h->ops);
#endif
}

/* Verify, then time the uncontended loop as any timed row. */
static void tas_uncontended(enum tas_kind k, struct result *r)
{
	const char *no = tas_unavailable(k);
	if (no) {
		na(r, "%s", no);
		return;
	}
	struct hammer sum;
	char why[300];
	if (!tas_verify(k, quick ? 20000000 : 100000000, &sum, why, sizeof why)) {
		na(r, "%s", why);
		return;
	}
	/* glibc's x86 spinlock is free at 1, not 0: initialise it */
	memset(&tas_solo, 0, sizeof tas_solo);
	pthread_spin_init(&tas_solo.spin, PTHREAD_PROCESS_PRIVATE);
	run_timed_fn(tas_variants[k].loop, r);
	char verified[300];
	hammer_note(verified, sizeof verified, &sum);
	snprintf(r->note, sizeof r->note, "verified first: %s", verified);
}

/* The verification run timed: CPU time per acquisition with
 * TAS_THREADS threads and a 100 us slice, reps repetitions. */
static void tas_contended(enum tas_kind k, struct result *r)
{
	const char *no = tas_unavailable(k);
	if (no) {
		na(r, "%s", no);
		return;
	}
	struct hammer sum, h;
	char why[300];
	/* verify and warm up; size n for target_ns of CPU per repetition */
	if (!tas_verify(k, (int64_t)(target_ns / 4), &sum, why, sizeof why)) {
		na(r, "%s", why);
		return;
	}
	double per = (double)sum.cpu / (double)sum.ops;
	uint64_t n = (uint64_t)(target_ns / per / TAS_THREADS) + 1;
	double v[32];
	struct hammer total = sum;
	for (int i = 0; i < reps; i++) {
		tas_hammer(k, n, &h);
		if (h.count != h.ops) {
			na(r, "lost updates under preemption: %" PRIu64 " of %" PRIu64 " counted", h.count, h.ops);
			return;
		}
		v[i] = (double)h.cpu / (double)h.ops;
		total.ops += h.ops;
		total.ticks += h.ticks;
		total.preemptions += h.preemptions;
		total.deferrals += h.deferrals;
		total.rollbacks += h.rollbacks;
	}
	set_median(r, v);
	r->iters = n * TAS_THREADS;
	r->sw_per_op = -1;
	hammer_note(r->note, sizeof r->note, &total);
}

#define TAS_METRICS(kind, lower)                                                     \
	static void m_tas_##lower(struct result *r) { tas_uncontended(kind, r); }   \
	static void m_tas_##lower##_busy(struct result *r) { tas_contended(kind, r); }

TAS_METRICS(TAS_DR, dr)
TAS_METRICS(TAS_RAS, ras)
TAS_METRICS(TAS_RASI, rasi)
TAS_METRICS(TAS_CAS, cas)
TAS_METRICS(TAS_EMU, emu)
TAS_METRICS(TAS_LF, lf)
TAS_METRICS(TAS_LU, lu)

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "tas_dr", GROUP_ONE, U_NS, 0,
	  "(a) TAS in Weft's deferral region: pthread_spin_trylock + unlock (NPTL: glibc's)", "-",
	  "pthread_spin_trylock pthread_spin_unlock", NULL, m_tas_dr },
	{ "tas_ras", GROUP_ONE, U_NS, 0,
	  "(b) restartable sequence, out of line (a call: explicit registration)",
	  "0.64 µs (Bershad T1; DS5000); 0.6 µs i486, 0.3 µs 88000, 2.1 µs HP 835 (T4)", NULL, NULL, m_tas_ras },
	{ "tas_rasi", GROUP_ONE, U_NS, 0,
	  "(b) restartable sequence, inlined (user-level detection)",
	  "0.51 µs (Bershad T1; DS5000); i486 0.6 − 0.3 µs linkage (T4)", NULL, NULL, m_tas_rasi },
	{ "tas_cas", GROUP_ONE, U_NS, 0,
	  "(c) lock cmpxchg + store", "0.7 µs i486; 1.0 µs i386; 0.9 µs 88000; 5.5 µs HP 835 (Bershad T4, interlocked)",
	  NULL, NULL, m_tas_cas },
	{ "tas_emu", GROUP_ONE, U_NS, 0,
	  "(d) kernel emulation: one FUTEX_TRYLOCK_PI trap + store", "4.15 µs (Bershad T1; DS5000)", NULL, NULL,
	  m_tas_emu },
	{ "tas_lf", GROUP_ONE, U_NS, 0,
	  "(e) Lamport's fast mutex, 2 × mfence", "1.51 µs software reservation (a) (Bershad T1; DS5000)", NULL,
	  NULL, m_tas_lf },
	{ "tas_lu", GROUP_ONE, U_NS, 0,
	  "(e) Lamport's fast mutex, no fence (one CPU only)", "-", NULL, NULL, m_tas_lu },

	{ "tas_dr_busy", GROUP_BUSY, U_NS, 0,
	  "(a) deferral region", "-", "pthread_spin_trylock pthread_spin_unlock", NULL, m_tas_dr_busy },
	{ "tas_ras_busy", GROUP_BUSY, U_NS, 0,
	  "(b) restartable sequence, out of line", "0.58 µs spinlock, R.A.S. (Bershad T2; DS5000)", NULL, NULL,
	  m_tas_ras_busy },
	{ "tas_rasi_busy", GROUP_BUSY, U_NS, 0,
	  "(b) restartable sequence, inlined", "-", NULL, NULL, m_tas_rasi_busy },
	{ "tas_cas_busy", GROUP_BUSY, U_NS, 0,
	  "(c) lock cmpxchg", "-", NULL, NULL, m_tas_cas_busy },
	{ "tas_emu_busy", GROUP_BUSY, U_NS, 0,
	  "(d) kernel emulation", "4.3 µs spinlock, emulation (Bershad T2; DS5000)", NULL, NULL, m_tas_emu_busy },
	{ "tas_lf_busy", GROUP_BUSY, U_NS, 0,
	  "(e) Lamport, 2 × mfence", "-", NULL, NULL, m_tas_lf_busy },
	{ "tas_lu_busy", GROUP_BUSY, U_NS, 0,
	  "(e) Lamport, no fence", "-", NULL, NULL, m_tas_lu_busy },
};

BENCH_FAMILY(fam_tas, rows);
