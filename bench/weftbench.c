/*
 * weftbench.c — the benchmark behind `make bench`: one source, built twice.
 *
 * bench-weft links libweft (BENCH_WEFT defined, the arch switch compiled in);
 * bench-nptl links plain glibc.  Each run measures one metric and prints one
 * CSV line; bench/run.sh runs every metric of both binaries, pinned to one
 * CPU, and turns the lines into the Markdown table, the CSV and the chart.
 *
 *   bench-X --list          key|group|unit|flags|label|history, one a line
 *   bench-X KEY             key,backend,status,median,min,max,reps,iters,sw_per_op,note
 *
 * Method (the papers' "dual loop" timing, without subtracting the loop):
 * each timed metric is a function that performs n operations and returns the
 * nanoseconds its timed part took, so set-up (creating the partner thread,
 * joining it) is never counted.  n is calibrated until one repetition lasts
 * at least target_ns (0.2 s; 10 ms with QUICK=1), one warm-up repetition
 * runs, then `reps` (5; 3 quick) repetitions give median, min and max per
 * operation.  The tick rows and the memory rows measure differently and say
 * how where they are defined.
 *
 * Invariant: a metric that cannot run on this backend prints status "na"
 * and the reason, never a number.  Every wait between threads is either a
 * blocking pthread call or a sched_yield loop: under Weft's M:1 runtime a
 * UT loses the processor only inside Weft or at a time-slice tick, so a
 * plain spin would burn whole slices (or, with slicing off, never end).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_WEFT
#include "weft.h"
#include "arch/arch.h"
#define BACKEND "weft"
#else
#define BACKEND "nptl"
#endif

/* ------------------------------------------------------------------ */
/* Results                                                             */

enum unit { U_NS, U_BYTES, U_COUNT };
static const char *const unit_name[] = { "ns", "bytes", "count" };

struct result {
	bool ok;
	double median, min, max;   /* ns per op, bytes per thread, or a count */
	int reps;
	uint64_t iters;            /* operations per repetition */
	double sw_per_op;          /* context switches per op (-1: unknown) */
	char note[800];            /* reason when !ok; remark otherwise */
};

static const char *backend_tag = BACKEND;
static double target_ns = 0.2e9;   /* one repetition lasts at least this */
static int reps = 5;

static void clean_note(char *s)
{
	for (; *s; s++)
		if (*s == ',' || *s == '\n' || *s == '|')
			*s = ';';
}

static void print_result(const char *key, struct result *r)
{
	clean_note(r->note);
	if (!r->ok) {
		printf("%s,%s,na,,,,,,,%s\n", key, backend_tag, r->note);
		return;
	}
	printf("%s,%s,ok,%.4f,%.4f,%.4f,%d,%" PRIu64 ",", key, backend_tag, r->median, r->min,
	       r->max, r->reps, r->iters);
	if (r->sw_per_op >= 0)
		printf("%.3f", r->sw_per_op);
	printf(",%s\n", r->note);
}

