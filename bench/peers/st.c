/*
 * st.c — the State Threads peer (bench-peer-st, Debian's libst-dev 1.9):
 * the benchmark's peer rows (harness.h, F_PEERS) on State Threads' own
 * calls, each loop the same as the pthread row it stands beside.
 *
 * State Threads is M:1 and never preempts: a thread runs until it blocks,
 * and st_thread_create does not switch.  So a partner made before the
 * timed loop runs only once the main thread blocks; where the pthread row
 * waits for its partner to be ready (wait_until), this waits on a
 * condition the partner signals.  Its condition takes no mutex (nothing
 * can run in between), so the condition ping-pong has no mutex work.  Its
 * stacks: 64 KiB by default (plus a page each side), mapped once and kept
 * on a free list, so create + join makes no system call in the steady
 * state.  No yield (st_usleep(0) waits for the idle thread's poll, a
 * system call), no once, no semaphore: those rows say n/a.
 */
#define _GNU_SOURCE
#include <st.h>
#include <string.h>

#include "peer.h"

static void *noop(void *a) { return a; }

static st_thread_t start(void *(*fn)(void *), void *arg, int stack)
{
	st_thread_t t = st_thread_create(fn, arg, 1, stack);
	if (!t)
		peer_die("st_thread_create");
	return t;
}

static void finish(st_thread_t t)
{
	if (st_thread_join(t, NULL))
		peer_die("st_thread_join");
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */

static BENCH_ALIGNED int64_t create_join(uint64_t n, int stack)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		finish(start(noop, NULL, stack));
	return now_ns() - t0;
}

static int64_t m_create_join(uint64_t n) { return create_join(n, 0); }
static int64_t m_create_join_64k(uint64_t n) { return create_join(n, 64 * 1024); }

/* Called through an opaque pointer, as bench_self calls pthread_self. */
static st_thread_t (*volatile self_fn)(void) = st_thread_self;

static BENCH_ALIGNED int64_t m_self(uint64_t n)
{
	st_thread_t (*f)(void) = self_fn;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		st_thread_t t = f();
		KEEP(t);
	}
	return now_ns() - t0;
}

static int spec_key = -1, spec_value;

static BENCH_ALIGNED int64_t m_getspecific(uint64_t n)
{
	if (spec_key < 0 && (st_key_create(&spec_key, NULL) || st_thread_setspecific(spec_key, &spec_value)))
		peer_die("st_key_create/st_thread_setspecific");
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		void *v = st_thread_getspecific(spec_key);
		KEEP(v);
	}
	return now_ns() - t0;
}

/* ------------------------------------------------------------------ */
/* Synchronisation                                                     */

static BENCH_ALIGNED int64_t m_mutex(uint64_t n)
{
	st_mutex_t m = st_mutex_new();
	if (!m)
		peer_die("st_mutex_new");
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		st_mutex_lock(m);
		st_mutex_unlock(m);
	}
	int64_t dt = now_ns() - t0;
	st_mutex_destroy(m);
	return dt;
}

/* fam_sync.c's ring of three mutexes: each lock waits for the other
 * thread's unlock; per hand-off. */
struct handoff {
	st_mutex_t m[3];
	st_cond_t ready;
	uint64_t n;
};

static BENCH_ALIGNED void *handoff_b(void *p)
{
	struct handoff *h = p;
	st_mutex_lock(h->m[2]);
	st_cond_signal(h->ready);
	for (uint64_t i = 0; i < h->n; i++) {
		st_mutex_lock(h->m[i % 3]);
		st_mutex_unlock(h->m[(i + 2) % 3]);
	}
	st_mutex_unlock(h->m[(h->n + 2) % 3]);
	return NULL;
}

