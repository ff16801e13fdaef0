/*
 * copystack_switch_and_sync — copy-stack UTs (runtime/copystack.c) keep
 * their frames across every kind of switch, alone and mixed with
 * separate-stack UTs:
 *   - a yield ping-pong between copy-stack UTs whose live stacks hold a
 *     pattern of their own (every switch copies one out and one in);
 *   - mutex, condition, semaphore, rwlock and barrier between copy-stack
 *     and separate-stack UTs: counts exact, each UT's frames intact;
 *   - join returns each UT's value; detached copy-stack UTs end and their
 *     save areas come back (the process keeps making them);
 *   - the counters say frames were saved and restored.
 */
#include "check.h"

#include <semaphore.h>

#define WORDS 64

static long pattern_of(long id, int depth, int i) { return id * 1000003 + depth * 7919 + i; }

/* Fill a frame's locals, do `work` at the deepest of `depth` frames, then
 * check every frame's locals on the way out. */
static int nested(long id, int depth, void (*work)(long), long arg)
{
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of(id, depth, i);
	int ok = depth > 0 ? nested(id, depth - 1, work, arg) : (work(arg), 1);
	for (int i = 0; i < WORDS; i++)
		if (mine[i] != pattern_of(id, depth, i))
			ok = 0;
	return ok;
}

/* ---- ping-pong between copy-stack UTs ---- */

static long rounds;
static void yield_rounds(long n)
{
	for (long i = 0; i < n; i++)
		sched_yield();
}

static void *pinger(void *arg)
{
	long id = (long)arg;
	return (void *)(long)nested(id, 3 + (int)id, yield_rounds, rounds);
}

static void ping_pong(void)
{
	rounds = test_iters(100000);
	struct weft_stats before = test_stats();
	pthread_t a = test_spawn_copy(pinger, (void *)1, 0), b = test_spawn_copy(pinger, (void *)2, 0);
	void *ra, *rb;
	CHECK_OK(pthread_join(a, &ra));
	CHECK_OK(pthread_join(b, &rb));
	CHECK_EQ((long)ra, 1);
	CHECK_EQ((long)rb, 1);
	struct weft_stats after = test_stats();
	/* each switch between them moves one out and one in (one VP: one run
	 * stack; with several, each VP's UTs may be on a run stack of their
	 * own) */
	if (after.vps > 1)
		return;
	CHECK(after.stack_saves - before.stack_saves >= (uint64_t)rounds);
	CHECK(after.stack_restores - before.stack_restores >= (uint64_t)rounds);
	CHECK(after.stack_bytes_copied > before.stack_bytes_copied);
}

/* ---- every sync object, copy-stack and separate UTs together ---- */

#define NUTS 8
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static sem_t sem;
static long counter, turn, rw_sum;

static void sync_work(long id)
{
	long n = test_iters(2000);
	for (long i = 0; i < n; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		long v = counter;
		if ((i & 7) == 0)
			sched_yield();            /* a switch while it holds the lock */
		counter = v + 1;
		CHECK_OK(pthread_mutex_unlock(&m));
		CHECK_OK(pthread_rwlock_wrlock(&rw));
		rw_sum++;
		CHECK_OK(pthread_rwlock_unlock(&rw));
		CHECK_OK(pthread_rwlock_rdlock(&rw));
		CHECK(rw_sum > 0);
		CHECK_OK(pthread_rwlock_unlock(&rw));
	}
	/* take turns by the condition: UT id waits for turn == id */
	CHECK_OK(pthread_mutex_lock(&m));
	while (turn != id)
		CHECK_OK(pthread_cond_wait(&c, &m));
	turn++;
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	/* a semaphore handed round, and a barrier */
	CHECK_OK(sem_wait(&sem));
	CHECK_OK(sem_post(&sem));
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void *syncer(void *arg)
{
	long id = (long)arg;
	return (void *)(long)nested(id, 2, sync_work, id);
}

static void mixed_sync(void)
{
	pthread_t t[NUTS];
	CHECK_OK(pthread_barrier_init(&bar, NULL, NUTS));
	CHECK_OK(sem_init(&sem, 0, 1));
	counter = turn = rw_sum = 0;
	for (long i = 0; i < NUTS; i++) {
		if (i & 1)
			t[i] = test_spawn_copy(syncer, (void *)i, 0);
		else
			CHECK_OK(pthread_create(&t[i], NULL, syncer, (void *)i));
	}
	for (int i = 0; i < NUTS; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK_EQ((long)r, 1);
	}
	CHECK_EQ(counter, NUTS * test_iters(2000));
	CHECK_EQ(rw_sum, NUTS * test_iters(2000));
	CHECK_EQ(turn, NUTS);
	CHECK_OK(pthread_barrier_destroy(&bar));
	CHECK_OK(sem_destroy(&sem));
}

/* ---- detached copy-stack UTs come and go ---- */

static long ended;
static void bump(long id) { (void)id; __atomic_fetch_add(&ended, 1, __ATOMIC_RELEASE); }
static void *short_life(void *arg) { nested((long)arg, 1, bump, 0); return NULL; }

static void detached_churn(void)
{
	long n = test_iters(200000);
#ifdef WEFT_TEST_TSAN
	n /= 100;             /* each UT's thread block holds TSan's 768 KiB, set up afresh */
#endif
	for (long i = 0; i < n; i++) {
		test_spawn_copy(short_life, (void *)i, 1);
		if ((i & 63) == 0)
			sched_yield();
	}
	while (__atomic_load_n(&ended, __ATOMIC_ACQUIRE) < n)
		sched_yield();
	CHECK_EQ(__atomic_load_n(&ended, __ATOMIC_ACQUIRE), n);
}

int main(void)
{
	ping_pong();
	mixed_sync();
	detached_churn();
	return 0;
}
