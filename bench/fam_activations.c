/*
 * fam_activations.c — the "Activations" rows (issue 13): what a call that
 * may hand the VP on costs when it does not block, how long the other
 * threads wait when it does (known and unknown blocking), and Small and
 * Seltzer's database server with real I/O (src/runtime/handoff.c,
 * src/posix/blocking.c, src/io/).
 *
 * Wrapped calls that do not block, each with a second thread alive (so
 * that Weft would hand the VP on if the call could wait), each beside the
 * same kernel call made with a `syscall` instruction in this file's own
 * text (the *_raw rows: the floor, the same code in both binaries):
 *   pread_cached    pread of 4 KiB of a file whose page is cached
 *   open_close      open(O_RDONLY) + close of an existing file
 *   flock_free      flock(LOCK_EX) + flock(LOCK_UN) on a private file
 *   fsync_clean     fsync of a small file with nothing dirty: under Weft
 *                   the call always hands the VP on (hand on, return,
 *                   rejoin), so this is a handoff's whole cost for a call
 *                   that returns at once
 *   sem_pingpong    two threads pass a token through two SysV semaphores:
 *                   two calls that block in the kernel per round trip
 *
 * Handoff latency (oneshot; median (min–max) of the samples):
 *   handoff_known   thread A takes a timestamp and enters semop(-1) on a
 *                   semaphore at 0; thread B, ready (yielding in a loop),
 *                   takes one when it first runs; B - A per sample.  B then
 *                   posts (IPC_NOWAIT: an increment never waits) and
 *                   waits; the note gives how long A took to run again.
 *   rejoin_busy     the same, but B computes after its post (in the
 *                   program's text, at most REJOIN_SPIN_MAX_NS): the row is
 *                   B's post to A running again while the processor is busy
 *                   (Small and Seltzer's "unblocked" upcall), the note the
 *                   handoff
 *   handoff_unknown the same, but A blocks in syscall(SYS_read) on a pipe
 *                   (glibc's entry, which Weft interposes and passes to the
 *                   kernel) that another process writes UNKNOWN_DELAY
 *                   after A's go: a call Weft cannot know blocks.  Weft's
 *                   monitor takes the VP after WEFT_BLOCK_THRESHOLD (1 ms);
 *                   without it (WEFT_BLOCK_THRESHOLD=0, or a Weft before the
 *                   monitor) B runs only when A comes back, and the row is
 *                   the whole delay; it never hangs.
 *   handoff_unknown_asm   the same read as a `syscall` instruction in this
 *                   file's text (no monitor: the time-slice tick may preempt
 *                   there, and SA_RESTART makes the kernel issue the read
 *                   again)
 *   handoff_unknown_off   handoff_unknown under WEFT_ACTIVATIONS=off
 * Under NPTL the same source measures the kernel's own thread switch; the
 * rows are pinned to one CPU (an unpinned B would see A's store at once).
 *
 * The database server (oneshot; median (min–max) of per-window rates):
 *   dbserver        DB_QUERIERS threads each loop: pread a random 4 KiB
 *                   block of a DB_FILE_MIB file opened O_DIRECT (on a disk
 *                   file system, see data_dir), hash it (~20 µs of the
 *                   program's own code), and every DB_SYNC_EVERY-th query
 *                   pwrite 512 bytes to a log and fsync it; DB_COMPUTERS
 *                   threads only hash.  Queries answered per second of wall
 *                   time, over `reps` windows after a warm-up.
 *   dbserver_off    the same under WEFT_ACTIVATIONS=off (no handoff).
 *
 * Invariant: every row leaves no thread, file, process or IPC object
 * behind (files are unlinked as soon as they are open; the child of the
 * unknown rows exits when its pipe closes) — except the database rows'
 * data file, kept for the next run and removed by bench/run.sh when the
 * whole run ends — and none can wait forever: every wait ends by a post
 * in this process, a write from the child, or the end of a window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Activations"

/* ------------------------------------------------------------------ */
/* A system call as an instruction in this file's text                 */

#ifdef __x86_64__
static inline long raw_sys(long nr, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}
#else
static inline long raw_sys(long nr, long a, long b, long c, long d)
{
	long r = syscall(nr, a, b, c, d);
	return r < 0 ? -errno : r;
}
#endif

