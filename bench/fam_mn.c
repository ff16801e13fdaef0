/*
 * fam_mn.c — the "M:N" rows: what several virtual processors (WEFT_VPS=N,
 * each a kernel thread) buy and cost on a machine of two CPUs or more,
 * beside NPTL free to use every CPU.
 *
 *   mn_cpu_speedup       8 threads each do a fixed piece of arithmetic
 *                        (about 50 ms on one core here), joined: wall time
 *   mn_mutex_handoff     two threads alternate through a mutex + one cond
 *                        and a turn variable: per round trip
 *   mn_cond_pingpong     the same with a pair of conds: per round trip
 *   mn_sem_pingpong      two threads, a pair of semaphores: per round trip
 *   mn_lock_uncontended  pthread_mutex_lock + unlock in one thread (the
 *                        Synchronisation row's loop)
 *   mn_cmpxchg           the Floor row's lock cmpxchg + store pair
 *   mn_pread             two threads each read a 1 MiB file from the page
 *                        cache with pread, PREAD_READS times: wall time
 *   mn_socket_pingpong   four pairs of threads pass a byte back and forth
 *                        over Unix stream socket pairs: per round trip (the
 *                        four pairs' throughput)
 *   mn_line_transfer     a cache line passed between two CPUs by two
 *                        spinning kernel threads (NPTL only): per pass
 *   skynet               a tree of 1,111,111 threads: each of the 111,111
 *                        inner ones creates ten children and sums what they
 *                        return; the 1,000,000 leaves return their number
 *                        (the sum 0..999,999 = 499,999,500,000 is checked)
 *   skynet_100k          the same five levels deep: 111,111 threads
 *   skynet_go            the classic Go skynet (bench/skynet/skynet.go,
 *                        goroutines and channels, GOMAXPROCS=2), run by
 *                        bench-nptl when go was there at build time
 *
 * How they run (flag F_MN, harness.h): bench/run.sh runs them unpinned, and
 * bench-weft measures each in one child process of itself per VP count,
 * WEFT_VPS=1 then 2 (BENCH_MN_VPS chooses), since Weft reads the count once
 * at start-up; the child's note says when the VPs it ran on were not the
 * ones asked for (a libweft without M:N falls back to one).  The timed rows
 * use the harness's calibration; the others take a warm-up run and the
 * median of `reps` runs (5; 3 with QUICK, which also shrinks the work).
 *
 * Invariant: the skynet rows never take the machine's pids.  Every NPTL
 * thread takes one of kernel.pid_max (32,768 here), and a node creates all
 * ten children before it joins any, so the live threads are not bounded by
 * the depth: the tree grows breadth-first as fast as the kernel schedules
 * it.  Under NPTL each creation is counted (one atomic add, and one
 * subtract after the join) and the run stops — n/a, with the count — when
 * the live threads would pass a cap that leaves 4,096 pids to the rest of
 * the machine (at most 24,576).  Weft counts the same way (the note gives
 * the most alive at once), with no cap below the whole tree: a UT takes no
 * kernel resource, and the million-leaf tree alive at once is some 5 GiB
 * resident here.  The skynet rows make 16 KiB Weft's default stack size
 * (WEFT_STACK_SIZE=16K, their env): Weft's stack pool serves the default
 * size only, and a stack of any other size is a mapping of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "M:N"

/* ------------------------------------------------------------------ */
/* CPU-bound: 8 threads, a fixed amount of arithmetic each              */

#define CPU_THREADS 8
/* about 50 ms on one core of the reference machine (2 vCPU AMD EPYC) */
#define CPU_ITERS UINT64_C(28000000)

struct cpu_slot {
	uint64_t iters, seed, out;
} BENCH_ALIGNED;

static struct cpu_slot cpu_slots[CPU_THREADS];

/* A dependent chain of multiply, add, shift and xor: nothing the compiler
 * can fold, vectorise or remove (the result is kept). */
