/*
 * producer_consumer — 4 producers and 3 consumers share a bounded buffer of
 * 8 slots under one mutex and two condition variables.  Prints how many
 * items went through and their sum, which do not depend on the schedule.
 */
#include <pthread.h>
#include <stdio.h>

#define SLOTS 8
#define PRODUCERS 4
#define CONSUMERS 3
#define PER_PRODUCER 5000

static long buf[SLOTS];
static int head, count, producers_left = PRODUCERS;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;

static void *produce(void *arg)
{
	long base = (long)arg * PER_PRODUCER;
	for (long i = 1; i <= PER_PRODUCER; i++) {
		pthread_mutex_lock(&lock);
		while (count == SLOTS)
			pthread_cond_wait(&not_full, &lock);
		buf[(head + count++) % SLOTS] = base + i;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	if (--producers_left == 0)
		pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	return NULL;
}

struct tally { long items, sum; };

static void *consume(void *arg)
{
	struct tally *t = arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (count == 0 && producers_left > 0)
			pthread_cond_wait(&not_empty, &lock);
		if (count == 0) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		long v = buf[head];
		head = (head + 1) % SLOTS;
		count--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		t->items++;
		t->sum += v;
	}
}

int main(void)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	struct tally tally[CONSUMERS] = { { 0, 0 } };
	for (long i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consume, &tally[i]);
	for (long i = 0; i < PRODUCERS; i++)
		pthread_create(&p[i], NULL, produce, (void *)i);
	long items = 0, sum = 0;
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < CONSUMERS; i++) {
		pthread_join(c[i], NULL);
		items += tally[i].items;
		sum += tally[i].sum;
	}
	long n = (long)PRODUCERS * PER_PRODUCER;
	printf("items %ld sum %ld expected %ld\n", items, sum, n * (n + 1) / 2);
	return items == n && sum == n * (n + 1) / 2 ? 0 : 1;
}
