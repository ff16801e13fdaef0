/*
 * mn_sync_across_vps — Weft's waiting primitives keep their contracts when
 * the waiter and the waker run on different virtual processors (M:N).
 *
 * A wake-up that crosses VPs is where M:N breaks first: a UT made ready on
 * one VP while another VP is deciding to sleep, a condition signalled
 * between a waiter's check and its park, a barrier counted on two kernel
 * threads at once.  Each part asserts an exact outcome:
 *  - condition ping-pong: two UTs hand a turn back and forth 100,000 times
 *    each under a mutex and a condition variable; the turns strictly
 *    alternate (each taker finds the other one took the previous turn);
 *  - bounded buffer: 4 producers and 4 consumers move 200,000 distinct
 *    values through a 16-slot ring guarded by semaphores (free slots, full
 *    slots, and a binary semaphore as the ring's lock); every value is
 *    consumed exactly once and the sum of what was consumed is the sum of
 *    what was produced;
 *  - barrier: 4 UTs over 10,000 rounds; each counts its arrival at round r
 *    before the wait and, once through, finds all 4 arrivals of round r
 *    (nobody passed before everyone arrived) and none yet of round r + 2;
 *    exactly one UT per round gets PTHREAD_BARRIER_SERIAL_THREAD;
 *  - 1,000 UTs each return (void *)i, and pthread_join gives each its own;
 *  - pthread_once from 8 UTs released together runs the routine once, and
 *    none of them returns before the routine has finished;
 *  - thread-specific data: 8 UTs each set and read their own value 10,000
 *    times (never another's), and the destructor runs once per UT.
 * Registered with WEFT_VPS=2 and WEFT_VPS=1 (the same contracts hold on one
 * VP, where these were already true).
 */
#include "mn_test.h"

#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>

/* ---- condition ping-pong ---------------------------------------------- */

#define PP_ROUNDS 100000L
static long pp_rounds;
static pthread_mutex_t pp_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_c = PTHREAD_COND_INITIALIZER;
static int pp_turn;             /* whose turn: 0 or 1 */
static int pp_last = 1;         /* who took the last turn */
static long pp_taken[2];

static void *pp_player(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (long i = 0; i < pp_rounds; i++) {
		CHECK_OK(pthread_mutex_lock(&pp_m));
		while (pp_turn != me)
			CHECK_OK(pthread_cond_wait(&pp_c, &pp_m));
		if (pp_last == me) {
			fprintf(stderr, "ping-pong: %d took two turns in a row at its round %ld\n", me, i);
			CHECK(pp_last != me);
		}
		pp_last = me;
		pp_taken[me]++;
		pp_turn = !me;
		CHECK_OK(pthread_cond_signal(&pp_c));
		CHECK_OK(pthread_mutex_unlock(&pp_m));
	}
	return NULL;
}

static void test_ping_pong(void)
{
	pp_rounds = test_iters(PP_ROUNDS);
	mn_run_uts(2, pp_player);
	CHECK_EQ(pp_taken[0], pp_rounds);
	CHECK_EQ(pp_taken[1], pp_rounds);
	CHECK_EQ(pp_turn, 0);
	CHECK_EQ(pp_last, 1);
}

/* ---- bounded buffer with semaphores ----------------------------------- */

#define BB_ITEMS 200000L
#define BB_SLOTS 16
#define BB_SIDES 4              /* producers, and consumers */
static long bb_items;
static long bb_ring[BB_SLOTS];
static unsigned bb_head, bb_tail;
static sem_t bb_free, bb_full, bb_lock;
static unsigned char *bb_seen;  /* per value: times consumed */
static long bb_sum[BB_SIDES];

static void sem_wait_ok(sem_t *s)
{
	while (sem_wait(s) != 0)
		CHECK_EQ(errno, EINTR);
}

static void *bb_producer(void *arg)
{
	long p = (intptr_t)arg, per = bb_items / BB_SIDES;
	for (long i = 0; i < per; i++) {
		sem_wait_ok(&bb_free);
		sem_wait_ok(&bb_lock);
		bb_ring[bb_tail++ % BB_SLOTS] = p * per + i;
		CHECK_OK(sem_post(&bb_lock));
		CHECK_OK(sem_post(&bb_full));
	}
	return NULL;
}