/* ------------------------------------------------------------------ */
/* Calls that do not block, a second thread alive                      */

static volatile int partner_stop;

static void *idle_partner(void *arg)
{
	(void)arg;
	while (!partner_stop)
		usleep(1000);
	return NULL;
}

/* A file of `size` bytes, written and synced; its path in path[] (the
 * caller unlinks it). */
static int temp_file(char *path, size_t size)
{
	strcpy(path, "/tmp/weft-bench-XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	char block[4096];
	memset(block, 'x', sizeof block);
	for (size_t done = 0; done < size;) {
		size_t k = size - done < sizeof block ? size - done : sizeof block;
		if (write(fd, block, k) != (ssize_t)k) {
			close(fd);
			unlink(path);
			return -1;
		}
		done += k;
	}
	fsync(fd);
	return fd;
}

enum op { OP_FLOCK, OP_FSYNC, OP_PREAD, OP_OPEN_CLOSE };

/* Inlined into each row with a constant op and raw, so that every timed
 * loop below is the call and nothing else. */
static inline __attribute__((always_inline)) int64_t with_partner(uint64_t n, enum op op, bool raw)
{
	static char buf[4096] BENCH_ALIGNED;
	char path[64];
	int fd = temp_file(path, op == OP_PREAD ? sizeof buf : 1);
	if (fd < 0)
		return -1;
	if (pread(fd, buf, sizeof buf, 0) < 0)   /* the page is cached from here on */
		die("pread", errno);
	pthread_t t;
	partner_stop = 0;
	if (pthread_create(&t, NULL, idle_partner, NULL) != 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		switch (op) {
		case OP_FLOCK:
			if (raw) {
				raw_sys(SYS_flock, fd, LOCK_EX, 0, 0);
				raw_sys(SYS_flock, fd, LOCK_UN, 0, 0);
			} else {
				flock(fd, LOCK_EX);
				flock(fd, LOCK_UN);
			}
			break;
		case OP_FSYNC:
			if (raw)
				raw_sys(SYS_fsync, fd, 0, 0, 0);
			else
				fsync(fd);
			break;
		case OP_PREAD:
			KEEP(raw ? raw_sys(SYS_pread64, fd, (long)buf, sizeof buf, 0) : pread(fd, buf, sizeof buf, 0));
			break;
		case OP_OPEN_CLOSE:
			if (raw) {
				long f = raw_sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
				raw_sys(SYS_close, f, 0, 0, 0);
			} else {
				close(open(path, O_RDONLY | O_CLOEXEC));
			}
			break;
		}
	}
	int64_t dt = now_ns() - t0;
	partner_stop = 1;
	pthread_join(t, NULL);
	close(fd);
	unlink(path);
	return dt;
}

static BENCH_ALIGNED int64_t m_flock_free(uint64_t n) { return with_partner(n, OP_FLOCK, false); }
static BENCH_ALIGNED int64_t m_flock_raw(uint64_t n) { return with_partner(n, OP_FLOCK, true); }
static BENCH_ALIGNED int64_t m_fsync_clean(uint64_t n) { return with_partner(n, OP_FSYNC, false); }
static BENCH_ALIGNED int64_t m_fsync_raw(uint64_t n) { return with_partner(n, OP_FSYNC, true); }
static BENCH_ALIGNED int64_t m_pread_cached(uint64_t n) { return with_partner(n, OP_PREAD, false); }
static BENCH_ALIGNED int64_t m_pread_raw(uint64_t n) { return with_partner(n, OP_PREAD, true); }
static BENCH_ALIGNED int64_t m_open_close(uint64_t n) { return with_partner(n, OP_OPEN_CLOSE, false); }
static BENCH_ALIGNED int64_t m_open_close_raw(uint64_t n) { return with_partner(n, OP_OPEN_CLOSE, true); }

/* ------------------------------------------------------------------ */
/* SysV semaphore ping-pong                                            */

struct pingpong {
	int sem;
	uint64_t n;
};

static void sem_add(int id, unsigned short num, short d, short flg)
{
	struct sembuf op = { num, d, flg };
	semop(id, &op, 1);
}

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	for (uint64_t i = 0; i < p->n; i++) {
		sem_add(p->sem, 0, -1, 0);
		sem_add(p->sem, 1, 1, 0);
	}
	return NULL;
}

