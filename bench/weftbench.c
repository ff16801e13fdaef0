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
 * handler; the extra time per signal.  The same in both binaries (Weft's own
 * tick is off while a single UT exists), and what Weft's tick builds on.
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
	int64_t t0 = now_ns();
	busy(&w);
	return now_ns() - t0;
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
	snprintf(r->note, sizeof r->note, "100 us period; %" PRIu64 " signals per repetition", r->iters);
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
	int64_t t0 = now_ns();
	pthread_t ta = spawn(busy, &a), tb = spawn(busy, &b);
	join(ta);
	join(tb);
	return now_ns() - t0;
}

/*
 * Two busy UTs share the processor, once with time slicing off and once
 * with a TICK_SLICE_NS slice; the extra time divided by the ticks taken is
 * the cost of one tick: the timer signal, the handler's PC test, the fake
 * call, the full register and xsave save, the switch, and the way back.
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
	snprintf(r->note, sizeof r->note, "%u us slice; %" PRIu64 " ticks per repetition; %.0f%% preempted",
		 TICK_SLICE_NS / 1000, ticks / (uint64_t)reps, 100.0 * (double)preempted / (double)ticks);
}
#endif

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

static void run_timed(const struct metric *m, struct result *r)
{
	/* Calibrate: grow n until a run lasts a tenth of the target. */
	uint64_t n = 1;
	int64_t t = m->timed(n);
	while (t < (int64_t)(target_ns / 10) && n < (UINT64_C(1) << 40)) {
		n *= t < (int64_t)(target_ns / 1000) ? 10 : 2;
		t = m->timed(n);
	}
	if (t <= 0)
		t = 1;
	double scale = target_ns * 1.1 / (double)t;
	if (scale > 1)
		n = (uint64_t)((double)n * scale);
	m->timed(n / 4 + 1);   /* warm-up */

	double v[32];
	uint64_t sw0 = 0, sw1 = 0;
	for (int i = 0; i < reps; i++) {
		if (i == reps - 1)
			sw0 = switches();
		int64_t dt = m->timed(n);
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
		run_timed(m, &r);
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