static void na(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void na(struct result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->ok = false;
	vsnprintf(r->note, sizeof r->note, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time of the whole process (user + system, every kernel thread):
 * unlike wall time it does not grow while other programs hold the CPU,
 * which is what the tick rows need on a shared machine. */
static inline int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Wait for another thread without spinning forever under M:1. */
static void wait_until(const int *p, int v)
{
	while (load(p) != v)
		sched_yield();
}

static void die(const char *what, int e)
{
	fprintf(stderr, "weftbench: %s: %s\n", what, strerror(e));
	exit(2);
}

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int e = pthread_create(&t, NULL, fn, arg);
	if (e)
		die("pthread_create", e);
	return t;
}

static void join(pthread_t t)
{
	int e = pthread_join(t, NULL);
	if (e)
		die("pthread_join", e);
}

#ifndef BENCH_WEFT
/* Kernel-visible context switches of the whole process (all threads). */
static uint64_t kernel_switches(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}
#endif

/* UT switches under Weft, kernel switches under NPTL. */
static uint64_t switches(void)
{
#ifdef BENCH_WEFT
	struct weft_stats s;
	if (weft_stats_get(&s, sizeof s) == 0)
		return s.context_switches;
	return 0;
#else
	return kernel_switches();
#endif
}

static void *noop(void *a) { return a; }

/* Keep the compiler from deleting or hoisting loop bodies. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

/* ------------------------------------------------------------------ */
/* Which calls are Weft's.  bench-weft links -lweft before libc, so a   */
/* pthread function libweft does not define yet silently comes from     */
/* glibc, whose blocking sync would stop Weft's single kernel thread.   */

#ifdef BENCH_WEFT
static bool weft_defines(const char *fn)
{
	Dl_info self, def;
	if (!dladdr((void *)weft_version, &self) || !self.dli_fname)
		return false;
	void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return false;
	void *p = dlsym(h, fn);
	bool ours = p && dladdr(p, &def) && def.dli_fname && !strcmp(def.dli_fname, self.dli_fname);
	dlclose(h);
	return ours;
}
#endif

/* NULL when every function in the space-separated list is the backend's own. */
static const char *missing_sync(const char *needs)
{
#ifdef BENCH_WEFT
	static char name[64];
	const char *p = needs;
	while (p && *p) {
		size_t n = strcspn(p, " ");
		if (n && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = 0;
			if (!weft_defines(name))
				return name;
		}
		p += n;
		p += strspn(p, " ");
	}
#else
	(void)needs;
#endif
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */

static pthread_once_t once_ctl = PTHREAD_ONCE_INIT;
static void once_init(void) {}

static int64_t m_once(uint64_t n)
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

static int64_t m_self(uint64_t n)
{
	pthread_t (*f)(void) = self_fn;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_t t = f();
		KEEP(t);
	}
	return now_ns() - t0;
}

static int64_t m_yield_idle(uint64_t n)
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

static void *yield_partner(void *p)
{
	struct yield_pair *y = p;
	store(&y->ready, 1);
	for (uint64_t i = 0; i < y->n; i++)
		sched_yield();
	return NULL;
}

/* Two threads yield to each other: n yields in all, one switch each. */
static int64_t m_yield_busy(uint64_t n)
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

/* Creation alone, in batches small enough to stay in NPTL's stack cache
 * for most threads; the batch is joined outside the timed part. */
#define CREATE_BATCH 16

static int64_t m_create(uint64_t n)
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

static int64_t m_create_join(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		join(spawn(noop, NULL));
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* Mutexes                                                             */

static int64_t m_mutex(uint64_t n)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	int64_t dt = now_ns() - t0;
	pthread_mutex_destroy(&m);
	return dt;
}

/*
 * Long-term contention: every lock waits for the other thread's unlock.
 * Three mutexes in a ring; each thread holds two or one and, in turn,
 * releases the one the other waits for and then waits for the next:
 *   A holds {0,1}: unlock 0, lock 2 | B holds {2}: lock 0, unlock 2 | ...
 * so no thread can take a lock back before the other has had it, whatever
 * the mutex's fairness.  One hand-off = one unlock with a waiter plus the
 * waiter's return from lock.
 */
struct handoff {
	pthread_mutex_t m[3];
	uint64_t n;
	int ready;
};

static void *handoff_b(void *p)
{
	struct handoff *h = p;
	pthread_mutex_lock(&h->m[2]);
	store(&h->ready, 1);
	for (uint64_t i = 0; i < h->n; i++) {
		pthread_mutex_lock(&h->m[i % 3]);
		pthread_mutex_unlock(&h->m[(i + 2) % 3]);
	}
	/* after iteration i, B holds {i % 3} */
	pthread_mutex_unlock(&h->m[(h->n + 2) % 3]);
	return NULL;
}

static int64_t m_handoff(uint64_t n)
{
	struct handoff *h = calloc(1, sizeof *h);
	uint64_t rounds = n / 2 + 1;
	for (int i = 0; i < 3; i++)
		pthread_mutex_init(&h->m[i], NULL);
	h->n = rounds;
	pthread_mutex_lock(&h->m[0]);
	pthread_mutex_lock(&h->m[1]);
	pthread_t t = spawn(handoff_b, h);
	wait_until(&h->ready, 1);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++) {
		pthread_mutex_unlock(&h->m[i % 3]);
		pthread_mutex_lock(&h->m[(i + 2) % 3]);
	}
	int64_t dt = now_ns() - t0;
	/* after iteration i, A holds {i+1, i+2} mod 3 */
	pthread_mutex_unlock(&h->m[rounds % 3]);
	pthread_mutex_unlock(&h->m[(rounds + 1) % 3]);
	join(t);
	for (int i = 0; i < 3; i++)
		pthread_mutex_destroy(&h->m[i]);
	free(h);
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}

/* ------------------------------------------------------------------ */
/* Conditions                                                          */

static int64_t m_cond_signal_none(uint64_t n)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		pthread_cond_signal(&c);
	int64_t dt = now_ns() - t0;
	pthread_cond_destroy(&c);
	return dt;
}

static int64_t m_cond_broadcast_none(uint64_t n)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		pthread_cond_broadcast(&c);
	int64_t dt = now_ns() - t0;
	pthread_cond_destroy(&c);
	return dt;
}

/*
 * Marovich 3.3.9.2-3: the main thread signals a condition another thread
 * waits on (untimed or timed), outside or inside the critical section, and
 * then yields until the waiter has taken the event and waits again.  One
 * operation is one such signal, including the waiter's wake-up and its
 * return to waiting.
 */
struct condpair {
	pthread_mutex_t m;
	pthread_cond_t c;
	int pending, stop, ready;
	bool timed;
};

static void *cond_waiter(void *p)
{
	struct condpair *cp = p;
	struct timespec far;
	clock_gettime(CLOCK_REALTIME, &far);
	far.tv_sec += 3600;
	pthread_mutex_lock(&cp->m);
	store(&cp->ready, 1);
	for (;;) {
		while (!load(&cp->pending) && !cp->stop) {
			if (cp->timed)
				pthread_cond_timedwait(&cp->c, &cp->m, &far);
			else
				pthread_cond_wait(&cp->c, &cp->m);
		}
		if (cp->stop)
			break;
		store(&cp->pending, 0);
	}
	pthread_mutex_unlock(&cp->m);
	return NULL;
}

static int64_t cond_waiter_run(uint64_t n, bool timed, bool inside)
{
	struct condpair cp = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER, .timed = timed };
	pthread_t t = spawn(cond_waiter, &cp);
	wait_until(&cp.ready, 1);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_mutex_lock(&cp.m);
		store(&cp.pending, 1);
		if (inside)
			pthread_cond_signal(&cp.c);
		pthread_mutex_unlock(&cp.m);
		if (!inside)
			pthread_cond_signal(&cp.c);
		wait_until(&cp.pending, 0);
	}
	int64_t dt = now_ns() - t0;
	pthread_mutex_lock(&cp.m);
	cp.stop = 1;
	pthread_cond_signal(&cp.c);
	pthread_mutex_unlock(&cp.m);
	join(t);
	return dt;
}

static int64_t m_cond_untimed_out(uint64_t n) { return cond_waiter_run(n, false, false); }
static int64_t m_cond_untimed_in(uint64_t n) { return cond_waiter_run(n, false, true); }
static int64_t m_cond_timed_out(uint64_t n) { return cond_waiter_run(n, true, false); }
static int64_t m_cond_timed_in(uint64_t n) { return cond_waiter_run(n, true, true); }

/* ------------------------------------------------------------------ */
/* Semaphores: Mueller's "semaphore synchronization", one V in one      */
/* thread and the P it releases in the other; a ping-pong of two.       */

struct sempair {
	sem_t a, b;
	uint64_t n;
};