static BENCH_ALIGNED uint64_t cpu_work(uint64_t iters, uint64_t x)
{
	for (uint64_t i = 0; i < iters; i++) {
		x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
		x ^= x >> 29;
	}
	return x;
}

static BENCH_ALIGNED void *cpu_worker(void *p)
{
	struct cpu_slot *s = p;
	s->out = cpu_work(s->iters, s->seed);
	return NULL;
}

/* The whole program once: create the 8, join them; wall time. */
static BENCH_ALIGNED int64_t cpu_program(uint64_t iters)
{
	pthread_t t[CPU_THREADS];
	int64_t t0 = now_ns();
	for (int i = 0; i < CPU_THREADS; i++) {
		cpu_slots[i].iters = iters;
		cpu_slots[i].seed = (uint64_t)i + 1;
		t[i] = spawn(cpu_worker, &cpu_slots[i]);
	}
	for (int i = 0; i < CPU_THREADS; i++)
		join(t[i]);
	int64_t dt = now_ns() - t0;
	for (int i = 0; i < CPU_THREADS; i++)
		KEEP(cpu_slots[i].out);
	return dt;
}

/* This process's CPU time (user + system, every kernel thread), from the
 * kernel: no library's clock, and no accounting turned on by reading it. */
static double self_cpu_s(void)
{
	struct rusage ru;
	if (syscall(SYS_getrusage, RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The whole machine's busy CPU time so far (/proc/stat, every CPU), or -1. */
static double machine_busy_s(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		       &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return -1;
	/* all but idle (v[3]) and iowait (v[4]) */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static void m_cpu_speedup(struct result *r)
{
	uint64_t iters = quick ? CPU_ITERS / 10 : CPU_ITERS;
	/* one thread's share alone, in the calling thread: the 1-CPU ideal is 8 times it */
	int64_t t0 = now_ns();
	uint64_t x = cpu_work(iters, 99);
	int64_t alone = now_ns() - t0;
	KEEP(x);
	double v[32], wall = 0;
	cpu_program(iters);   /* warm-up */
	double cpu0 = self_cpu_s(), busy0 = machine_busy_s();
	for (int i = 0; i < reps; i++) {
		v[i] = (double)cpu_program(iters);
		wall += v[i] / 1e9;
	}
	double cpu = self_cpu_s() - cpu0, busy = machine_busy_s() - busy0;
	set_median(r, v);
	r->iters = 1;
	/* Cores this process used while the 8 ran, and what the rest of the
	 * machine used meanwhile: a speed-up below the core count with others
	 * at ~0 is the runtime's; with others near a CPU, the machine's. */
	char others[64] = "";
	if (busy0 >= 0 && busy >= 0)
		snprintf(others, sizeof others, "; other processes %.2f CPUs", busy > cpu ? (busy - cpu) / wall : 0);
	snprintf(r->note, sizeof r->note,
		 "%d threads x %llu iterations; one share alone took %.1f ms (so one CPU needs >= %.0f ms); "
		 "while they ran: this process %.2f CPUs%s",
		 CPU_THREADS, (unsigned long long)iters, alone / 1e6, CPU_THREADS * alone / 1e6, cpu / wall, others);
}

/* ------------------------------------------------------------------ */
/* Two threads strictly alternating: per round trip                    */

struct turn {
	pthread_mutex_t m;
	pthread_cond_t c[2];   /* c[0]: main waits; c[1]: partner waits (the same cond if one) */
	sem_t s[2];
	uint64_t n;
	int turn, ready;
};

static void turn_init(struct turn *t, uint64_t n)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_init(&t->m, NULL);
	pthread_cond_init(&t->c[0], NULL);
	pthread_cond_init(&t->c[1], NULL);
	sem_init(&t->s[0], 0, 0);
	sem_init(&t->s[1], 0, 0);
	t->n = n;
}

static void turn_destroy(struct turn *t)
{
	pthread_mutex_destroy(&t->m);
	pthread_cond_destroy(&t->c[0]);
	pthread_cond_destroy(&t->c[1]);
	sem_destroy(&t->s[0]);
	sem_destroy(&t->s[1]);
}

/* Partner of the cond rows: wait on *wait for turn 1, give turn 0 back
 * and signal *wake.  One cond: wait == wake. */
static BENCH_ALIGNED void turn_partner_loop(struct turn *t, pthread_cond_t *wait, pthread_cond_t *wake)
{
	pthread_mutex_lock(&t->m);
	store(&t->ready, 1);
	for (uint64_t i = 0; i < t->n; i++) {
		while (t->turn != 1)
			pthread_cond_wait(wait, &t->m);
		t->turn = 0;
		pthread_cond_signal(wake);
	}
	pthread_mutex_unlock(&t->m);
}

static BENCH_ALIGNED void *turn_partner_one(void *p)
{
	struct turn *t = p;
	turn_partner_loop(t, &t->c[0], &t->c[0]);
	return NULL;
}

static BENCH_ALIGNED void *turn_partner_two(void *p)
{
	struct turn *t = p;
	turn_partner_loop(t, &t->c[1], &t->c[0]);
	return NULL;
}

static BENCH_ALIGNED int64_t turn_rounds(uint64_t n, int nconds)
{
	struct turn *t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
	turn_init(t, n);
	pthread_cond_t *wait = &t->c[0], *wake = &t->c[nconds == 1 ? 0 : 1];
	pthread_t th = spawn(nconds == 1 ? turn_partner_one : turn_partner_two, t);
	wait_until(&t->ready, 1);
	pthread_mutex_lock(&t->m);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		t->turn = 1;
		pthread_cond_signal(wake);
		while (t->turn != 0)
			pthread_cond_wait(wait, &t->m);
	}
	int64_t dt = now_ns() - t0;
	pthread_mutex_unlock(&t->m);
	join(th);
	turn_destroy(t);
	free(t);
	return dt;
}

static int64_t m_mutex_handoff(uint64_t n) { return turn_rounds(n, 1); }
static int64_t m_cond_pingpong(uint64_t n) { return turn_rounds(n, 2); }

static BENCH_ALIGNED void *sem_partner(void *p)
{
	struct turn *t = p;
	store(&t->ready, 1);
	for (uint64_t i = 0; i < t->n; i++) {
		sem_wait(&t->s[1]);
		sem_post(&t->s[0]);
	}
	return NULL;
}

static BENCH_ALIGNED int64_t m_sem_pingpong(uint64_t n)
{
	struct turn *t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
	turn_init(t, n);
	pthread_t th = spawn(sem_partner, t);
	wait_until(&t->ready, 1);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		sem_post(&t->s[1]);
		sem_wait(&t->s[0]);
	}
	int64_t dt = now_ns() - t0;
	join(th);
	turn_destroy(t);
	free(t);
	return dt;
}

/* ------------------------------------------------------------------ */
/* A cache line between two CPUs: the model's c                        */

#ifndef BENCH_WEFT
/* Two kernel threads, each bound to its own CPU, pass a counter back and
 * forth in one cache line, spinning: per one-way pass, which is one
 * transfer of the line (the reader's miss) plus a store.  NPTL only: it
 * needs two kernel threads that spin, which a VP count of 1 cannot give. */
struct line {
	int v BENCH_ALIGNED;
	int ready, cpu;
	uint64_t n;
};

static struct line line_word;

static int pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static BENCH_ALIGNED void *line_partner(void *p)
{
	struct line *l = p;
	if (pin_self(l->cpu))
		die("pthread_setaffinity_np", EINVAL);
	store(&l->ready, 1);
	for (uint64_t i = 0; i < l->n; i++) {
		while (load(&l->v) != (int)(2 * i + 1))
			__builtin_ia32_pause();
		store(&l->v, (int)(2 * i + 2));
	}
	return NULL;
}

static int line_cpu[2];

static BENCH_ALIGNED int64_t m_line(uint64_t n)
{
	struct line *l = &line_word;
	uint64_t rounds = n / 2 + 1;
	l->v = 0;
	l->ready = 0;
	l->n = rounds;
	l->cpu = line_cpu[1];
	if (pin_self(line_cpu[0]))
		die("pthread_setaffinity_np", EINVAL);
	pthread_t t = spawn(line_partner, l);
	while (!load(&l->ready))
		__builtin_ia32_pause();
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++) {
		store(&l->v, (int)(2 * i + 1));
		while (load(&l->v) != (int)(2 * i + 2))
			__builtin_ia32_pause();
	}
	int64_t dt = now_ns() - t0;
	join(t);
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}

