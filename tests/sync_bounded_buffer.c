/* Bounded buffer: 4 producers and 4 consumers move 1,000,000 items through a
 * 64-slot ring guarded by one mutex and two conditions, once with each mutex
 * type (NORMAL, DEFAULT, RECURSIVE, ERRORCHECK, ADAPTIVE).  Every item is
 * consumed exactly once: the count and the checksum of the consumed values
 * must match what was produced, and the ring never over- or under-flows. */
#include "check.h"
#include <errno.h>
#include <pthread.h>

#define NPROD 4
#define NCONS 4
#define RING 64

static pthread_mutex_t lock;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static uint64_t ring[RING];
static unsigned head, tail, fill;
static long per_producer;
static uint64_t consumed_sum, consumed_n;
static int producers_left;

static void put(uint64_t v)
{
	CHECK_OK(pthread_mutex_lock(&lock));
	while (fill == RING)
		CHECK_OK(pthread_cond_wait(&not_full, &lock));
	ring[tail] = v;
	tail = (tail + 1) % RING;
	fill++;
	CHECK(fill <= RING);
	CHECK_OK(pthread_cond_signal(&not_empty));
	CHECK_OK(pthread_mutex_unlock(&lock));
}

/* 0 when every producer is done and the ring is empty. */
static int get(uint64_t *v)
{
	CHECK_OK(pthread_mutex_lock(&lock));
	while (fill == 0 && producers_left > 0)
		CHECK_OK(pthread_cond_wait(&not_empty, &lock));
	if (fill == 0) {
		CHECK_OK(pthread_mutex_unlock(&lock));
		return 0;
	}
	*v = ring[head];
	head = (head + 1) % RING;
	fill--;
	CHECK_OK(pthread_cond_signal(&not_full));
	CHECK_OK(pthread_mutex_unlock(&lock));
	return 1;
}

static void *producer(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg * (uint64_t)per_producer;
	for (long i = 0; i < per_producer; i++)
		put(base + (uint64_t)i + 1);
	CHECK_OK(pthread_mutex_lock(&lock));
	if (--producers_left == 0)
		CHECK_OK(pthread_cond_broadcast(&not_empty));
	CHECK_OK(pthread_mutex_unlock(&lock));
	return NULL;
}

static void *consumer(void *arg)
{
	uint64_t v, sum = 0, n = 0;
	while (get(&v)) {
		sum += v;
		n++;
	}
	CHECK_OK(pthread_mutex_lock(&lock));
	consumed_sum += sum;
	consumed_n += n;
	CHECK_OK(pthread_mutex_unlock(&lock));
	return NULL;
}

static void run(int type, long items)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutex_init(&lock, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
	head = tail = fill = 0;
	consumed_sum = consumed_n = 0;
	per_producer = items / NPROD;
	producers_left = NPROD;
	pthread_t p[NPROD], c[NCONS];
	for (int i = 0; i < NCONS; i++)
		CHECK_OK(pthread_create(&c[i], NULL, consumer, NULL));
	for (int i = 0; i < NPROD; i++)
		CHECK_OK(pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)i));
	for (int i = 0; i < NPROD; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	for (int i = 0; i < NCONS; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	uint64_t n = (uint64_t)per_producer * NPROD;
	CHECK_EQ(consumed_n, n);
	CHECK_EQ(consumed_sum, n * (n + 1) / 2);   /* values 1..n, each once */
	CHECK_EQ(fill, 0);
	CHECK_OK(pthread_mutex_destroy(&lock));
}

int main(void)
{
	const long items = test_iters(1000000);
	const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_RECURSIVE,
			      PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP };
	for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++)
		run(types[i], items);
	CHECK_OK(pthread_cond_destroy(&not_full));
	CHECK_OK(pthread_cond_destroy(&not_empty));
	return 0;
}
