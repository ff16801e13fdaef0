/*
 * vg_workload — one program that does, in small numbers, what a Weft
 * program does, for memcheck to watch (valgrind_memcheck.sh): UTs created
 * and joined (stacks reused from the pool and fresh ones of another size),
 * a mutex and a condition, a semaphore and a barrier across UTs, a sleeper,
 * two SCHED_RR UTs spinning in their own code until the tick has preempted
 * each (fake calls into the trampoline), and a pipe read that parks only its
 * caller while main writes.  Its own checks: every count adds up, the
 * spinners were preempted, the reader got the bytes.  VG_ROUNDS (default 20)
 * scales the loops; memcheck runs it some 30 times slower.
 */
#include "check.h"

#include <semaphore.h>

static int rounds = 20;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn = PTHREAD_COND_INITIALIZER;
static long counter;
static int whose;                 /* condition ping-pong: 0 or 1 */

static void *adder(void *arg)
{
	long *mine = arg;
	for (int i = 0; i < rounds; i++) {
		CHECK_OK(pthread_mutex_lock(&lock));
		long c = counter;
		sched_yield();            /* another adder runs and waits on the lock */
		counter = c + 1;
		CHECK_OK(pthread_mutex_unlock(&lock));
	}
	return mine;
}

static void *ping(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int i = 0; i < rounds; i++) {
		CHECK_OK(pthread_mutex_lock(&lock));
		while (whose != me)
			CHECK_OK(pthread_cond_wait(&turn, &lock));
		whose = !me;
		CHECK_OK(pthread_cond_signal(&turn));
		CHECK_OK(pthread_mutex_unlock(&lock));
	}
	return NULL;
}

static sem_t items;
static pthread_barrier_t bar;
static int produced[4];

static void *producer(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int i = 0; i < rounds; i++) {
		produced[me]++;
		CHECK_OK(sem_post(&items));
	}
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	return NULL;
}

static void *sleeper(void *arg)
{
	int64_t t0 = test_now_ns();
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	CHECK_OK(nanosleep(&ts, NULL));
	CHECK(test_now_ns() - t0 >= 20 * 1000 * 1000);
	return arg;
}

/* Spins in its own code (no Weft call) until the other spinner has run:
 * only the tick can get the other one in. */
static volatile int spun[2];
static void *spinner(void *arg)
{
	int me = (int)(intptr_t)arg;
	spun[me] = 1;
	while (!spun[!me])
		;
	return NULL;
}

static int pipefd[2];
static volatile int reader_parked;
static void *reader(void *arg)
{
	char buf[8];
	reader_parked = 1;
	ssize_t n = read(pipefd[0], buf, sizeof buf);   /* parks this UT only */
	CHECK_EQ(n, 5);
	CHECK(memcmp(buf, "weft!", 5) == 0);
	return arg;
}

static void create_join(void)
{
	pthread_t t[8];
	long ids[8];
	pthread_attr_t big;
	CHECK_OK(pthread_attr_init(&big));
	CHECK_OK(pthread_attr_setstacksize(&big, 1 << 20));   /* a mapped stack, not the pool's */
	for (int i = 0; i < 8; i++) {
		ids[i] = i;
		CHECK_OK(pthread_create(&t[i], i % 2 ? &big : NULL, adder, &ids[i]));
	}
	for (int i = 0; i < 8; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK(r == &ids[i]);
	}
	CHECK_OK(pthread_attr_destroy(&big));
	CHECK_EQ(counter, 8L * rounds);
}

static void cond_pingpong(void)
{
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, ping, (void *)0));
	CHECK_OK(pthread_create(&b, NULL, ping, (void *)1));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
}

static void sem_barrier(void)
{
	pthread_t t[4];
	CHECK_OK(sem_init(&items, 0, 0));
	CHECK_OK(pthread_barrier_init(&bar, NULL, 5));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t[i], NULL, producer, (void *)(intptr_t)i));
	for (int i = 0; i < 4 * rounds; i++)
		CHECK_OK(sem_wait(&items));
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	for (int i = 0; i < 4; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		CHECK_EQ(produced[i], rounds);
	}
	CHECK_OK(pthread_barrier_destroy(&bar));
	CHECK_OK(sem_destroy(&items));
}

static void sleep_and_preempt(void)
{
	pthread_t s, sp[2];
	pthread_attr_t rr;
	struct sched_param prm = { .sched_priority = 1 };
	CHECK_OK(pthread_create(&s, NULL, sleeper, NULL));
	CHECK_OK(pthread_attr_init(&rr));
	CHECK_OK(pthread_attr_setinheritsched(&rr, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&rr, SCHED_RR));
	CHECK_OK(pthread_attr_setschedparam(&rr, &prm));
	struct weft_stats before, after;
	CHECK_OK(weft_stats_get(&before, sizeof before));
	/* main outranks both while it makes them: neither runs before both exist */
	struct sched_param high = { .sched_priority = 50 }, normal = { .sched_priority = 0 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &high));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&sp[i], &rr, spinner, (void *)(intptr_t)i));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(sp[i], NULL));
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal));
	CHECK_OK(weft_stats_get(&after, sizeof after));
	CHECK(after.preemptions > before.preemptions);
	CHECK_OK(pthread_join(s, NULL));
	CHECK_OK(pthread_attr_destroy(&rr));
}

static void pipe_read(void)
{
	pthread_t r;
	CHECK_OK(pipe(pipefd));
	CHECK_OK(pthread_create(&r, NULL, reader, NULL));
	while (!reader_parked)
		sched_yield();
	sched_yield();            /* the reader is in read() now, parked */
	CHECK_EQ(write(pipefd[1], "weft!", 5), 5);
	CHECK_OK(pthread_join(r, NULL));
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const char *e = getenv("VG_ROUNDS");
	if (e && atoi(e) > 0)
		rounds = atoi(e);
	create_join();
	cond_pingpong();
	sem_barrier();
	sleep_and_preempt();
	pipe_read();
	return 0;
}