static void m_line_transfer(struct result *r)
{
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s) || CPU_COUNT(&s) < 2) {
		na(r, "needs two CPUs (run unpinned)");
		return;
	}
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &s))
			line_cpu[k++] = c;
	run_timed_fn(m_line, r);
	snprintf(r->note, sizeof r->note, "CPUs %d and %d", line_cpu[0], line_cpu[1]);
	cpu_set_t all = s;
	sched_setaffinity(0, sizeof all, &all);
}
#endif

/* ------------------------------------------------------------------ */
/* skynet                                                              */

struct sk_node {
	uint64_t num, size;
};

static pthread_attr_t sk_attr;
static int sk_cap;                /* live threads a run may have */
static int sk_alive BENCH_ALIGNED, sk_peak, sk_stopped, sk_error;

static BENCH_ALIGNED void *sk_run(void *p)
{
	const struct sk_node *nd = p;
	if (nd->size == 1)
		return (void *)(uintptr_t)nd->num;
	struct sk_node c[10];
	pthread_t t[10];
	uint64_t sum = 0, size = nd->size / 10;
	int k = 0;
	for (int i = 0; i < 10; i++) {
		{
			int a = __atomic_add_fetch(&sk_alive, 1, __ATOMIC_RELAXED);
			if (a > sk_cap || __atomic_load_n(&sk_stopped, __ATOMIC_RELAXED)) {
				__atomic_sub_fetch(&sk_alive, 1, __ATOMIC_RELAXED);
				__atomic_store_n(&sk_stopped, 1, __ATOMIC_RELAXED);
				break;
			}
			int pk = __atomic_load_n(&sk_peak, __ATOMIC_RELAXED);
			while (a > pk && !__atomic_compare_exchange_n(&sk_peak, &pk, a, true, __ATOMIC_RELAXED,
								      __ATOMIC_RELAXED))
				;
		}
		c[i].num = nd->num + (uint64_t)i * size;
		c[i].size = size;
		int e = pthread_create(&t[i], &sk_attr, sk_run, &c[i]);
		if (e) {
			__atomic_sub_fetch(&sk_alive, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&sk_error, e, __ATOMIC_RELAXED);
			__atomic_store_n(&sk_stopped, 1, __ATOMIC_RELAXED);
			break;
		}
		k++;
	}
	for (int i = 0; i < k; i++) {
		void *v;
		int e = pthread_join(t[i], &v);
		if (e)
			die("pthread_join", e);
		sum += (uintptr_t)v;
		__atomic_sub_fetch(&sk_alive, 1, __ATOMIC_RELAXED);
	}
	return (void *)(uintptr_t)sum;
}

