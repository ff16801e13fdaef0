/*
 * fam_sync.c — the "Synchronisation" rows: mutex (uncontended and handed
 * off), condition signal and broadcast (with no waiter, to an untimed or
 * timed waiter, outside or inside the critical section), semaphore
 * ping-pong; Marovich §3.3.8-9 and Mueller's Table 2.  Beside the default
 * mutex, the other uncontended locks: RECURSIVE and ERRORCHECK mutexes,
 * rwlock read and write locks, spinlocks.
 *
 * Default mutex and condition attributes, except in the priority-protocol
 * rows: lock+unlock of a PRIO_INHERIT and of a PRIO_PROTECT mutex with no
 * contention, and the boost/de-boost round of a contended PRIO_INHERIT
 * mutex beside the same round with PRIO_NONE.  Those run their threads
 * under SCHED_FIFO: NPTL needs the privilege for it (without it the row is
 * n/a, with the reason), Weft does not.  Invariant: every row that blocks
 * names the calls it needs in the table's `needs`, so that bench-weft
 * prints n/a instead of running glibc's blocking sync on Weft's one kernel
 * thread.
 */
#define _GNU_SOURCE
#include <semaphore.h>
#include <stdlib.h>

#include "harness.h"

#define GROUP "Synchronisation"

/* ------------------------------------------------------------------ */
/* Mutexes                                                             */

BENCH_ALIGNED int64_t bench_mutex(uint64_t n)
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

/* The other uncontended locks a program uses (C++'s recursive_mutex and
 * shared_mutex, debug builds' error-checking mutexes, spinlocks): a lock
 * and an unlock, as bench_mutex. */
static BENCH_ALIGNED int64_t typed_mutex(uint64_t n, int type)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutex_t m;
	pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	int64_t dt = now_ns() - t0;
	pthread_mutex_destroy(&m);
	return dt;
}

static int64_t m_mutex_recursive(uint64_t n) { return typed_mutex(n, PTHREAD_MUTEX_RECURSIVE); }
static int64_t m_mutex_errorcheck(uint64_t n) { return typed_mutex(n, PTHREAD_MUTEX_ERRORCHECK); }

static BENCH_ALIGNED int64_t rwlock_pair(uint64_t n, bool write)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (write)
			pthread_rwlock_wrlock(&l);
		else
			pthread_rwlock_rdlock(&l);
		pthread_rwlock_unlock(&l);
	}
	int64_t dt = now_ns() - t0;
	pthread_rwlock_destroy(&l);
	return dt;
}

static int64_t m_rwlock_rd(uint64_t n) { return rwlock_pair(n, false); }
static int64_t m_rwlock_wr(uint64_t n) { return rwlock_pair(n, true); }

static BENCH_ALIGNED int64_t m_spin(uint64_t n)
{
	pthread_spinlock_t s;
	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_spin_lock(&s);
		pthread_spin_unlock(&s);
	}
	int64_t dt = now_ns() - t0;
	pthread_spin_destroy(&s);
	return dt;
}

/* A semaphore used as a counter that never runs dry: a post, then a wait
 * that finds the unit there. */
static BENCH_ALIGNED int64_t m_sem_nowait(uint64_t n)
{
	sem_t s;
	sem_init(&s, 0, 0);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		sem_post(&s);
		sem_wait(&s);
	}
	int64_t dt = now_ns() - t0;
	sem_destroy(&s);
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

static BENCH_ALIGNED void *handoff_b(void *p)
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

static BENCH_ALIGNED int64_t m_handoff(uint64_t n)
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
/* Priority protocols                                                  */

static void set_self_sched(int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	int e = pthread_setschedparam(pthread_self(), policy, &sp);
	if (e)
		die("pthread_setschedparam (SCHED_FIFO needs privilege under NPTL)", e);
}

static void protocol_mutex_init(pthread_mutex_t *m, int protocol, int ceiling)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	int e = pthread_mutexattr_setprotocol(&a, protocol);
	if (!e && protocol == PTHREAD_PRIO_PROTECT)
		e = pthread_mutexattr_setprioceiling(&a, ceiling);
	if (!e)
		e = pthread_mutex_init(m, &a);
	if (e)
		die("a priority-protocol mutex", e);
	pthread_mutexattr_destroy(&a);
}

/* Uncontended lock+unlock of a protocol mutex.  PRIO_PROTECT: the caller
 * runs at SCHED_FIFO 1 under a ceiling of 2, so every lock raises it and
 * every unlock lowers it (NPTL: a sched_setscheduler call each). */
