/*
 * mn_counters_exact — every kind of lock Weft offers gives mutual exclusion
 * when its holders run on different virtual processors (M:N).
 *
 * Four UTs each add 1 to a plain, non-atomic `long` MN_ITERS times under one
 * kind of lock, then the next kind, in turn: pthread mutexes of the types
 * NORMAL, RECURSIVE (taken twice, released twice), ERRORCHECK and
 * ADAPTIVE_NP; a pthread_spinlock_t; a pthread_rwlock_t taken for writing
 * (two extra readers meanwhile check, under the read lock, that the two
 * halves of a pair the writers update one after the other are equal, and
 * yield between reads); a
 * sem_t used as a binary lock; a C11 mtx_t.  Every total must be exactly
 * 4 * MN_ITERS: one lost update is one time two UTs were inside at once,
 * which on one VP cannot happen unless a preemption tick lands in the
 * critical section, and with two VPs happens at once if a lock is broken.
 *
 * Why the kernel thread ids: the totals prove nothing about M:N if every UT
 * ran on one kernel thread.  Each UT records syscall(SYS_gettid) at the
 * start of each phase and every 4096 iterations; when Weft reports two VPs
 * in force (weft_stats_get: vps >= 2) at least two distinct ids must have
 * been seen, proof that the counters were shared across kernel threads.
 * Under one VP nothing is asserted about ids (a UT may move to another
 * kernel thread around a blocking call, docs/activations.md).
 *
 * MN_ITERS is 1,000,000, and 200,000 in the ASan and TSan builds (where
 * the 32 million lock operations take too long); WEFT_TEST_QUICK divides it
 * further.  A phase also ends after PHASE_NS (each UT looks at the clock
 * every 4096 increments): where a switch between UTs costs a system call
 * (no FSGSBASE: every switch under M:N loads the thread pointer with
 * arch_prctl, 4.5 us on a PVM guest) the full count would take minutes.
 * Then each UT reports how many increments it made, and the total must be
 * exactly their sum; a phase cut short says so on stderr.
 */
#include "check.h"

#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <threads.h>

/* Increments per UT and lock kind (test_iters divides it by WEFT_TEST_QUICK;
 * TEST_SCALE is left out: MN_ITERS is already scaled for sanitizers). */
#ifndef MN_ITERS
#if defined(WEFT_TEST_SANITIZE) || defined(WEFT_TEST_TSAN)
#define MN_ITERS 200000L
#else
#define MN_ITERS 1000000L
#endif
#endif

#define NUT 4           /* the counting UTs */
#define NREADERS 2      /* the rwlock phase's checking readers */
#define TID_EVERY 4096  /* iterations between two tid records */
#define MAX_TIDS 32
#define PHASE_NS 4000000000ll   /* 4 s: the 8 phases take at most ~32 s of CI's time */

static long iters;
static long counter;                    /* plain: the locks alone guard it */
static long pair_a, pair_b;             /* the rwlock phase's invariant: a == b */
static pthread_mutex_t m_normal, m_recursive, m_errorcheck, m_adaptive;
static pthread_spinlock_t spin;
static pthread_rwlock_t rw;
static sem_t sem;
static mtx_t c11;
static pthread_barrier_t phase;         /* NUT counters + main */
static atomic_int writers_left;         /* rwlock phase: counters not yet done */
static int64_t phase_end;               /* set by main before each phase's start */
static long made[NUT];                  /* increments each UT made in this phase */

/* The lock kinds, in the order the UTs use them: how each is taken and
 * released (every call must succeed). */
