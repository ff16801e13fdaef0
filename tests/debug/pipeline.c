/* A small correct program with real interleaving (mutex, condition,
 * semaphore, rwlock, barrier) whose schedule a trace records. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define N 4
#define ITEMS 40
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static sem_t sem;
static int queue[ITEMS], head, tail;
static long sum, table;

static void *producer(void *arg)
{
	long id = (long)arg;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < ITEMS / N; i++) {
		pthread_mutex_lock(&m);
		queue[tail++ % ITEMS] = (int)(id * 100 + i);
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&m);
		pthread_rwlock_wrlock(&rw);
		table += id;
		pthread_rwlock_unlock(&rw);
	}
	sem_post(&sem);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < ITEMS / N; i++) {
		pthread_mutex_lock(&m);
		while (head == tail)
			pthread_cond_wait(&cv, &m);
		sum += queue[head++ % ITEMS];
		pthread_mutex_unlock(&m);
		pthread_rwlock_rdlock(&rw);
		long seen = table;
		pthread_rwlock_unlock(&rw);
		(void)seen;
	}
	return NULL;
}

int main(void)
{
	pthread_t p[N], c[N];
	pthread_barrier_init(&bar, NULL, 2 * N);
	sem_init(&sem, 0, 0);
	for (long i = 0; i < N; i++) {
		pthread_create(&p[i], NULL, producer, (void *)i);
		pthread_create(&c[i], NULL, consumer, NULL);
	}
	for (int i = 0; i < N; i++)
		sem_wait(&sem);
	for (int i = 0; i < N; i++) {
		pthread_join(p[i], NULL);
		pthread_join(c[i], NULL);
	}
	long expect = 0;
	for (long id = 0; id < N; id++)
		for (int i = 0; i < ITEMS / N; i++)
			expect += id * 100 + i;
	printf("sum %ld table %ld\n", sum, table);
	return sum == expect && table == (long)(ITEMS / N) * (N * (N - 1) / 2) ? 0 : 1;
}