static BENCH_ALIGNED int64_t protocol_uncontended(uint64_t n, int protocol)
{
	pthread_mutex_t m;
	protocol_mutex_init(&m, protocol, 2);
	if (protocol == PTHREAD_PRIO_PROTECT)
		set_self_sched(SCHED_FIFO, 1);
	int e = pthread_mutex_lock(&m);
	if (e)
		die("pthread_mutex_lock", e);
	pthread_mutex_unlock(&m);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	int64_t dt = now_ns() - t0;
	if (protocol == PTHREAD_PRIO_PROTECT)
		set_self_sched(SCHED_OTHER, 0);
	pthread_mutex_destroy(&m);
	return dt;
}

static int64_t m_mutex_pi(uint64_t n) { return protocol_uncontended(n, PTHREAD_PRIO_INHERIT); }
static int64_t m_mutex_pp(uint64_t n) { return protocol_uncontended(n, PTHREAD_PRIO_PROTECT); }

/*
 * One round of Mueller's Figure 5(b) between two SCHED_FIFO threads: the
 * low one (the timer, 10) locks, wakes the high one (20), which preempts
 * it and blocks on the mutex — PRIO_INHERIT boosts the holder — then the
 * holder unlocks — the boost ends and the mutex is handed over — and the
 * high one unlocks and waits for the next round.  Four switches a round,
 * a boost and its end; with PRIO_NONE the same four switches and no boost,
 * so the difference is the protocol's cost.
 */
struct boostpair {
	pthread_mutex_t m;
	sem_t go;
	uint64_t n;
};

static BENCH_ALIGNED void *boost_high(void *p)
{
	struct boostpair *b = p;
	for (uint64_t i = 0; i < b->n; i++) {
		sem_wait(&b->go);
		pthread_mutex_lock(&b->m);
		pthread_mutex_unlock(&b->m);
	}
	return NULL;
}

static BENCH_ALIGNED int64_t boost_rounds(uint64_t n, int protocol)
{
	struct boostpair *b = calloc(1, sizeof *b);
	protocol_mutex_init(&b->m, protocol, 0);
	sem_init(&b->go, 0, 0);
	b->n = n;
	set_self_sched(SCHED_FIFO, 10);
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = 20 };
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	pthread_t t;
	int e = pthread_create(&t, &a, boost_high, b);
	if (e)
		die("pthread_create (SCHED_FIFO needs privilege under NPTL)", e);
	pthread_attr_destroy(&a);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_mutex_lock(&b->m);
		sem_post(&b->go);            /* high runs, blocks on m */
		pthread_mutex_unlock(&b->m); /* high runs, unlocks, waits */
	}
	int64_t dt = now_ns() - t0;
	join(t);
	set_self_sched(SCHED_OTHER, 0);
	sem_destroy(&b->go);
	pthread_mutex_destroy(&b->m);
	free(b);
	return dt;
}

static int64_t m_boost_pi(uint64_t n) { return boost_rounds(n, PTHREAD_PRIO_INHERIT); }
static int64_t m_boost_none(uint64_t n) { return boost_rounds(n, PTHREAD_PRIO_NONE); }

/* ------------------------------------------------------------------ */
/* Conditions                                                          */

static BENCH_ALIGNED int64_t m_cond_signal_none(uint64_t n)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		pthread_cond_signal(&c);
	int64_t dt = now_ns() - t0;
	pthread_cond_destroy(&c);
	return dt;
}

static BENCH_ALIGNED int64_t m_cond_broadcast_none(uint64_t n)
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

static BENCH_ALIGNED void *cond_waiter(void *p)
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

static BENCH_ALIGNED int64_t cond_waiter_run(uint64_t n, bool timed, bool inside)
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

static BENCH_ALIGNED void *sem_partner(void *p)
{
	struct sempair *s = p;
	for (uint64_t i = 0; i < s->n; i++) {
		sem_wait(&s->a);
		sem_post(&s->b);
	}
	return NULL;
}

static BENCH_ALIGNED int64_t m_sem(uint64_t n)
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
/* The rows                                                            */