static BENCH_ALIGNED int64_t m_sem_pingpong(uint64_t n)
{
	struct pingpong p = { semget(IPC_PRIVATE, 2, 0600), n };
	if (p.sem < 0)
		return -1;
	pthread_t t;
	if (pthread_create(&t, NULL, pong, &p) != 0) {
		semctl(p.sem, 0, IPC_RMID);
		return -1;
	}
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		sem_add(p.sem, 0, 1, 0);
		sem_add(p.sem, 1, -1, 0);
	}
	int64_t dt = now_ns() - t0;
	pthread_join(t, NULL);
	semctl(p.sem, 0, IPC_RMID);
	return dt;
}

/* ------------------------------------------------------------------ */
/* Handoff latency                                                     */

#define UNKNOWN_DELAY_NS 200000000L   /* the child's write comes this long after A's go */

#define REJOIN_SPIN_MAX_NS 100000000L   /* rejoin_busy: B computes at most this long */
#define SEM_WAIT_LIMIT_S 5                /* A's semop gives up after this */

/* B_SEMOP_BUSY: semop, and B computes after its post until A runs again. */
enum block_kind { B_SEMOP, B_SEMOP_BUSY, B_SYSCALL_FN, B_SYSCALL_INSN };

struct handoff {
	enum block_kind kind;
	int samples;
	int go;                     /* the sample A has entered (B waits for it) */
	int done;                   /* the sample B has recorded */
	int back_seen;              /* the sample A has come back from */
	int failed;                 /* A's wait timed out: B never ran (set before go) */
	int sem;                    /* B_SEMOP: A waits on it, B posts */
	sem_t ready;                /* A posts it to make B ready for a sample */
	int64_t *enter, *first;     /* A's timestamp before the call, B's first */
	int64_t *post, *back;       /* B_SEMOP: B's post, A's return */
};

/* B: made ready (sem_post) just before A enters its call, it yields until
 * A has, notes when it first runs, lets A go (semop), and waits on the
 * semaphore again, so that A comes back to an idle processor — or, for
 * B_SEMOP_BUSY, computes in the program's text until A runs again, as a
 * compute-bound thread would. */
static BENCH_ALIGNED void *handoff_watcher(void *arg)
{
	struct handoff *h = arg;
	for (int s = 1; s <= h->samples; s++) {
		while (sem_wait(&h->ready) != 0) {
		}
		while (load(&h->go) < s)
			sched_yield();
		if (load(&h->failed))
			break;
		h->first[s - 1] = now_ns();
		if (h->kind == B_SEMOP || h->kind == B_SEMOP_BUSY) {
			int64_t t = h->post[s - 1] = now_ns();
			sem_add(h->sem, 0, 1, IPC_NOWAIT);
			uint64_t x = 1;
			while (h->kind == B_SEMOP_BUSY && load(&h->back_seen) < s && now_ns() - t < REJOIN_SPIN_MAX_NS)
				for (int i = 0; i < 1000; i++) {
					x = x * 6364136223846793005ull + 1;
					KEEP(x);
				}
		}
		store(&h->done, s);
	}
	return NULL;
}

/* The other process of the unknown rows: for every byte on cmd, wait
 * `delay` and write one byte on data; exit when cmd closes.  Raw system
 * calls only: nothing of the thread library runs in it. */
static __attribute__((noreturn)) void writer_child(int cmd, int data, long delay)
{
	char c;
	while (raw_sys(SYS_read, cmd, (long)&c, 1, 0) == 1) {
		struct timespec ts = { delay / 1000000000L, delay % 1000000000L };
		raw_sys(SYS_nanosleep, (long)&ts, 0, 0, 0);
		raw_sys(SYS_write, data, (long)&c, 1, 0);
	}
	raw_sys(SYS_exit_group, 0, 0, 0, 0);
	__builtin_unreachable();
}

/* Weft's counts of VPs handed on by a wrapper and taken by the monitor so
 * far (0 on NPTL): the note shows which path each row took. */
struct handoff_counts {
	uint64_t handoffs, takeovers;
};