static void *sem_partner(void *p)
{
	struct sempair *s = p;
	for (uint64_t i = 0; i < s->n; i++) {
		sem_wait(&s->a);
		sem_post(&s->b);
	}
	return NULL;
}

static int64_t m_sem(uint64_t n)
{
	struct sempair s;
	uint64_t rounds = n / 2 + 1;
	s.n = rounds;
	sem_init(&s.a, 0, 0);
	sem_init(&s.b, 0, 0);
	pthread_t t = spawn(sem_partner, &s);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++) {
		sem_post(&s.a);
		sem_wait(&s.b);
	}
	int64_t dt = now_ns() - t0;
	join(t);
	sem_destroy(&s.a);
	sem_destroy(&s.b);
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}

/* ------------------------------------------------------------------ */
/* Bershad §4.2: spinlock, mutexlock, forktest, pingpong               */

struct counting {
	pthread_spinlock_t s;
	pthread_mutex_t m;
	uint64_t n, counter;
	int ready;
};

static void *spin_worker(void *p)
{
	struct counting *c = p;
	for (uint64_t i = 0; i < c->n; i++) {
		pthread_spin_lock(&c->s);
		c->counter++;
		pthread_spin_unlock(&c->s);
	}
	return NULL;
}

static void *mutex_worker(void *p)
{
	struct counting *c = p;
	for (uint64_t i = 0; i < c->n; i++) {
		pthread_mutex_lock(&c->m);
		c->counter++;
		pthread_mutex_unlock(&c->m);
	}
	return NULL;
}

/* Two threads acquire, count and release; n acquisitions in all. */
static int64_t two_workers(uint64_t n, void *(*fn)(void *))
{
	struct counting c = { .m = PTHREAD_MUTEX_INITIALIZER, .n = n / 2 + 1 };
	pthread_spin_init(&c.s, PTHREAD_PROCESS_PRIVATE);
	int64_t t0 = now_ns();
	pthread_t a = spawn(fn, &c), b = spawn(fn, &c);
	join(a);
	join(b);
	int64_t dt = now_ns() - t0;
	if (c.counter != 2 * c.n) {
		fprintf(stderr, "weftbench: lost updates (%" PRIu64 " of %" PRIu64 ")\n", c.counter, 2 * c.n);
		exit(2);
	}
	pthread_spin_destroy(&c.s);
	return dt * (int64_t)n / (int64_t)(2 * c.n);
}

static int64_t m_spinlock(uint64_t n) { return two_workers(n, spin_worker); }
static int64_t m_mutexlock(uint64_t n) { return two_workers(n, mutex_worker); }

/* Forktest: thread k creates thread k+1 (detached) and exits at once. */
static pthread_attr_t detached_attr;
static uint64_t fork_left;
static int fork_done;

static void *fork_link(void *p)
{
	if (--fork_left == 0) {
		store(&fork_done, 1);
		return p;
	}
	pthread_t t;
	int e = pthread_create(&t, &detached_attr, fork_link, p);
	if (e)
		die("pthread_create (forktest)", e);
	return p;
}

static int64_t m_forktest(uint64_t n)
{
	pthread_attr_init(&detached_attr);
	pthread_attr_setdetachstate(&detached_attr, PTHREAD_CREATE_DETACHED);
	fork_left = n;
	store(&fork_done, 0);
	int64_t t0 = now_ns();
	pthread_t t;
	int e = pthread_create(&t, &detached_attr, fork_link, NULL);
	if (e)
		die("pthread_create (forktest)", e);
	wait_until(&fork_done, 1);
	int64_t dt = now_ns() - t0;
	pthread_attr_destroy(&detached_attr);
	return dt;
}

/* Pingpong: two threads alternate through one mutex and one condition;
 * one operation is one ping and one pong. */
struct pingpong {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;
	uint64_t n;
};

static void pingpong_side(struct pingpong *p, int me)
{
	pthread_mutex_lock(&p->m);
	for (uint64_t i = 0; i < p->n; i++) {
		while (p->turn != me)
			pthread_cond_wait(&p->c, &p->m);
		p->turn = !me;
		pthread_cond_signal(&p->c);
	}
	pthread_mutex_unlock(&p->m);
}

static void *pong(void *p)
{
	pingpong_side(p, 1);
	return NULL;
}

static int64_t m_pingpong(uint64_t n)
{
	struct pingpong p = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER, .n = n };
	int64_t t0 = now_ns();
	pthread_t t = spawn(pong, &p);
	pingpong_side(&p, 0);
	join(t);
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* Kernel and process reference                                        */

static int64_t m_getpid(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		long p = syscall(SYS_getpid);
		KEEP(p);
	}
	return now_ns() - t0;
}

static jmp_buf jb;

static int64_t m_setjmp(uint64_t n)
{
	int64_t t0 = now_ns();
	for (volatile uint64_t i = 0; i < n; i++) {
		if (!setjmp(jb))
			longjmp(jb, 1);
	}
	return now_ns() - t0;
}

static void xwrite(int fd) { char c = 1; if (write(fd, &c, 1) != 1) _exit(3); }
static void xread(int fd) { char c; if (read(fd, &c, 1) != 1) _exit(3); }

/*
 * Marovich, Appendix C: two forked processes exchange one byte through a
 * pair of pipes (2n switches); subtract the same I/O done by one process
 * (write then read on one pipe) and half a getpid, the cost of entering
 * and leaving the kernel once that a direct switch would not pay.
 */
