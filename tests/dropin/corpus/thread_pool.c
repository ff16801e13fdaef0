/*
 * thread_pool — a fixed pool of 4 workers takes 200 jobs from a queue
 * (mutex + condition variable), each computing a small Collatz length; a
 * semaphore counts finished jobs, and main shuts the pool down with a
 * broadcast.  Prints every result in job order.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>

#define WORKERS 4
#define JOBS 200

static int next_job, queued;
static bool shutting_down;
static int result[JOBS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static sem_t done;

static int collatz_steps(long n)
{
	int steps = 0;
	while (n != 1) {
		n = n % 2 ? 3 * n + 1 : n / 2;
		steps++;
	}
	return steps;
}

static void *worker(void *unused)
{
	for (;;) {
		pthread_mutex_lock(&lock);
		while (next_job == queued && !shutting_down)
			pthread_cond_wait(&work, &lock);
		if (next_job == queued) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		int job = next_job++;
		pthread_mutex_unlock(&lock);
		result[job] = collatz_steps(job + 1);
		sched_yield();
		sem_post(&done);
	}
}

int main(void)
{
	pthread_t t[WORKERS];
	sem_init(&done, 0, 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int j = 0; j < JOBS; j++) {
		pthread_mutex_lock(&lock);
		queued++;
		pthread_cond_signal(&work);
		pthread_mutex_unlock(&lock);
	}
	for (int j = 0; j < JOBS; j++)
		sem_wait(&done);
	pthread_mutex_lock(&lock);
	shutting_down = true;
	pthread_cond_broadcast(&work);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	for (int j = 0; j < JOBS; j++)
		printf("job %d steps %d\n", j + 1, result[j]);
	sem_destroy(&done);
	return 0;
}