static struct handoff_counts handoff_count(void)
{
	struct handoff_counts c = { 0, 0 };
#ifdef BENCH_WEFT
	struct weft_stats st;
	if (weft_stats_get(&st, sizeof st) == 0) {
		c.handoffs = st.handoffs;
		c.takeovers = st.takeovers;
	}
#endif
	return c;
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run_handoff(struct result *r, enum block_kind kind)
{
	bool sem_kind = kind == B_SEMOP || kind == B_SEMOP_BUSY;
	int warm = kind == B_SEMOP ? 20 : kind == B_SEMOP_BUSY ? 5 : 1;
	int keep = kind == B_SEMOP ? (quick ? 100 : 1000) : kind == B_SEMOP_BUSY ? (quick ? 20 : 200) : (quick ? 3 : 7);
	struct handoff h = { .kind = kind, .samples = warm + keep };
	size_t sz = (size_t)h.samples * sizeof(int64_t);
	h.enter = malloc(sz);
	h.first = malloc(sz);
	h.post = malloc(sz);
	h.back = malloc(sz);
	double *v = malloc((size_t)keep * sizeof *v), *w = malloc((size_t)keep * sizeof *w);
	if (!h.enter || !h.first || !h.post || !h.back || !v || !w)
		die("malloc", ENOMEM);
	int cmd[2] = { -1, -1 }, data[2] = { -1, -1 };
	pid_t child = -1;
	if (sem_kind) {
		h.sem = semget(IPC_PRIVATE, 1, 0600);
		if (h.sem < 0) {
			na(r, "semget: %s", strerror(errno));
			goto out;
		}
	} else {
		if (pipe2(cmd, O_CLOEXEC) || pipe2(data, O_CLOEXEC))
			die("pipe2", errno);
		child = fork();
		if (child < 0)
			die("fork", errno);
		if (child == 0) {
			raw_sys(SYS_close, cmd[1], 0, 0, 0);
			writer_child(cmd[0], data[1], UNKNOWN_DELAY_NS);
		}
		close(cmd[0]);
		close(data[1]);
	}
	sem_init(&h.ready, 0, 0);
	struct handoff_counts c0 __attribute__((unused)) = handoff_count();
	pthread_t b = spawn(handoff_watcher, &h);
	for (int s = 1; s <= h.samples; s++) {
		char c = 's';
		long got = 1;
		if (!sem_kind && write(cmd[1], &c, 1) != 1)
			die("write (to the writer process)", errno);
		sem_post(&h.ready);
		h.enter[s - 1] = now_ns();
		store(&h.go, s);
		switch (kind) {
		case B_SEMOP:
		case B_SEMOP_BUSY: {
			/* bounded: if the wait is not handed on (WEFT_ACTIVATIONS=off, no
			 * spare kernel thread), B cannot run to post, and the row must
			 * end rather than hang */
			struct sembuf op = { 0, -1, 0 };
			struct timespec limit = { SEM_WAIT_LIMIT_S, 0 };
			if (semtimedop(h.sem, &op, 1, &limit) != 0)
				got = -1;
			break;
		}
		case B_SYSCALL_FN:
			got = syscall(SYS_read, data[0], &c, 1);
			break;
		case B_SYSCALL_INSN:
			got = raw_sys(SYS_read, data[0], (long)&c, 1, 0);
			break;
		}
		h.back[s - 1] = now_ns();
		store(&h.back_seen, s);
		if (got != 1 && sem_kind) {
			store(&h.failed, 1);
			store(&h.go, s + 1);
			sem_post(&h.ready);
			join(b);
			na(r, "semop waited %d s and B never ran: the wait was not handed on (WEFT_ACTIVATIONS=off, or "
			   "no spare kernel thread)", SEM_WAIT_LIMIT_S);
			goto out;
		}
		if (got != 1)
			die("read (from the writer process)", got < 0 ? errno : EIO);
		while (load(&h.done) < s)
			sched_yield();
	}
	join(b);
	sem_destroy(&h.ready);
	struct handoff_counts c1 __attribute__((unused)) = handoff_count();
	for (int i = 0; i < keep; i++) {
		v[i] = (double)(h.first[warm + i] - h.enter[warm + i]);
		w[i] = (double)(h.back[warm + i] - h.post[warm + i]);
	}
	if (kind == B_SEMOP_BUSY) {          /* the row is the rejoin; the note the handoff */
		double *t = v;
		v = w;
		w = t;
	}
	int saved = reps;
	reps = keep;
	set_median(r, v);
	reps = saved;
	r->iters = (uint64_t)keep;
	if (kind == B_SEMOP) {
		snprintf(r->note, sizeof r->note,
			 "%d samples after %d warm-up; A running again after B's post (B then waits): median %.0f ns", keep, warm,
			 median_of(w, keep));
	} else if (kind == B_SEMOP_BUSY) {
		snprintf(r->note, sizeof r->note,
			 "%d samples after %d warm-up (B gives up computing after %ld ms); handoff (A's semop to B running): "
			 "median %.0f ns", keep, warm, REJOIN_SPIN_MAX_NS / 1000000, median_of(w, keep));
	} else {
		snprintf(r->note, sizeof r->note,
			 "%d samples after %d warm-up; A blocked until another process wrote %ld ms after A's go",
			 keep, warm, UNKNOWN_DELAY_NS / 1000000);
	}
#ifdef BENCH_WEFT
	size_t nl = strlen(r->note);
	snprintf(r->note + nl, sizeof r->note - nl, "; %" PRIu64 " handoffs and %" PRIu64 " monitor takeovers in %d samples",
		 c1.handoffs - c0.handoffs, c1.takeovers - c0.takeovers, h.samples);
#endif
out:
	if (sem_kind && h.sem >= 0)
		semctl(h.sem, 0, IPC_RMID);
	if (child > 0) {
		close(cmd[1]);
		close(data[0]);
		waitpid(child, NULL, 0);
	}
	free(h.enter);
	free(h.first);
	free(h.post);
	free(h.back);
	free(v);
	free(w);
}

static void m_handoff_known(struct result *r) { run_handoff(r, B_SEMOP); }
static void m_rejoin_busy(struct result *r) { run_handoff(r, B_SEMOP_BUSY); }
static void m_handoff_unknown(struct result *r) { run_handoff(r, B_SYSCALL_FN); }
static void m_handoff_unknown_asm(struct result *r) { run_handoff(r, B_SYSCALL_INSN); }

/* ------------------------------------------------------------------ */
/* Small and Seltzer's database server, with real I/O                  */

#define DB_QUERIERS 16
#define DB_COMPUTERS 2
#define DB_SYNC_EVERY 8
#define DB_HASH_PASSES 34      /* ~20 µs of hashing per query on the reference machine */
#define DB_BLOCK 4096

struct db {
	int data, log;
	bool direct;
	uint64_t blocks;
	bool made;                 /* this run made the data file */
	int stop;
	uint64_t queries, units, errors;
	uint64_t reads, read_ns, syncs, sync_ns;   /* as the threads saw them */
	char dir[256], fs[32];
};

static struct db db;

/* DB_HASH_PASSES passes of a multiply-xor chain over the block: work in
 * the program's own text, where a tick may preempt. */
static BENCH_ALIGNED uint64_t db_hash(const uint64_t *w, uint64_t h)
{
	for (int p = 0; p < DB_HASH_PASSES; p++)
		for (int i = 0; i < DB_BLOCK / 8; i++)
			h = (h ^ w[i]) * 0x100000001b3ull;
	return h;
}

static BENCH_ALIGNED void *db_querier(void *arg)
{
	uint64_t x = (uint64_t)(intptr_t)arg * 0x9e3779b97f4a7c15ull + 1, q = 0, h = 0;
	void *mem;
	if (posix_memalign(&mem, DB_BLOCK, DB_BLOCK))
		die("posix_memalign", ENOMEM);
	uint64_t *buf = mem;
	off_t slot = (off_t)(intptr_t)arg * 512;
	while (!load(&db.stop)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		off_t off = (off_t)(x % db.blocks) * DB_BLOCK;
		if (!db.direct)
			posix_fadvise(db.data, off, DB_BLOCK, POSIX_FADV_DONTNEED);
		int64_t t0 = now_ns();
		if (pread(db.data, buf, DB_BLOCK, off) != DB_BLOCK) {
			__atomic_fetch_add(&db.errors, 1, __ATOMIC_RELAXED);
			break;
		}
		int64_t t1 = now_ns();
		h = db_hash(buf, h);
		int64_t t2 = 0, t3 = 0;
		if (++q % DB_SYNC_EVERY == 0) {
			t2 = now_ns();
			if (pwrite(db.log, buf, 512, slot) != 512 || fsync(db.log) != 0) {
				__atomic_fetch_add(&db.errors, 1, __ATOMIC_RELAXED);
				break;
			}
			t3 = now_ns();
		}
		if (!load(&db.stop)) {     /* the run's last calls, cut short by the end, not counted */
			__atomic_fetch_add(&db.reads, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&db.read_ns, (uint64_t)(t1 - t0), __ATOMIC_RELAXED);
			if (t2) {
				__atomic_fetch_add(&db.syncs, 1, __ATOMIC_RELAXED);
				__atomic_fetch_add(&db.sync_ns, (uint64_t)(t3 - t2), __ATOMIC_RELAXED);
			}
		}
		__atomic_fetch_add(&db.queries, 1, __ATOMIC_RELAXED);
	}
	KEEP(h);
	free(mem);
	return NULL;
}

static BENCH_ALIGNED void *db_computer(void *arg)
{
	static uint64_t block[DB_BLOCK / 8] BENCH_ALIGNED;
	uint64_t h = (uint64_t)(intptr_t)arg;
	while (!load(&db.stop)) {
		h = db_hash(block, h);
		__atomic_fetch_add(&db.units, 1, __ATOMIC_RELAXED);
	}
	KEEP(h);
	return NULL;
}

/* A directory on a disk file system for the data file: BENCH_DATA_DIR,
 * else the binary's own (the build tree), /var/tmp, /tmp — the first that
 * is writable and not tmpfs or ramfs (else the first writable one, and the
 * note says the reads reach no device). */
static bool data_dir(void)
{
	static char exe[256];
	const char *cand[4] = { getenv("BENCH_DATA_DIR"), NULL, "/var/tmp", "/tmp" };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			cand[1] = exe;
		}
	}
	const char *fallback = NULL;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 4; i++) {
			struct statfs st;
			if (!cand[i] || access(cand[i], W_OK) != 0 || statfs(cand[i], &st) != 0)
				continue;
			bool mem = st.f_type == 0x01021994 /* tmpfs */ || st.f_type == 0x858458f6 /* ramfs */;
			if (pass == 0 && mem) {
				if (!fallback)
					fallback = cand[i];
				continue;
			}
			snprintf(db.dir, sizeof db.dir, "%s", cand[i]);
			const char *name = st.f_type == 0xEF53 ? "ext4" : st.f_type == 0x58465342 ? "xfs"
					   : st.f_type == 0x9123683e ? "btrfs" : st.f_type == 0x794c7630 ? "overlayfs"
					   : mem ? "tmpfs: no device I/O" : NULL;
			if (name)
				snprintf(db.fs, sizeof db.fs, "%s", name);
			else
				snprintf(db.fs, sizeof db.fs, "fs 0x%lx", (unsigned long)st.f_type);
			return true;
		}
		if (!fallback)
			return false;
	}
	return false;
}