static int64_t m_process_switch(uint64_t n)
{
	int ab[2], ba[2], self[2];
	if (pipe(ab) || pipe(ba) || pipe(self))
		die("pipe", errno);
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		for (uint64_t i = 0; i < n; i++) {
			xread(ab[0]);
			xwrite(ba[1]);
		}
		_exit(0);
	}
	xwrite(ab[1]);   /* let the child start before timing */
	xread(ba[0]);
	int64_t t0 = now_ns();
	for (uint64_t i = 1; i < n; i++) {
		xwrite(ab[1]);
		xread(ba[0]);
	}
	int64_t both = now_ns() - t0;
	waitpid(pid, NULL, 0);

	t0 = now_ns();
	for (uint64_t i = 1; i < n; i++) {
		xwrite(self[1]);
		xread(self[0]);
	}
	int64_t io = now_ns() - t0;
	int64_t gp = m_getpid(n - 1);
	for (int i = 0; i < 2; i++) {
		close(ab[i]);
		close(ba[i]);
		close(self[i]);
	}
	/* per switch: both/2(n-1) - io/(n-1) - gp/2(n-1), scaled to n ops */
	double per = ((double)both / 2 - (double)io - (double)gp / 2) / (double)(n - 1);
	return (int64_t)(per * (double)n);
}

/* ------------------------------------------------------------------ */
/* Floor                                                               */

#ifdef BENCH_WEFT
static void *floor_a_sp, *floor_b_sp;

static void floor_partner(void *arg)
{
	(void)arg;
	for (;;)
		__weft_switch(&floor_b_sp, floor_a_sp);
}

/* The bare arch switch: two contexts, no scheduler, no bookkeeping. */
static int64_t m_arch_switch(uint64_t n)
{
	static char *stack;
	if (!stack) {
		stack = aligned_alloc(64, 64 * 1024);
		floor_b_sp = __weft_arch_frame(stack + 64 * 1024, floor_partner, NULL);
	}
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		__weft_switch(&floor_a_sp, floor_b_sp);
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}
#endif

#if defined(__x86_64__)
/*
 * The least a switch can do on x86-64: push the six callee-saved
 * registers, swap stack pointers, pop, return.  Unlike switch.S it keeps
 * no MXCSR or x87 control word, so the difference between the two floor
 * rows is what carrying the floating-point control state costs.
 */
void bench_reg_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
	".p2align 4\n"
	"bench_reg_switch:\n"
	"\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
	"\tret\n");

static void *reg_a_sp, *reg_b_sp;

static void reg_partner(void)
{
	for (;;)
		bench_reg_switch(&reg_b_sp, reg_a_sp);
}

static int64_t m_reg_switch(uint64_t n)
{
	static char *stack;
	if (!stack) {
		stack = aligned_alloc(64, 64 * 1024);
		/* six registers, the return address into reg_partner, and the
		 * slot a call would have left, so that rsp % 16 == 8 there */
		uint64_t *f = (uint64_t *)(stack + 64 * 1024) - 8;
		memset(f, 0, 8 * sizeof *f);
		f[6] = (uint64_t)(uintptr_t)reg_partner;
		reg_b_sp = f;
	}
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		bench_reg_switch(&reg_a_sp, reg_b_sp);
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}
#endif

__attribute__((noinline, noipa)) static int nullfunc(int x)
{
	__asm__ volatile("");
	return x + 1;
}

static int64_t m_call(uint64_t n)
{
	int x = 0;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		x = nullfunc(x);
	KEEP(x);
	return now_ns() - t0;
}

static int cas_word;

static int64_t m_cmpxchg(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int expect = 0;
		__atomic_compare_exchange_n(&cas_word, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		__atomic_store_n(&cas_word, 0, __ATOMIC_RELEASE);
	}
	return now_ns() - t0;
}