static void *bb_consumer(void *arg)
{
	long c = (intptr_t)arg, per = bb_items / BB_SIDES, sum = 0;
	for (long i = 0; i < per; i++) {
		sem_wait_ok(&bb_full);
		sem_wait_ok(&bb_lock);
		long v = bb_ring[bb_head++ % BB_SLOTS];
		CHECK_OK(sem_post(&bb_lock));
		CHECK_OK(sem_post(&bb_free));
		CHECK(v >= 0 && v < per * BB_SIDES);
		bb_seen[v]++;           /* one byte per value: no two consumers share one */
		sum += v;
	}
	bb_sum[c] = sum;
	return NULL;
}

static void test_bounded_buffer(void)
{
	bb_items = test_iters(BB_ITEMS) / BB_SIDES * BB_SIDES;
	CHECK(bb_items > 0);
	bb_seen = calloc((size_t)bb_items, 1);
	CHECK(bb_seen);
	CHECK_OK(sem_init(&bb_free, 0, BB_SLOTS));
	CHECK_OK(sem_init(&bb_full, 0, 0));
	CHECK_OK(sem_init(&bb_lock, 0, 1));
	pthread_t p[BB_SIDES], c[BB_SIDES];
	for (int i = 0; i < BB_SIDES; i++) {
		CHECK_OK(pthread_create(&c[i], NULL, bb_consumer, (void *)(intptr_t)i));
		CHECK_OK(pthread_create(&p[i], NULL, bb_producer, (void *)(intptr_t)i));
	}
	long sum = 0;
	for (int i = 0; i < BB_SIDES; i++) {
		CHECK_OK(pthread_join(p[i], NULL));
		CHECK_OK(pthread_join(c[i], NULL));
		sum += bb_sum[i];
	}
	CHECK_EQ(sum, bb_items * (bb_items - 1) / 2);
	for (long v = 0; v < bb_items; v++)
		if (bb_seen[v] != 1) {
			fprintf(stderr, "bounded buffer: value %ld consumed %d times\n", v, bb_seen[v]);
			CHECK_EQ(bb_seen[v], 1);
		}
	CHECK_EQ(bb_head, bb_items);
	CHECK_EQ(bb_tail, bb_items);
	int n;
	CHECK_OK(sem_getvalue(&bb_free, &n));
	CHECK_EQ(n, BB_SLOTS);
	CHECK_OK(sem_getvalue(&bb_full, &n));
	CHECK_EQ(n, 0);
	CHECK_OK(sem_getvalue(&bb_lock, &n));
	CHECK_EQ(n, 1);
	CHECK_OK(sem_destroy(&bb_free));
	CHECK_OK(sem_destroy(&bb_full));
	CHECK_OK(sem_destroy(&bb_lock));
	free(bb_seen);
}

/* ---- barrier rounds ---------------------------------------------------- */

#define BAR_ROUNDS 10000
#define BAR_UTS 4
static int bar_rounds;
static pthread_barrier_t bar;
static atomic_int bar_arrived[BAR_ROUNDS + 2];
static atomic_int bar_serial[BAR_ROUNDS];

static void *bar_member(void *arg)
{
	for (int r = 0; r < bar_rounds; r++) {
		atomic_fetch_add(&bar_arrived[r], 1);
		int e = pthread_barrier_wait(&bar);
		if (e == PTHREAD_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&bar_serial[r], 1);
		else
			CHECK_OK(e);
		int here = atomic_load(&bar_arrived[r]);
		int ahead = atomic_load(&bar_arrived[r + 2]);
		if (here != BAR_UTS || ahead != 0) {
			fprintf(stderr, "barrier: past round %d with %d arrivals there and %d at round %d\n",
				r, here, ahead, r + 2);
			CHECK(here == BAR_UTS && ahead == 0);
		}
	}
	return NULL;
}