static const struct metric rows[] = {
	{ "mutex", GROUP, U_NS, F_PEERS, "mutex lock+unlock, no contention",
	  "1 µs (Mueller; SPARC IPX); 12.76 µs (Marovich; HP 835); 4.1 µs (Small & Seltzer; 486)",
	  SYNC_MUTEX, bench_mutex },
	{ "mutex_recursive", GROUP, U_NS, 0, "mutex lock+unlock, no contention, RECURSIVE",
	  "-", SYNC_MUTEX " pthread_mutexattr_settype", m_mutex_recursive },
	{ "mutex_errorcheck", GROUP, U_NS, 0, "mutex lock+unlock, no contention, ERRORCHECK",
	  "-", SYNC_MUTEX " pthread_mutexattr_settype", m_mutex_errorcheck },
	{ "rwlock_rd", GROUP, U_NS, 0, "rwlock read lock+unlock, no contention",
	  "-", "pthread_rwlock_rdlock pthread_rwlock_unlock", m_rwlock_rd },
	{ "rwlock_wr", GROUP, U_NS, 0, "rwlock write lock+unlock, no contention",
	  "-", "pthread_rwlock_wrlock pthread_rwlock_unlock", m_rwlock_wr },
	{ "spin", GROUP, U_NS, 0, "spinlock lock+unlock, no contention",
	  "-", "pthread_spin_lock pthread_spin_unlock", m_spin },
	{ "sem_nowait", GROUP, U_NS, 0, "semaphore post, then a wait that finds the unit (no contention)",
	  "-", "sem_post sem_wait", m_sem_nowait },
	{ "mutex_handoff", GROUP, U_NS, F_UNPINNED | F_PEERS, "mutex hand-off, long-term contention",
	  "35.7 µs (Marovich; HP 835); 51 µs (Mueller; SPARC IPX); peer: State Threads 27 ns",
	  SYNC_MUTEX, m_handoff },
	{ "mutex_pi", GROUP, U_NS, 0, "mutex lock+unlock, no contention, PRIO_INHERIT",
	  "-", SYNC_MUTEX " pthread_mutexattr_setprotocol", m_mutex_pi },
	{ "mutex_pp", GROUP, U_NS, 0,
	  "mutex lock+unlock, no contention, PRIO_PROTECT (each lock raises the caller, SCHED_FIFO 1, to ceiling 2)",
	  "-", SYNC_MUTEX " pthread_mutexattr_setprotocol pthread_setschedparam", m_mutex_pp },
	{ "mutex_boost_pi", GROUP, U_NS, 0,
	  "PRIO_INHERIT round: a waiter boosts the holder, unlock ends the boost and hands over (4 switches)",
	  "-", SYNC_MUTEX " sem_wait sem_post pthread_setschedparam", m_boost_pi },
	{ "mutex_boost_none", GROUP, U_NS, 0,
	  "the same round with PRIO_NONE: the same 4 switches, no boost",
	  "-", SYNC_MUTEX " sem_wait sem_post pthread_setschedparam", m_boost_none },
	{ "cond_signal_none", GROUP, U_NS, 0, "cond signal, no waiter",
	  "1.81 µs (Marovich; HP 835)", "pthread_cond_signal", m_cond_signal_none },
	{ "cond_broadcast_none", GROUP, U_NS, 0, "cond broadcast, no waiter",
	  "2.64 µs (Marovich; HP 835)", "pthread_cond_broadcast", m_cond_broadcast_none },
	{ "cond_untimed_out", GROUP, U_NS, F_UNPINNED,
	  "cond signal to untimed waiter, outside critical section",
	  "40.5 µs (Marovich; HP 835)", SYNC_COND, m_cond_untimed_out },
	{ "cond_untimed_in", GROUP, U_NS, F_UNPINNED,
	  "cond signal to untimed waiter, inside critical section",
	  "94.4 µs (Marovich; HP 835)", SYNC_COND, m_cond_untimed_in },
	{ "cond_timed_out", GROUP, U_NS, F_UNPINNED,
	  "cond signal to timed waiter, outside critical section",
	  "100.7 µs (Marovich; HP 835)", SYNC_COND " pthread_cond_timedwait", m_cond_timed_out },
	{ "cond_timed_in", GROUP, U_NS, F_UNPINNED,
	  "cond signal to timed waiter, inside critical section",
	  "155.5 µs (Marovich; HP 835)", SYNC_COND " pthread_cond_timedwait", m_cond_timed_in },
	{ "sem", GROUP, U_NS, F_UNPINNED | F_PEERS, "semaphore synchronisation (V, then P returns in the other)",
	  "55 µs (Mueller; SPARC IPX); LynxOS 75 µs (SPARC IPX); SunOS 158 µs (SPARC 1+)",
	  "sem_wait sem_post", m_sem },
};

BENCH_FAMILY(fam_sync, rows);