static int64_t m_loop(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		__asm__ volatile("");
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* Memory: resident bytes per idle thread, and the most threads alive   */

#define GIB (1024.0 * 1024 * 1024)
#define BUDGET_BYTES (12.0 * GIB)
#define KEEP_FREE_BYTES (3.0 * GIB)

static int idle_started;

static void *idle_thread(void *a)
{
	__atomic_fetch_add(&idle_started, 1, __ATOMIC_RELAXED);
	for (;;) {
		struct timespec ts = { 3600, 0 };
		nanosleep(&ts, NULL);
	}
	return a;
}

static double rss_bytes(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (double)res * (double)sysconf(_SC_PAGESIZE);
}

static double meminfo_bytes(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	double v = -1;
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = strtod(line + len + 1, NULL) * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

static long read_long_file(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	long n = 0;
	int c;
	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Why pthread_create failed: the errno, and the kernel limit nearest. */
static void explain_failure(char *out, size_t len, int e, long created)
{
	long maps = count_lines("/proc/self/maps");
	long max_maps = read_long_file("/proc/sys/vm/max_map_count");
	long pid_max = read_long_file("/proc/sys/kernel/pid_max");
	long threads_max = read_long_file("/proc/sys/kernel/threads-max");
	struct rlimit rl;
	getrlimit(RLIMIT_NPROC, &rl);
	const char *why = "unknown limit";
	if (e == EAGAIN && max_maps > 0 && maps >= max_maps - 16)
		why = "vm.max_map_count reached: each NPTL stack is two mappings (stack + guard)";
	else if (e == EAGAIN && pid_max > 0 && created >= pid_max - 2048)
		why = "kernel.pid_max reached: every kernel thread needs a pid";
	else if (e == EAGAIN && rl.rlim_cur != RLIM_INFINITY && created >= (long)rl.rlim_cur - 2048)
		why = "RLIMIT_NPROC reached";
	else if (e == EAGAIN && threads_max > 0 && created >= threads_max - 2048)
		why = "kernel.threads-max reached";
	else if (e == ENOMEM)
		why = "out of memory";
	snprintf(out, len, "pthread_create: %s after %ld threads (%s; maps %ld/%ld; pid_max %ld)",
		 strerror(e), created, why, maps, max_maps, pid_max);
}

/*
 * Kernel threads draw on machine-wide pids: running kernel.pid_max (or
 * threads-max) out makes every other process on the machine fail to fork,
 * and on a shared machine a watchdog may kill the process that did it (it
 * happened while this was written).  So NPTL's "most threads" run stops once
 * BENCH_PID_SHARE percent (default 60) of the limit is in use machine-wide
 * and reports a lower bound and the limit it would reach; BENCH_PID_SHARE=100
 * goes on to the failure.  Under Weft threads cost no pid: never triggers.
 */
struct kernel_limits {
	long pid_max, threads_max, in_use, max_maps;
};

static struct kernel_limits kernel_limits(void)
{
	struct kernel_limits k = { -1, -1, -1, -1 };
	long running;
	FILE *f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%*s %*s %*s %ld/%ld", &running, &k.in_use) != 2)
			k.in_use = -1;
		fclose(f);
	}
	k.pid_max = read_long_file("/proc/sys/kernel/pid_max");
	k.threads_max = read_long_file("/proc/sys/kernel/threads-max");
	k.max_maps = read_long_file("/proc/sys/vm/max_map_count");
	return k;
}

/* The kernel limit on threads per machine, and its name. */
static long thread_limit(const struct kernel_limits *k, const char **name)
{
	long limit = k->pid_max;
	*name = "kernel.pid_max";
	if (k->threads_max > 0 && (limit < 0 || k->threads_max < limit)) {
		limit = k->threads_max;
		*name = "kernel.threads-max";
	}
	return limit;
}

/* What NPTL reaches first here, in words. */
static void nptl_limits(char *out, size_t len)
{
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	snprintf(out, len,
		 "every kernel thread takes one of %s %ld pids machine-wide (%ld in use) and "
		 "each NPTL stack two of vm.max_map_count %ld mappings (about %ld stacks)",
		 name, limit, k.in_use, k.max_maps, k.max_maps / 2);
}

static bool stopped_for_pids;

static bool pid_headroom(char *why, size_t len, long made)
{
#ifdef BENCH_WEFT
	(void)why;
	(void)len;
	(void)made;
	return true;
#else
	const char *env = getenv("BENCH_PID_SHARE");
	long share = env && *env ? strtol(env, NULL, 10) : 60;
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	if (share >= 100 || k.in_use < 0 || limit < 0 || k.in_use * 100 < limit * share)
		return true;
	stopped_for_pids = true;
	snprintf(why, len, "stopped by the benchmark at %ld%% of %s in use machine-wide (%ld of %ld)",
		 share, name, k.in_use, limit);
	return false;
#endif
}

/*
 * Create up to `want` idle threads (each runs, then sleeps in nanosleep)
 * while resident memory stays under the budget and the machine keeps
 * KEEP_FREE_BYTES available.  Returns how many are alive; *why says why it
 * stopped short.
 */
static long make_idle_threads(long want, double rss0, char *why, size_t len)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	long made = 0;
	int base = load(&idle_started);
	why[0] = 0;
	while (made < want) {
		pthread_t t;
		int e = pthread_create(&t, &a, idle_thread, NULL);
		if (e) {
			explain_failure(why, len, e, made);
			break;
		}
		made++;
		if (made % 256 == 0 && !pid_headroom(why, len, made))
			break;
		if (made % 1024 == 0) {
			wait_until(&idle_started, base + (int)made);
			if (rss_bytes() - rss0 > BUDGET_BYTES) {
				snprintf(why, len, "stopped at the 12 GiB budget");
				break;
			}
			double avail = meminfo_bytes("MemAvailable");
			if (avail >= 0 && avail < KEEP_FREE_BYTES) {
				snprintf(why, len, "stopped: the machine had under 3 GiB available");
				break;
			}
		}
	}
	wait_until(&idle_started, base + (int)made);
	pthread_attr_destroy(&a);
	return made;
}

static void mem_per_thread(struct result *r, long want)
{
	char why[300];
#ifndef BENCH_WEFT
	struct kernel_limits k = kernel_limits();
	const char *name;
	long limit = thread_limit(&k, &name);
	if (k.max_maps > 0 && k.max_maps / 2 < limit)
		limit = k.max_maps / 2;
	if (limit > 0 && k.in_use >= 0 && want > limit - k.in_use) {
		nptl_limits(why, sizeof why);
		na(r, "NPTL cannot keep %ld threads here: %s", want, why);
		return;
	}
#endif
	double rss0 = rss_bytes(), ks0 = meminfo_bytes("KernelStack");
	long made = make_idle_threads(want, rss0, why, sizeof why);
	double rss1 = rss_bytes(), ks1 = meminfo_bytes("KernelStack");
	if (made < want) {
		na(r, "only %ld threads: %s", made, why);
		return;
	}
	double per = (rss1 - rss0) / (double)made;
	r->ok = true;
	r->median = r->min = r->max = per;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
#ifndef BENCH_WEFT
	if (ks0 >= 0 && ks1 >= 0)
		snprintf(r->note, sizeof r->note, "plus %.1f KiB/thread of kernel stack (not in RSS)",
			 (ks1 - ks0) / (double)made / 1024);
#else
	(void)ks0;
	(void)ks1;
#endif
}

static void mem_most(struct result *r, long cap)
{
	char why[300];
	double rss0 = rss_bytes();
	long made = make_idle_threads(cap, rss0, why, sizeof why);
	double rss1 = rss_bytes();
	r->ok = true;
	r->median = r->min = r->max = (double)made;
	r->reps = 1;
	r->iters = (uint64_t)made;
	r->sw_per_op = -1;
	if (made >= cap) {
		snprintf(r->note, sizeof r->note, "the cap; %.2f GiB resident", (rss1 - rss0) / GIB);
	} else if (stopped_for_pids) {
		char lim[200];
		nptl_limits(lim, sizeof lim);
		snprintf(r->note, sizeof r->note,
			 "lower bound: %s so that the machine keeps pids for others; "
			 "past it pthread_create fails with EAGAIN: %s; %.2f GiB resident",
			 why, lim, (rss1 - rss0) / GIB);
	} else {
		snprintf(r->note, sizeof r->note, "%s; %.2f GiB resident", why, (rss1 - rss0) / GIB);
	}
}

static bool quick;

static void m_mem10k(struct result *r) { mem_per_thread(r, 10000); }
static void m_mem100k(struct result *r)
{
	if (quick)
		na(r, "skipped with QUICK=1");
	else
		mem_per_thread(r, 100000);
}
static void m_mem_most(struct result *r)
{
	if (quick) {
		na(r, "skipped with QUICK=1");
		return;
	}
	mem_most(r, 1000000);
}

/* ------------------------------------------------------------------ */
/* The preemption tick (Weft): what time slicing costs two busy threads */

static int cmp_double(const void *a, const void *b);

struct busy_work {
	uint64_t n, sink;
};

/* Work in the program's own text, where a tick may preempt at once. */
static void *busy(void *p)
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

static void set_median(struct result *r, double *v)
{
	qsort(v, (size_t)reps, sizeof v[0], cmp_double);
	r->ok = true;
	r->reps = reps;
	r->median = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
	r->min = v[0];
	r->max = v[reps - 1];
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
/* Mutual exclusion on a uniprocessor: Bershad's Tables 1 and 4         */

/*
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
 * bench_ras; main registers them all.  The sequence is the load of the old
 * value and the store of 1, the store last: a tick with the PC on the store
 * sends it back to the load. */
extern const uintptr_t __start_bench_ras[] __attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop_bench_ras[] __attribute__((weak, visibility("hidden")));

int bench_ras_tas(int *word);
__asm__(".text\n"
	".p2align 4\n"
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
	static int64_t tas_loop_##name(uint64_t n)                             \
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
	static void *tas_worker_##name(void *p)                                \
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

static void run_timed_fn(int64_t (*timed)(uint64_t n), struct result *r);

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
/* The metric table                                                    */

enum { F_UNPINNED = 1, F_WEFT_ONLY = 2 };

struct metric {
	const char *key, *group;
	enum unit unit;
	int flags;
	const char *label;
	const char *history;         /* what the papers (and peers) reported */
	const char *needs;           /* sync calls that must be Weft's */
	int64_t (*timed)(uint64_t n);
	void (*oneshot)(struct result *r);
	const char *na_weft, *na_nptl;
};

#define SYNC_MUTEX "pthread_mutex_lock pthread_mutex_unlock"
#define SYNC_COND SYNC_MUTEX " pthread_cond_wait pthread_cond_signal"

static const struct metric metrics[] = {
	{ "once", "Threads", U_NS, 0, "pthread_once, already done", "-", NULL, m_once },
	{ "self", "Threads", U_NS, 0, "pthread_self",
	  "0.79 µs th_self (Small & Seltzer; 486DX2-66)", NULL, m_self },
	{ "yield_idle", "Threads", U_NS, 0, "yield, not busy (no other thread ready)",
	  "2.19 µs (Marovich; HP 9000/835); 4.0 µs (HP 9000/370)", NULL, m_yield_idle },
	{ "yield_busy", "Threads", U_NS, F_UNPINNED, "yield, busy (two threads; per switch)",
	  "22.2 µs (Marovich; HP 835); 37 µs (Mueller; SPARC IPX); 7.8 µs (Small & Seltzer; 486); "
	  "5 µs (Xthreads; iPSC860); peers: Go 1 P 132 ns; GNU Pth 2.1 µs",
	  NULL, m_yield_busy },
	{ "create", "Threads", U_NS, 0, "create, no switch",
	  "12 µs (Mueller; SPARC IPX); SunOS 56 µs (SPARC 1+)", NULL, m_create },
	{ "create_join", "Threads", U_NS, F_UNPINNED, "create + join",
	  "13 µs create+exit (Xthreads; iPSC860); 102.8 µs fork (Small & Seltzer; 486); "
	  "peer: State Threads 230 ns",
	  NULL, m_create_join },

	{ "mutex", "Synchronisation", U_NS, 0, "mutex lock+unlock, no contention",
	  "1 µs (Mueller; SPARC IPX); 12.76 µs (Marovich; HP 835); 4.1 µs (Small & Seltzer; 486)",
	  SYNC_MUTEX, m_mutex },
	{ "mutex_handoff", "Synchronisation", U_NS, F_UNPINNED, "mutex hand-off, long-term contention",
	  "35.7 µs (Marovich; HP 835); 51 µs (Mueller; SPARC IPX); peer: State Threads 27 ns",
	  SYNC_MUTEX, m_handoff },
	{ "cond_signal_none", "Synchronisation", U_NS, 0, "cond signal, no waiter",
	  "1.81 µs (Marovich; HP 835)", "pthread_cond_signal", m_cond_signal_none },
	{ "cond_broadcast_none", "Synchronisation", U_NS, 0, "cond broadcast, no waiter",
	  "2.64 µs (Marovich; HP 835)", "pthread_cond_broadcast", m_cond_broadcast_none },
	{ "cond_untimed_out", "Synchronisation", U_NS, F_UNPINNED,
	  "cond signal to untimed waiter, outside critical section",
	  "40.5 µs (Marovich; HP 835)", SYNC_COND, m_cond_untimed_out },
	{ "cond_untimed_in", "Synchronisation", U_NS, F_UNPINNED,
	  "cond signal to untimed waiter, inside critical section",
	  "94.4 µs (Marovich; HP 835)", SYNC_COND, m_cond_untimed_in },
	{ "cond_timed_out", "Synchronisation", U_NS, F_UNPINNED,
	  "cond signal to timed waiter, outside critical section",
	  "100.7 µs (Marovich; HP 835)", SYNC_COND " pthread_cond_timedwait", m_cond_timed_out },
	{ "cond_timed_in", "Synchronisation", U_NS, F_UNPINNED,
	  "cond signal to timed waiter, inside critical section",
	  "155.5 µs (Marovich; HP 835)", SYNC_COND " pthread_cond_timedwait", m_cond_timed_in },
	{ "sem", "Synchronisation", U_NS, F_UNPINNED, "semaphore synchronisation (V, then P returns in the other)",
	  "55 µs (Mueller; SPARC IPX); LynxOS 75 µs (SPARC IPX); SunOS 158 µs (SPARC 1+)",
	  "sem_wait sem_post", m_sem },

	{ "spinlock", "Bershad's four", U_NS, 0, "spinlock: acquire, count, release (two threads)",
	  "0.58 µs R.A.S.; 4.3 µs kernel emulation (Bershad; DECstation 5000)",
	  "pthread_spin_lock pthread_spin_unlock", m_spinlock },
	{ "mutexlock", "Bershad's four", U_NS, 0, "mutexlock: lock, count, unlock (two threads)",
	  "0.91 µs R.A.S.; 4.6 µs emulation (Bershad; DECstation 5000)", SYNC_MUTEX, m_mutexlock },
	{ "forktest", "Bershad's four", U_NS, F_UNPINNED, "forktest: each thread creates the next and exits",
	  "23.8 µs R.A.S.; 43.7 µs emulation (Bershad; DECstation 5000)", NULL, m_forktest },
	{ "pingpong", "Bershad's four", U_NS, F_UNPINNED, "pingpong: mutex + cond round trip",
	  "115.2 µs R.A.S.; 230.8 µs emulation (Bershad; DECstation 5000); peer: State Threads 48 ns",
	  SYNC_COND, m_pingpong },

	{ "rt_critical", "Kernel and processes", U_NS, 0, "enter+exit the thread runtime's critical section",
	  "0.4 µs (Mueller; SPARC IPX); LynxOS 7.5 µs", NULL, NULL, NULL,
	  "nothing to enter: Weft's text is the critical section (the tick tests the PC); "
	  "leaving is one load and a branch inside every Weft call (see pthread_self)",
	  "no user-level runtime: the kernel is the runtime (see getpid)" },
	{ "getpid", "Kernel and processes", U_NS, 0, "enter+exit the kernel (getpid system call)",
	  "18 µs (Mueller; SPARC IPX); 4.8 µs (Marovich; HP 835); 6.9 µs null syscall (Small & Seltzer; 486)",
	  NULL, m_getpid },
	{ "setjmp", "Kernel and processes", U_NS, 0, "setjmp + longjmp pair",
	  "29 µs (Mueller; SPARC IPX); SunOS 59 µs (SPARC 1+)", NULL, m_setjmp },
	{ "process_switch", "Kernel and processes", U_NS, 0, "process context switch (Marovich App. C)",
	  "135.7 µs (Marovich; HP 835); 123 µs (Mueller; SPARC IPX); 105.7 µs (Small & Seltzer; 486); "
	  "37 µs (Xthreads; RS6000)",
	  NULL, m_process_switch },
	{ "signal_tick", "Kernel and processes", U_NS, 0,
	  "timer signal to an empty handler (the kernel's share of a tick)",
	  "154 µs UNIX signal handler (Mueller; SPARC IPX); 126.7 µs (Small & Seltzer; 486)", NULL, NULL,
	  m_signal_tick },
	{ "preempt_tick", "Kernel and processes", U_NS, 0,
	  "preemption tick: timer signal, handler, preemptive switch (two busy threads)",
	  "2.85 µs scheduler overhead, handler only (Marovich; HP 835)", NULL, NULL,
#ifdef BENCH_WEFT
	  m_preempt_tick,
#else
	  NULL,
#endif
	  NULL, "the kernel's tick: not visible from user space" },
	{ "preempt_latency", "Kernel and processes", U_NS, 0,
	  "preemption latency: timer expiry to a higher-priority sleeper running while a thread spins",
	  "-", "clock_nanosleep pthread_join", NULL, m_preempt_latency },

	{ "tas_dr", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(a) TAS in Weft's deferral region: pthread_spin_trylock + unlock (NPTL: glibc's)", "-",
	  "pthread_spin_trylock pthread_spin_unlock", NULL, m_tas_dr },
	{ "tas_ras", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(b) restartable sequence, out of line (a call: explicit registration)",
	  "0.64 µs (Bershad T1; DS5000); 0.6 µs i486, 0.3 µs 88000, 2.1 µs HP 835 (T4)", NULL, NULL, m_tas_ras },
	{ "tas_rasi", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(b) restartable sequence, inlined (user-level detection)",
	  "0.51 µs (Bershad T1; DS5000); i486 0.6 − 0.3 µs linkage (T4)", NULL, NULL, m_tas_rasi },
	{ "tas_cas", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(c) lock cmpxchg + store", "0.7 µs i486; 1.0 µs i386; 0.9 µs 88000; 5.5 µs HP 835 (Bershad T4, interlocked)",
	  NULL, NULL, m_tas_cas },
	{ "tas_emu", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(d) kernel emulation: one FUTEX_TRYLOCK_PI trap + store", "4.15 µs (Bershad T1; DS5000)", NULL, NULL,
	  m_tas_emu },
	{ "tas_lf", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(e) Lamport's fast mutex, 2 × mfence", "1.51 µs software reservation (a) (Bershad T1; DS5000)", NULL,
	  NULL, m_tas_lf },
	{ "tas_lu", "Mutual exclusion, one thread (Bershad Tables 1 and 4)", U_NS, 0,
	  "(e) Lamport's fast mutex, no fence (one CPU only)", "-", NULL, NULL, m_tas_lu },

	{ "tas_dr_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(a) deferral region", "-", "pthread_spin_trylock pthread_spin_unlock", NULL, m_tas_dr_busy },
	{ "tas_ras_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(b) restartable sequence, out of line", "0.58 µs spinlock, R.A.S. (Bershad T2; DS5000)", NULL, NULL,
	  m_tas_ras_busy },
	{ "tas_rasi_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(b) restartable sequence, inlined", "-", NULL, NULL, m_tas_rasi_busy },
	{ "tas_cas_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(c) lock cmpxchg", "-", NULL, NULL, m_tas_cas_busy },
	{ "tas_emu_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(d) kernel emulation", "4.3 µs spinlock, emulation (Bershad T2; DS5000)", NULL, NULL, m_tas_emu_busy },
	{ "tas_lf_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(e) Lamport, 2 × mfence", "-", NULL, NULL, m_tas_lf_busy },
	{ "tas_lu_busy", "Mutual exclusion in a preempted program (4 threads; 100 µs slice; CPU time)", U_NS, 0,
	  "(e) Lamport, no fence", "-", NULL, NULL, m_tas_lu_busy },

	{ "mem_10k", "Memory", U_BYTES, 0, "resident bytes per idle thread, 10,000 alive", "-", NULL,
	  NULL, m_mem10k },
	{ "mem_100k", "Memory", U_BYTES, 0, "resident bytes per idle thread, 100,000 alive", "-", NULL,
	  NULL, m_mem100k },
	{ "mem_most", "Memory", U_COUNT, 0, "most threads alive at once (12 GiB budget; Weft capped at 1,000,000)",
	  "16 descriptors by default (Marovich)", NULL, NULL, m_mem_most },

	{ "arch_switch", "Floor", U_NS, F_WEFT_ONLY, "bare arch context switch (switch.S in a loop)", "-",
	  NULL,
#ifdef BENCH_WEFT
	  m_arch_switch,
#else
	  NULL,
#endif
	  NULL, NULL, "Weft's own switch: measured in the Weft binary" },
	{ "reg_switch", "Floor", U_NS, 0, "register-only switch (6 callee-saved registers; no MXCSR/x87 CW)",
	  "-", NULL,
#if defined(__x86_64__)
	  m_reg_switch, NULL, NULL, NULL },
#else
	  NULL, NULL, "x86-64 only", "x86-64 only" },
#endif
	{ "call", "Floor", U_NS, 0, "function call", "0.3 µs nullfunc(arg) (Small & Seltzer; 486)", NULL, m_call },
	{ "cmpxchg", "Floor", U_NS, 0, "lock cmpxchg + store pair",
	  "0.7 µs interlocked test-and-set (Bershad; i486)", NULL, m_cmpxchg },
	{ "loop", "Floor", U_NS, 0, "empty loop iteration (included in every row)", "-", NULL, m_loop },
};

#define NMETRICS (sizeof metrics / sizeof metrics[0])

/* ------------------------------------------------------------------ */
/* Harness                                                             */


static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void run_timed_fn(int64_t (*timed)(uint64_t n), struct result *r)
{
	/* Calibrate: grow n until a run lasts a tenth of the target. */
	uint64_t n = 1;
	int64_t t = timed(n);
	while (t < (int64_t)(target_ns / 10) && n < (UINT64_C(1) << 40)) {
		n *= t < (int64_t)(target_ns / 1000) ? 10 : 2;
		t = timed(n);
	}
	if (t <= 0)
		t = 1;
	double scale = target_ns * 1.1 / (double)t;
	if (scale > 1)
		n = (uint64_t)((double)n * scale);
	timed(n / 4 + 1);   /* warm-up */

	double v[32];
	uint64_t sw0 = 0, sw1 = 0;
	for (int i = 0; i < reps; i++) {
		if (i == reps - 1)
			sw0 = switches();
		int64_t dt = timed(n);
		if (i == reps - 1)
			sw1 = switches();
		v[i] = (double)dt / (double)n;
	}
	qsort(v, (size_t)reps, sizeof v[0], cmp_double);
	r->ok = true;
	r->reps = reps;
	r->iters = n;
	r->median = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
	r->min = v[0];
	r->max = v[reps - 1];
	r->sw_per_op = (double)(sw1 - sw0) / (double)n;
}

static void run_metric(const struct metric *m)
{
	struct result r;
	memset(&r, 0, sizeof r);
	r.sw_per_op = -1;
#ifdef BENCH_WEFT
	const char *why_not = m->na_weft;
#else
	const char *why_not = m->na_nptl;
#endif
	const char *missing;
	if (why_not)
		na(&r, "%s", why_not);
	else if (m->needs && (missing = missing_sync(m->needs)))
		na(&r, "sync not yet in Weft (%s is glibc's)", missing);
	else if (m->oneshot)
		m->oneshot(&r);
	else if (m->timed)
		run_timed_fn(m->timed, &r);
	else
		na(&r, "not measured");
	fflush(stdout);
	print_result(m->key, &r);
}

static void list_metrics(void)
{
	for (size_t i = 0; i < NMETRICS; i++) {
		const struct metric *m = &metrics[i];
		printf("%s|%s|%s|%s%s|%s|%s\n", m->key, m->group, unit_name[m->unit],
		       m->flags & F_UNPINNED ? "u" : "", m->flags & F_WEFT_ONLY ? "w" : "", m->label,
		       m->history);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-%s [--quick] [--tag NAME] --list | KEY...\n", BACKEND);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *q = getenv("QUICK");
	quick = q && *q && strcmp(q, "0") != 0;
	int first = 1;
	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--list")) {
			list_metrics();
			return 0;
		} else if (!strcmp(argv[first], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[first], "--tag") && first + 1 < argc) {
			backend_tag = argv[++first];
		} else {
			usage();
		}
	}
	if (first >= argc)
		usage();
	if (quick) {
		target_ns = 0.01e9;
		reps = 3;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = first; i < argc; i++) {
		size_t k = 0;
		while (k < NMETRICS && strcmp(metrics[k].key, argv[i]))
			k++;
		if (k == NMETRICS) {
			fprintf(stderr, "bench-%s: no metric '%s' (see --list)\n", BACKEND, argv[i]);
			return 2;
		}
		run_metric(&metrics[k]);
	}
	/* Idle threads of the memory rows never end: leave without joining. */
	fflush(stdout);
	_exit(0);
}
