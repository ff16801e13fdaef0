/*
 * fam_bershad.c — "Bershad's four" (Bershad 1992, §4.2 and Table 2):
 * spinlock, mutexlock, forktest, pingpong, as thread-package operations
 * inside a small program.
 *
 * Each row is timed per acquisition, per thread created, or per round trip
 * (one ping and one pong).  Invariant: spinlock and mutexlock check the
 * shared counter afterwards and exit with status 2 on a lost update, so a
 * broken lock never prints a time.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define GROUP "Bershad's four"

struct counting {
	pthread_spinlock_t s;
	pthread_mutex_t m;
	uint64_t n, counter;
	int ready;
};

static BENCH_ALIGNED void *spin_worker(void *p)
{
	struct counting *c = p;
	for (uint64_t i = 0; i < c->n; i++) {
		pthread_spin_lock(&c->s);
		c->counter++;
		pthread_spin_unlock(&c->s);
	}
	return NULL;
}

static BENCH_ALIGNED void *mutex_worker(void *p)
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

static BENCH_ALIGNED void *fork_link(void *p)
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

static BENCH_ALIGNED int64_t m_forktest(uint64_t n)
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

static BENCH_ALIGNED void pingpong_side(struct pingpong *p, int me)
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

static BENCH_ALIGNED int64_t m_pingpong(uint64_t n)
{
	struct pingpong p = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER, .n = n };
	int64_t t0 = now_ns();
	pthread_t t = spawn(pong, &p);
	pingpong_side(&p, 0);
	join(t);
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "spinlock", GROUP, U_NS, 0, "spinlock: acquire, count, release (two threads)",
	  "0.58 µs R.A.S.; 4.3 µs kernel emulation (Bershad; DECstation 5000)",
	  "pthread_spin_lock pthread_spin_unlock", m_spinlock },
	{ "mutexlock", GROUP, U_NS, 0, "mutexlock: lock, count, unlock (two threads)",
	  "0.91 µs R.A.S.; 4.6 µs emulation (Bershad; DECstation 5000)", SYNC_MUTEX, m_mutexlock },
	{ "forktest", GROUP, U_NS, F_UNPINNED, "forktest: each thread creates the next and exits",
	  "23.8 µs R.A.S.; 43.7 µs emulation (Bershad; DECstation 5000)", NULL, m_forktest },
	{ "pingpong", GROUP, U_NS, F_UNPINNED | F_PEERS, "pingpong: mutex + cond round trip",
	  "115.2 µs R.A.S.; 230.8 µs emulation (Bershad; DECstation 5000); peer: State Threads 48 ns",
	  SYNC_COND, m_pingpong },
};

BENCH_FAMILY(fam_bershad, rows);
