/*
 * parallel_sum — 8 threads each sum a slice of a 1M-element array, hand
 * their partial sums back through pthread_exit / pthread_join, and meet at
 * a barrier; thread-specific data holds each thread's slice number.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)
#define THREADS 8

static uint32_t *data;
static pthread_barrier_t barrier;
static pthread_key_t slice_key;
static int barrier_serial;

static uint64_t sum_slice(void)
{
	long slice = (long)(intptr_t)pthread_getspecific(slice_key);
	uint64_t s = 0;
	for (long i = slice * (N / THREADS); i < (slice + 1) * (N / THREADS); i++)
		s += data[i];
	return s;
}

static void *summer(void *arg)
{
	pthread_setspecific(slice_key, arg);
	uint64_t *partial = malloc(sizeof *partial);
	*partial = sum_slice();
	if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
		__atomic_fetch_add(&barrier_serial, 1, __ATOMIC_RELAXED);
	pthread_exit(partial);
}

int main(void)
{
	data = malloc(N * sizeof *data);
	uint64_t want = 0;
	for (long i = 0; i < N; i++) {
		data[i] = (uint32_t)(i * 2654435761u) >> 8;
		want += data[i];
	}
	pthread_key_create(&slice_key, NULL);
	pthread_barrier_init(&barrier, NULL, THREADS);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, summer, (void *)(intptr_t)i);
	uint64_t total = 0;
	for (int i = 0; i < THREADS; i++) {
		void *p;
		pthread_join(t[i], &p);
		printf("slice %d sum %llu\n", i, (unsigned long long)*(uint64_t *)p);
		total += *(uint64_t *)p;
		free(p);
	}
	printf("total %llu expected %llu serial %d\n", (unsigned long long)total,
	       (unsigned long long)want, barrier_serial);
	pthread_barrier_destroy(&barrier);
	free(data);
	return total == want && barrier_serial == 1 ? 0 : 1;
}