static BENCH_ALIGNED int64_t m_handoff(uint64_t n)
{
	struct handoff h;
	uint64_t rounds = n / 2 + 1;
	for (int i = 0; i < 3; i++)
		if (!(h.m[i] = st_mutex_new()))
			peer_die("st_mutex_new");
	if (!(h.ready = st_cond_new()))
		peer_die("st_cond_new");
	h.n = rounds;
	st_mutex_lock(h.m[0]);
	st_mutex_lock(h.m[1]);
	st_thread_t t = start(handoff_b, &h, 0);
	st_cond_wait(h.ready);
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++) {
		st_mutex_unlock(h.m[i % 3]);
		st_mutex_lock(h.m[(i + 2) % 3]);
	}
	int64_t dt = now_ns() - t0;
	st_mutex_unlock(h.m[rounds % 3]);
	st_mutex_unlock(h.m[(rounds + 1) % 3]);
	finish(t);
	for (int i = 0; i < 3; i++)
		st_mutex_destroy(h.m[i]);
	st_cond_destroy(h.ready);
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}

/* fam_bershad.c's pingpong: two threads alternate through one condition;
 * per round trip, the partner's creation and join included as there. */
struct pingpong {
	st_cond_t c;
	int turn;
	uint64_t n;
};

static BENCH_ALIGNED void pingpong_side(struct pingpong *p, int me)
{
	for (uint64_t i = 0; i < p->n; i++) {
		while (p->turn != me)
			st_cond_wait(p->c);
		p->turn = !me;
		st_cond_signal(p->c);
	}
}

static void *pong(void *p)
{
	pingpong_side(p, 1);
	return NULL;
}

static BENCH_ALIGNED int64_t m_pingpong(uint64_t n)
{
	struct pingpong p = { .c = st_cond_new(), .n = n };
	if (!p.c)
		peer_die("st_cond_new");
	int64_t t0 = now_ns();
	st_thread_t t = start(pong, &p, 0);
	pingpong_side(&p, 0);
	finish(t);
	int64_t dt = now_ns() - t0;
	st_cond_destroy(p.c);
	return dt;
}

/* ------------------------------------------------------------------ */
/* Memory: threads blocked for good on one condition                   */

static st_cond_t parked, all_started;
static long started, wanted;

static void *parked_thread(void *a)
{
	if (++started == wanted)
		st_cond_signal(all_started);
	st_cond_wait(parked);
	return a;
}

static long park(long want)
{
	if ((!parked && !(parked = st_cond_new())) || (!all_started && !(all_started = st_cond_new())))
		peer_die("st_cond_new");
	started = 0;
	wanted = want;
	long made = 0;
	while (made < want && st_thread_create(parked_thread, NULL, 0, 0))
		made++;
	if (made == want)
		st_cond_wait(all_started);
	return made;
}

static void m_mem_10k(struct result *r) { peer_mem_row(r, 10000, park); }
static void m_mem_100k(struct result *r) { peer_mem_row(r, 100000, park); }

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct peer_row rows[] = {
	{ "once", NULL, NULL, "State Threads has no once call" },
	{ "self", m_self, NULL, NULL },
	{ "getspecific", m_getspecific, NULL, NULL },
	{ "yield_busy", NULL, NULL,
	  "State Threads 1.9 has no yield: st_usleep(0) waits for the idle thread's poll (a system call)" },
	{ "create_join", m_create_join, NULL, NULL },
	{ "create_join_64k", m_create_join_64k, NULL, NULL },
	{ "mutex", m_mutex, NULL, NULL },
	{ "mutex_handoff", m_handoff, NULL, NULL },
	{ "pingpong", m_pingpong, NULL, NULL },
	{ "sem", NULL, NULL, "State Threads has no semaphore" },
	{ "mem_10k", NULL, m_mem_10k, NULL },
	{ "mem_100k", NULL, m_mem_100k, NULL },
};

static const struct peer st_peer = { rows, sizeof rows / sizeof rows[0] };

const struct peer *peer_select(const char *tag)
{
	if (strcmp(tag, "st") != 0)
		return NULL;
	if (st_init() != 0)
		peer_die("st_init");
	return &st_peer;
}