static void lock_mutex(pthread_mutex_t *m) { CHECK_OK(pthread_mutex_lock(m)); }
static void unlock_mutex(pthread_mutex_t *m) { CHECK_OK(pthread_mutex_unlock(m)); }
static void normal_lock(void) { lock_mutex(&m_normal); }
static void normal_unlock(void) { unlock_mutex(&m_normal); }
static void recursive_lock(void) { lock_mutex(&m_recursive); lock_mutex(&m_recursive); }
static void recursive_unlock(void) { unlock_mutex(&m_recursive); unlock_mutex(&m_recursive); }
static void errorcheck_lock(void) { lock_mutex(&m_errorcheck); }
static void errorcheck_unlock(void) { unlock_mutex(&m_errorcheck); }
static void adaptive_lock(void) { lock_mutex(&m_adaptive); }
static void adaptive_unlock(void) { unlock_mutex(&m_adaptive); }
static void spin_lock(void) { CHECK_OK(pthread_spin_lock(&spin)); }
static void spin_unlock(void) { CHECK_OK(pthread_spin_unlock(&spin)); }
static void rw_lock(void) { CHECK_OK(pthread_rwlock_wrlock(&rw)); }
static void rw_unlock(void) { CHECK_OK(pthread_rwlock_unlock(&rw)); }
static void sem_lock(void)
{
	while (sem_wait(&sem) != 0)
		CHECK_EQ(errno, EINTR);
}
static void sem_unlock(void) { CHECK_OK(sem_post(&sem)); }
static void c11_lock(void) { CHECK_EQ(mtx_lock(&c11), thrd_success); }
static void c11_unlock(void) { CHECK_EQ(mtx_unlock(&c11), thrd_success); }

static const struct kind {
	const char *name;
	void (*lock)(void);
	void (*unlock)(void);
} kinds[] = {
	{ "mutex NORMAL", normal_lock, normal_unlock },
	{ "mutex RECURSIVE", recursive_lock, recursive_unlock },
	{ "mutex ERRORCHECK", errorcheck_lock, errorcheck_unlock },
	{ "mutex ADAPTIVE_NP", adaptive_lock, adaptive_unlock },
	{ "spinlock", spin_lock, spin_unlock },
	{ "rwlock (write)", rw_lock, rw_unlock },
	{ "semaphore as a lock", sem_lock, sem_unlock },
	{ "C11 mtx_t", c11_lock, c11_unlock },
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* The kernel thread ids one UT saw: a small set, its own, merged by main. */
struct tids {
	int n;
	pid_t id[MAX_TIDS];
};
static struct tids seen[NUT + NREADERS];

static void note_tid(struct tids *t)
{
	pid_t me = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < t->n; i++)
		if (t->id[i] == me)
			return;
	if (t->n < MAX_TIDS)
		t->id[t->n++] = me;
}

static void *counting(void *arg)
{
	struct tids *t = &seen[(intptr_t)arg];
	for (int k = 0; k < NKINDS; k++) {
		pthread_barrier_wait(&phase);           /* main has reset the counter */
		note_tid(t);
		long i = 0;
		while (i < iters) {
			kinds[k].lock();
			counter++;
			if (kinds[k].lock == rw_lock) {
				pair_a++;
				__asm__ volatile("" ::: "memory");   /* two stores: a reader let in would see a != b */
				pair_b++;
			}
			kinds[k].unlock();
			if ((++i & (TID_EVERY - 1)) == 0) {
				note_tid(t);
				if (test_now_ns() > phase_end)
					break;
			}
		}
		made[(intptr_t)arg] = i;
		if (kinds[k].lock == rw_lock)
			atomic_fetch_sub(&writers_left, 1);
		pthread_barrier_wait(&phase);           /* main checks the total */
	}
	return NULL;
}

/* Under the read lock the writers' pair is whole and never goes back. */
static void *reading(void *arg)
{
	struct tids *t = &seen[(intptr_t)arg];
	long last = 0, n = 0;
	note_tid(t);
	while (atomic_load(&writers_left) > 0) {
		CHECK_OK(pthread_rwlock_rdlock(&rw));
		long a = pair_a, b = pair_b;
		CHECK_OK(pthread_rwlock_unlock(&rw));
		if (a != b) {
			fprintf(stderr, "reader saw a = %ld, b = %ld under the read lock\n", a, b);
			CHECK_EQ(a, b);
		}
		CHECK(a >= last);
		last = a;
		if ((++n & (TID_EVERY / 16 - 1)) == 0)
			note_tid(t);
		/* Let the writers in.  Without the yield, under the default
		 * (prefer-reader) kind, two readers on one VP keep the lock
		 * read-held almost always: a reader admitted at an unlock holds
		 * it while it waits for the VP, so the other one's unlocks rarely
		 * bring the count to 0, and the 4 writers get about one turn per
		 * time slice (README.md, "Found while writing"). */
		CHECK_OK(sched_yield());
	}
	return NULL;
}