#ifndef BENCH_WEFT
/* pids this machine can give: kernel.pid_max less the tasks alive now */
static int pids_free(void)
{
	long max = 32768, tasks = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 32768;
		fclose(f);
	}
	f = fopen("/proc/loadavg", "re");
	if (f) {
		double l1, l5, l15;
		long run;
		if (fscanf(f, "%lf %lf %lf %ld/%ld", &l1, &l5, &l15, &run, &tasks) != 5)
			tasks = 0;
		fclose(f);
	}
	return (int)(max - tasks);
}
#endif

/* One run of the tree; returns its wall time, or -1 (n/a in r) if it stopped. */
static int64_t sk_tree(uint64_t leaves, int cap, struct result *r)
{
	sk_cap = cap;
	sk_alive = sk_peak = sk_stopped = sk_error = 0;
	struct sk_node root = { 0, leaves };
	int64_t t0 = now_ns();
	uint64_t sum = (uintptr_t)sk_run(&root);
	int64_t dt = now_ns() - t0;
	if (sk_error) {
		na(r, "pthread_create failed (%s) with %d threads alive", strerror(sk_error), sk_alive + 1);
		return -1;
	}
	if (sk_stopped) {
		na(r, "stopped at %d threads alive (the cap that keeps pids for the rest of the machine): "
		      "a node creates its ten children before it joins any%s",
		   cap, leaves > 100000 ? "; see skynet_100k" : "");
		return -1;
	}
	if (sum != leaves * (leaves - 1) / 2) {
		na(r, "wrong sum %llu (want %llu)", (unsigned long long)sum,
		   (unsigned long long)(leaves * (leaves - 1) / 2));
		return -1;
	}
	return dt;
}