static void test_barrier_rounds(void)
{
	bar_rounds = (int)test_iters(BAR_ROUNDS);
	CHECK_OK(pthread_barrier_init(&bar, NULL, BAR_UTS));
	mn_run_uts(BAR_UTS, bar_member);
	for (int r = 0; r < bar_rounds; r++) {
		CHECK_EQ(atomic_load(&bar_arrived[r]), BAR_UTS);
		if (atomic_load(&bar_serial[r]) != 1) {
			fprintf(stderr, "barrier: round %d had %d serial threads\n", r, atomic_load(&bar_serial[r]));
			CHECK_EQ(atomic_load(&bar_serial[r]), 1);
		}
	}
	CHECK_OK(pthread_barrier_destroy(&bar));
}

/* ---- 1,000 joins -------------------------------------------------------- */

#define JOIN_UTS 1000

static void *returns_arg(void *arg) { return arg; }

static void test_thousand_joins(void)
{
	static pthread_t t[JOIN_UTS];
	for (int i = 0; i < JOIN_UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, returns_arg, (void *)(intptr_t)i));
	for (int i = 0; i < JOIN_UTS; i++) {
		void *ret = NULL;
		CHECK_OK(pthread_join(t[i], &ret));
		CHECK_EQ((intptr_t)ret, i);
	}
}

/* ---- pthread_once -------------------------------------------------------- */

#define ONCE_UTS 8
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_barrier_t once_gate;
static atomic_int once_runs;
static volatile int once_finished;

static void once_routine(void)
{
	atomic_fetch_add(&once_runs, 1);
	/* long enough that the others arrive while it runs, on any VP */
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < 5 * 1000 * 1000)
		sched_yield();
	once_finished = 1;
}

static void *once_caller(void *arg)
{
	pthread_barrier_wait(&once_gate);
	CHECK_OK(pthread_once(&once, once_routine));
	CHECK(once_finished);
	return NULL;
}

static void test_once(void)
{
	CHECK_OK(pthread_barrier_init(&once_gate, NULL, ONCE_UTS));
	mn_run_uts(ONCE_UTS, once_caller);
	CHECK_EQ(atomic_load(&once_runs), 1);
	CHECK_OK(pthread_barrier_destroy(&once_gate));
}

/* ---- thread-specific data ---------------------------------------------- */

#define KEY_UTS 8
#define KEY_ROUNDS 10000
static pthread_key_t key;
static atomic_int dtor_runs;
static long key_slot[KEY_UTS][2];       /* the values a UT stores: its own addresses */
static atomic_int dtor_seen[KEY_UTS];

static void key_dtor(void *v)
{
	long *p = v;
	CHECK(p >= &key_slot[0][0] && p < &key_slot[0][0] + 2 * KEY_UTS);
	atomic_fetch_add(&dtor_seen[(p - &key_slot[0][0]) / 2], 1);
	atomic_fetch_add(&dtor_runs, 1);
}

static void *key_user(void *arg)
{
	int me = (int)(intptr_t)arg;
	CHECK(pthread_getspecific(key) == NULL);
	for (int i = 0; i < KEY_ROUNDS; i++) {
		void *mine = &key_slot[me][i & 1];
		CHECK_OK(pthread_setspecific(key, mine));
		if ((i & 63) == 0)
			sched_yield();  /* let others set theirs meanwhile */
		if (pthread_getspecific(key) != mine) {
			fprintf(stderr, "keys: UT %d read %p, set %p\n", me, pthread_getspecific(key), mine);
			CHECK(pthread_getspecific(key) == mine);
		}
	}
	return NULL;
}

static void test_keys(void)
{
	CHECK_OK(pthread_key_create(&key, key_dtor));
	mn_run_uts(KEY_UTS, key_user);
	CHECK_EQ(atomic_load(&dtor_runs), KEY_UTS);
	for (int i = 0; i < KEY_UTS; i++)
		CHECK_EQ(atomic_load(&dtor_seen[i]), 1);
	CHECK(pthread_getspecific(key) == NULL);        /* main never set one */
	CHECK_OK(pthread_key_delete(key));
}

int main(void)
{
	test_ping_pong();
	test_bounded_buffer();
	test_barrier_rounds();
	test_thousand_joins();
	test_once();
	test_keys();
	return 0;
}