static void mutex_init_type(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutex_init(m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

static void init_locks(void)
{
	mutex_init_type(&m_normal, PTHREAD_MUTEX_NORMAL);
	mutex_init_type(&m_recursive, PTHREAD_MUTEX_RECURSIVE);
	mutex_init_type(&m_errorcheck, PTHREAD_MUTEX_ERRORCHECK);
	mutex_init_type(&m_adaptive, PTHREAD_MUTEX_ADAPTIVE_NP);
	CHECK_OK(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_rwlock_init(&rw, NULL));
	CHECK_OK(sem_init(&sem, 0, 1));
	CHECK_EQ(mtx_init(&c11, mtx_plain), thrd_success);
}

int main(void)
{
	iters = test_iters(MN_ITERS * TEST_SCALE);
	init_locks();
	CHECK_OK(pthread_barrier_init(&phase, NULL, NUT + 1));
	atomic_store(&writers_left, NUT);

	pthread_t t[NUT], r[NREADERS];
	for (int i = 0; i < NUT; i++)
		CHECK_OK(pthread_create(&t[i], NULL, counting, (void *)(intptr_t)i));

	for (int k = 0; k < NKINDS; k++) {
		counter = 0;
		pair_a = pair_b = 0;
		phase_end = test_now_ns() + PHASE_NS;
		if (kinds[k].lock == rw_lock)
			for (int i = 0; i < NREADERS; i++)
				CHECK_OK(pthread_create(&r[i], NULL, reading, (void *)(intptr_t)(NUT + i)));
		pthread_barrier_wait(&phase);           /* go */
		pthread_barrier_wait(&phase);           /* all done */
		long want = 0;
		for (int i = 0; i < NUT; i++) {
			CHECK(made[i] >= (iters < TID_EVERY ? iters : TID_EVERY) && made[i] <= iters);
			want += made[i];
		}
		if (want != NUT * iters)
			fprintf(stderr, "%s: cut short at %ld increments of %ld (%.1f s)\n", kinds[k].name,
				want, NUT * iters, PHASE_NS / 1e9);
		if (counter != want) {
			fprintf(stderr, "%s: total %ld, want %ld (%ld lost updates)\n", kinds[k].name,
				counter, want, want - counter);
			CHECK_EQ(counter, want);
		}
		if (kinds[k].lock == rw_lock) {
			for (int i = 0; i < NREADERS; i++)
				CHECK_OK(pthread_join(r[i], NULL));
			CHECK_EQ(pair_a, want);
			CHECK_EQ(pair_b, want);
		}
	}
	for (int i = 0; i < NUT; i++)
		CHECK_OK(pthread_join(t[i], NULL));

	/* Every lock is free again and reports so. */
	CHECK_OK(pthread_mutex_destroy(&m_normal));
	CHECK_OK(pthread_mutex_destroy(&m_recursive));
	CHECK_OK(pthread_mutex_destroy(&m_errorcheck));
	CHECK_OK(pthread_mutex_destroy(&m_adaptive));
	CHECK_OK(pthread_spin_destroy(&spin));
	CHECK_OK(pthread_rwlock_destroy(&rw));
	int v;
	CHECK_OK(sem_getvalue(&sem, &v));
	CHECK_EQ(v, 1);
	CHECK_OK(sem_destroy(&sem));
	mtx_destroy(&c11);
	CHECK_OK(pthread_barrier_destroy(&phase));

	/* The kernel threads that carried the UTs. */
	struct tids all = { 0, { 0 } };
	for (int i = 0; i < NUT + NREADERS; i++)
		for (int j = 0; j < seen[i].n; j++) {
			int dup = 0;
			for (int m = 0; m < all.n; m++)
				dup |= all.id[m] == seen[i].id[j];
			if (!dup && all.n < MAX_TIDS)
				all.id[all.n++] = seen[i].id[j];
		}
	CHECK(all.n >= 1);
	struct weft_stats st = test_stats();
	if (st.vps >= 2 && all.n < 2) {
		fprintf(stderr, "vps == %u, yet every UT ran on kernel thread %d\n", (unsigned)st.vps,
			(int)all.id[0]);
		CHECK(all.n >= 2);
	}
	return 0;
}