static void skynet(struct result *r, uint64_t leaves)
{
	if (quick && leaves > 100000) {
		na(r, "QUICK: skipped (1111111 threads; a run takes seconds)");
		return;
	}
	int e = pthread_attr_init(&sk_attr);
	if (!e)
		e = pthread_attr_setstacksize(&sk_attr, 16384);
	if (e) {
		na(r, "pthread_attr_setstacksize(16 KiB): %s", strerror(e));
		return;
	}
#ifdef BENCH_WEFT
	int cap = 1200000;   /* the whole tree: no kernel resource per UT */
#else
	int cap = pids_free() - 4096;
	if (cap > 24576)
		cap = 24576;
	if (cap < 1000) {
		na(r, "only %d pids free on this machine", cap + 4096);
		return;
	}
#endif
	uint64_t threads = 0;
	for (uint64_t l = leaves; l >= 1; l /= 10)
		threads += leaves / l;
	double v[32];
	int peak = 0;
	/* a warm-up run, except for the million (seconds a run; every run maps its stacks afresh) */
	for (int i = leaves > 100000 ? 0 : -1; i < reps; i++) {
		int64_t dt = sk_tree(leaves, cap, r);
		if (dt < 0)
			return;
		if (i >= 0)
			v[i] = (double)dt;
		if (sk_peak > peak)
			peak = sk_peak;
	}
	set_median(r, v);
	r->iters = 1;
	const char *stack = getenv("WEFT_STACK_SIZE");
	snprintf(r->note, sizeof r->note,
		 "%llu threads (16 KiB stacks%s%s); sum %llu checked; at most %d alive at once",
		 (unsigned long long)threads, stack ? "; WEFT_STACK_SIZE=" : "", stack ? stack : "",
		 (unsigned long long)(leaves * (leaves - 1) / 2), peak);
	pthread_attr_destroy(&sk_attr);
}

static void m_skynet(struct result *r) { skynet(r, 1000000); }
static void m_skynet_100k(struct result *r) { skynet(r, 100000); }

/* ------------------------------------------------------------------ */
/* skynet in Go, for reference                                         */

#ifndef BENCH_SKYNET_GO_PATH
#define BENCH_SKYNET_GO_PATH ""
#endif