/* The data file, DB_FILE_NAME in db.dir: made once (real blocks, not
 * holes, written out), then kept for the next run of a row — making and
 * deleting 256 MiB on every run put the file system's own writeback and
 * discards into the runs that followed — and removed by bench/run.sh when
 * the whole run ends.  Made under a temporary name and renamed, so that a
 * run killed midway leaves no short file to be taken for a whole one. */
#define DB_FILE_NAME "weft-bench-db-%zuMiB.dat"

static int db_data_file(struct result *r, size_t mib)
{
	char path[300], tmp[320];
	snprintf(path, sizeof path, "%s/" DB_FILE_NAME, db.dir, mib);
	struct stat st;
	if (stat(path, &st) == 0 && (size_t)st.st_size == mib << 20)
		return 0;
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		na(r, "cannot create the data file in %s: %s", db.dir, strerror(errno));
		return -1;
	}
	size_t chunk = 1 << 20;
	char *b = malloc(chunk);
	if (!b)
		die("malloc", ENOMEM);
	for (size_t i = 0; i < chunk; i++)
		b[i] = (char)(i * 131 + 7);
	bool ok = true;
	for (size_t m = 0; m < mib && ok; m++) {
		memcpy(b, &m, sizeof m);
		ok = write(fd, b, chunk) == (ssize_t)chunk;
	}
	free(b);
	ok = ok && fsync(fd) == 0;
	close(fd);
	if (!ok || rename(tmp, path) != 0) {
		na(r, "cannot write the %zu MiB data file in %s (disk full?)", mib, db.dir);
		unlink(tmp);
		return -1;
	}
	return 1;
}