static void m_skynet_go(struct result *r)
{
	const char *path = getenv("BENCH_SKYNET_GO");
	if (!path || !*path)
		path = BENCH_SKYNET_GO_PATH;
	if (!*path || access(path, X_OK) != 0) {
		na(r, "no Go: go was not found when the benchmark was built (apt-get install golang-go; "
		      "then cmake again)");
		return;
	}
	char runs[16];
	snprintf(runs, sizeof runs, "%d", reps + 1);
	char *argv[] = { (char *)path, (char *)"-runs", runs, (char *)"-leaves", (char *)"1000000", NULL };
	char out[4096];
	int status = run_capture(argv, "GOMAXPROCS=2", out, sizeof out);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		na(r, "%s failed (status %d)", path, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return;
	}
	/* one run's nanoseconds a line; the first is the warm-up */
	double v[33];
	int n = 0;
	char version[64] = "";
	for (char *p = out, *nl; *p && n <= reps; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = 0;
		if (!strncmp(p, "go", 2))
			snprintf(version, sizeof version, "%.*s", (int)sizeof version - 1, p);
		else
			v[n++] = strtod(p, NULL);
	}
	if (n != reps + 1) {
		na(r, "%s printed %d times, not %d", path, n, reps + 1);
		return;
	}
	set_median(r, v + 1);
	r->iters = 1;
	snprintf(r->note, sizeof r->note,
		 "%s; GOMAXPROCS=2; 1111111 goroutines; channels; sum checked by the program", version);
}

/* ------------------------------------------------------------------ */
/* I/O on two VPs: reads from the page cache, bytes over sockets       */

#define PREAD_SIZE (1 << 20)
#define PREAD_THREADS 2

static int pread_fd = -1;
static int pread_reads;

static BENCH_ALIGNED void *pread_worker(void *p)
{
	char *buf = p;
	for (int i = 0; i < pread_reads; i++)
		if (pread(pread_fd, buf, PREAD_SIZE, 0) != PREAD_SIZE)
			abort();
	return NULL;
}

/* Each read is a memcpy of 1 MiB in the kernel (~100 us): the row shows
 * whether two VPs overlap them, as two kernel threads do. */
static void m_pread(struct result *r)
{
	char path[] = "/tmp/weft-bench-pread-XXXXXX";
	pread_fd = mkstemp(path);
	if (pread_fd < 0) {
		na(r, "mkstemp: %s", strerror(errno));
		return;
	}
	unlink(path);
	char *bufs[PREAD_THREADS];
	for (int i = 0; i < PREAD_THREADS; i++) {
		bufs[i] = malloc(PREAD_SIZE);
		if (!bufs[i])
			abort();
		memset(bufs[i], i + 1, PREAD_SIZE);
	}
	if (pwrite(pread_fd, bufs[0], PREAD_SIZE, 0) != PREAD_SIZE) {
		na(r, "pwrite: %s", strerror(errno));
		close(pread_fd);
		return;
	}
	pread_reads = quick ? 200 : 1000;
	double v[32];
	for (int k = -1; k < reps; k++) {     /* k = -1: warm-up */
		pthread_t t[PREAD_THREADS];
		int64_t t0 = now_ns();
		for (int i = 0; i < PREAD_THREADS; i++)
			t[i] = spawn(pread_worker, bufs[i]);
		for (int i = 0; i < PREAD_THREADS; i++)
			join(t[i]);
		if (k >= 0)
			v[k] = (double)(now_ns() - t0);
	}
	set_median(r, v);
	r->iters = 1;
	snprintf(r->note, sizeof r->note, "%d threads x %d preads of 1 MiB from the page cache", PREAD_THREADS,
		 pread_reads);
	for (int i = 0; i < PREAD_THREADS; i++)
		free(bufs[i]);
	close(pread_fd);
}

#define SOCK_PAIRS 4

static int sock_rounds;

static BENCH_ALIGNED void *sock_ping(void *p)
{
	int fd = (int)(intptr_t)p;
	char c = 1;
	for (int i = 0; i < sock_rounds; i++)
		if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
			abort();
	return NULL;
}

static BENCH_ALIGNED void *sock_pong(void *p)
{
	int fd = (int)(intptr_t)p;
	char c;
	for (int i = 0; i < sock_rounds; i++)
		if (read(fd, &c, 1) != 1 || write(fd, &c, 1) != 1)
			abort();
	return NULL;
}

static void m_socket_pingpong(struct result *r)
{
	int s[SOCK_PAIRS][2];
	for (int i = 0; i < SOCK_PAIRS; i++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, s[i])) {
			na(r, "socketpair: %s", strerror(errno));
			return;
		}
	sock_rounds = quick ? 2000 : 20000;
	double v[32];
	for (int k = -1; k < reps; k++) {     /* k = -1: warm-up */
		pthread_t t[2 * SOCK_PAIRS];
		int64_t t0 = now_ns();
		for (int i = 0; i < SOCK_PAIRS; i++) {
			t[2 * i] = spawn(sock_ping, (void *)(intptr_t)s[i][0]);
			t[2 * i + 1] = spawn(sock_pong, (void *)(intptr_t)s[i][1]);
		}
		for (int i = 0; i < 2 * SOCK_PAIRS; i++)
			join(t[i]);
		if (k >= 0)
			v[k] = (double)(now_ns() - t0) / sock_rounds;
	}
	set_median(r, v);
	r->iters = 1;
	snprintf(r->note, sizeof r->note, "%d pairs x %d round trips of one byte; per round trip", SOCK_PAIRS,
		 sock_rounds);
	for (int i = 0; i < SOCK_PAIRS; i++) {
		close(s[i][0]);
		close(s[i][1]);
	}
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "mn_cpu_speedup", GROUP, U_NS, F_MN,
	  "CPU-bound: 8 threads x ~50 ms of arithmetic, joined (wall time)", "-", NULL, NULL,
	  m_cpu_speedup },
	{ "mn_mutex_handoff", GROUP, U_NS, F_MN,
	  "two threads alternate through a mutex + cond turn variable (per round trip)", "-", SYNC_COND,
	  m_mutex_handoff },
	{ "mn_cond_pingpong", GROUP, U_NS, F_MN, "the same with a pair of conds (per round trip)", "-",
	  SYNC_COND, m_cond_pingpong },
	{ "mn_sem_pingpong", GROUP, U_NS, F_MN, "two threads, a pair of semaphores (per round trip)", "-",
	  "sem_wait sem_post", m_sem_pingpong },
	{ "mn_lock_uncontended", GROUP, U_NS, F_MN, "mutex lock+unlock, no contention", "-", SYNC_MUTEX,
	  bench_mutex },
	{ "mn_cmpxchg", GROUP, U_NS, F_MN, "lock cmpxchg + store pair (the Floor row)", "-", NULL,
	  bench_cmpxchg },
	{ "mn_pread", GROUP, U_NS, F_MN,
	  "two threads each read a 1 MiB file from the page cache with pread (wall time)", "-", "pread", NULL,
	  m_pread },
	{ "mn_socket_pingpong", GROUP, U_NS, F_MN,
	  "four thread pairs pass a byte over Unix socket pairs (per round trip)", "-", "read write", NULL,
	  m_socket_pingpong },
	{ "mn_line_transfer", GROUP, U_NS, F_MN,
	  "a cache line passed between two CPUs (per one-way pass; NPTL only)", "-", NULL, NULL,
#ifdef BENCH_WEFT
	  NULL, "two kernel threads that spin, one per CPU: bench-nptl measures it" },
#else
	  m_line_transfer },
#endif
	{ "skynet", GROUP, U_NS, F_MN,
	  "skynet: 1,111,111 threads, each inner one creates 10 and sums them (wall time)",
	  "-", "pthread_create pthread_join pthread_attr_setstacksize", NULL, m_skynet, NULL, NULL,
	  "WEFT_STACK_SIZE=16K" },
	{ "skynet_100k", GROUP, U_NS, F_MN, "skynet, 5 levels: 111,111 threads (wall time)", "-",
	  "pthread_create pthread_join pthread_attr_setstacksize", NULL, m_skynet_100k, NULL, NULL,
	  "WEFT_STACK_SIZE=16K" },
	{ "skynet_go", GROUP, U_NS, F_MN,
	  "skynet in Go: goroutines + channels, GOMAXPROCS=2 (in the NPTL column)", "-", NULL, NULL,
	  m_skynet_go, "a Go program: bench-nptl runs it, in the NPTL column" },
};

BENCH_FAMILY(fam_mn, rows);