/* Open the data file O_DIRECT (or not, and say so) with nothing of it in
 * the page cache, and a fresh log (unlinked at once). */
static bool db_files(struct result *r, size_t mib)
{
	int made = db_data_file(r, mib);
	if (made < 0)
		return false;
	db.made = made;
	char path[300];
	snprintf(path, sizeof path, "%s/" DB_FILE_NAME, db.dir, mib);
	db.data = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	db.direct = db.data >= 0;
	if (!db.direct)
		db.data = open(path, O_RDONLY | O_CLOEXEC);
	if (db.data >= 0)
		posix_fadvise(db.data, 0, 0, POSIX_FADV_DONTNEED);
	snprintf(path, sizeof path, "%s/weft-bench-log-XXXXXX", db.dir);
	db.log = mkostemp(path, O_CLOEXEC);
	if (db.log >= 0)
		unlink(path);
	if (db.data < 0 || db.log < 0) {
		na(r, "cannot open the data or log file in %s: %s", db.dir, strerror(errno));
		if (db.data >= 0)
			close(db.data);
		if (db.log >= 0)
			close(db.log);
		return false;
	}
	db.blocks = (uint64_t)mib * ((1 << 20) / DB_BLOCK);
	return true;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static void m_dbserver(struct result *r)
{
	memset(&db, 0, sizeof db);
	size_t mib = quick ? 32 : 256;
	int64_t warm = quick ? 100000000 : 500000000, window = quick ? 300000000 : 2000000000;
	if (!data_dir()) {
		na(r, "no writable directory for the data file (set BENCH_DATA_DIR)");
		return;
	}
	if (!db_files(r, mib))
		return;
	/* the hash's cost, alone, before any thread exists */
	static uint64_t probe[DB_BLOCK / 8];
	int64_t c0 = cpu_ns();
	uint64_t hh = 0;
	for (int i = 0; i < 50; i++)
		hh = db_hash(probe, hh);
	KEEP(hh);
	double hash_us = (double)(cpu_ns() - c0) / 50 / 1e3;

	pthread_t t[DB_QUERIERS + DB_COMPUTERS];
	for (int i = 0; i < DB_QUERIERS; i++)
		t[i] = spawn(db_querier, (void *)(intptr_t)i);
	for (int i = 0; i < DB_COMPUTERS; i++)
		t[DB_QUERIERS + i] = spawn(db_computer, (void *)(intptr_t)(i + 1));
	sleep_ns(warm);
	double v[32], u[32];
	/* The rate is the counts over the time between the two reads of them,
	 * whenever the sleeping main thread gets to run. */
	uint64_t q0 = __atomic_load_n(&db.queries, __ATOMIC_RELAXED), u0 = __atomic_load_n(&db.units, __ATOMIC_RELAXED);
	int64_t t0 = now_ns();
	for (int i = 0; i < reps; i++) {
		sleep_ns(window);
		uint64_t q1 = __atomic_load_n(&db.queries, __ATOMIC_RELAXED);
		uint64_t u1 = __atomic_load_n(&db.units, __ATOMIC_RELAXED);
		int64_t t1 = now_ns();
		v[i] = (double)(q1 - q0) * 1e9 / (double)(t1 - t0);
		u[i] = (double)(u1 - u0) * 1e9 / (double)(t1 - t0);
		q0 = q1;
		u0 = u1;
		t0 = t1;
	}
	store(&db.stop, 1);
	for (int i = 0; i < DB_QUERIERS + DB_COMPUTERS; i++)
		join(t[i]);
	close(db.data);
	close(db.log);
	if (db.errors) {
		na(r, "%" PRIu64 " queries failed (a short read or a failed fsync)", db.errors);
		return;
	}
	set_median(r, v);
	r->iters = (uint64_t)(r->median * (double)window / 1e9);
	snprintf(r->note, sizeof r->note,
		 "%d query threads (4 KiB %s read of a %zu MiB file on %s in %s%s; %.1f us hash; every %dth a 512 B "
		 "write + fsync) + %d compute threads: %.0f hash units/s; as the threads saw them: pread %.0f us and "
		 "write + fsync %.0f us (means)",
		 DB_QUERIERS, db.direct ? "O_DIRECT" : "posix_fadvise(DONTNEED) then", mib, db.fs, db.dir,
		 db.made ? ", made by this run" : "", hash_us, DB_SYNC_EVERY, DB_COMPUTERS, median_of(u, reps),
		 db.reads ? (double)db.read_ns / (double)db.reads / 1e3 : 0,
		 db.syncs ? (double)db.sync_ns / (double)db.syncs / 1e3 : 0);
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

#define OFF "WEFT_ACTIVATIONS=off"
#define SEMS "sem_wait sem_post"
#define NA_SAME "NPTL has no handoff to turn off: see the row above"

static const struct metric activation_rows[] = {
	{ "pread_cached", GROUP, U_NS, 0, "pread 4 KiB of a cached file (the libc entry; a second thread alive)",
	  "", NULL, m_pread_cached },
	{ "pread_cached_raw", GROUP, U_NS, 0, "... the same pread as a syscall instruction (the floor)", "", NULL,
	  m_pread_raw },
	{ "open_close", GROUP, U_NS, 0, "open + close of an existing file (the libc entries)", "", NULL,
	  m_open_close },
	{ "open_close_raw", GROUP, U_NS, 0, "... the same openat + close as syscall instructions", "", NULL,
	  m_open_close_raw },
	{ "flock_free", GROUP, U_NS, 0, "flock lock+unlock that does not block (a second thread alive)",
	  "", NULL, m_flock_free },
	{ "flock_free_raw", GROUP, U_NS, 0, "... the same two flock calls as syscall instructions", "", NULL,
	  m_flock_raw },
	{ "fsync_clean", GROUP, U_NS, 0, "fsync with nothing to write: the VP handed on and back under Weft",
	  "", NULL, m_fsync_clean },
	{ "fsync_clean_raw", GROUP, U_NS, 0, "... the same fsync as a syscall instruction", "", NULL,
	  m_fsync_raw },
	{ "sem_pingpong", GROUP, U_NS, 0, "SysV semaphore round trip between two threads (two blocking calls)",
	  "", NULL, m_sem_pingpong },
	{ "handoff_known", GROUP, U_NS, 0,
	  "handoff latency, known blocking: A enters semop and waits, to ready B running",
	  "≈ 124 µs: blocked upcall 116 µs + yield 7.8 µs (Small & Seltzer; 486)", SEMS, NULL, m_handoff_known },
	{ "rejoin_busy", GROUP, U_NS, 0,
	  "rejoin latency, processor busy: B posts A's semop, then computes; to A running again",
	  "≈ 124 µs: unblocked upcall 116 µs + yield 7.8 µs (Small & Seltzer; 486)", SEMS, NULL, m_rejoin_busy },
	{ "handoff_unknown", GROUP, U_NS, 0,
	  "handoff latency, unknown blocking: A in syscall(SYS_read) on a pipe another process writes 200 ms later",
	  "", SEMS, NULL, m_handoff_unknown },
	{ "handoff_unknown_asm", GROUP, U_NS, 0,
	  "... the same read as a syscall instruction in the program's own text", "",
	  SEMS, NULL, m_handoff_unknown_asm },
	{ "handoff_unknown_off", GROUP, U_NS, 0, "... syscall(SYS_read) with WEFT_ACTIVATIONS=off", "", SEMS, NULL,
	  m_handoff_unknown, NULL, NA_SAME, OFF },
	{ "dbserver", GROUP, U_COUNT, F_UNPINNED,
	  "database server: queries/s, 16 threads read (O_DIRECT 4 KiB) + hash + fsync, 2 compute (one CPU for both)",
	  "95% of the possible overlap gained, modelled (Small & Seltzer §5.2)", NULL, NULL, m_dbserver },
	{ "dbserver_off", GROUP, U_COUNT, 0, "... the same server with WEFT_ACTIVATIONS=off (no handoff)", "", NULL,
	  NULL, m_dbserver, NULL, NA_SAME, OFF },
};
BENCH_FAMILY(fam_activations, activation_rows);
