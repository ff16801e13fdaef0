/*
 * printf_storm — glibc from many threads at once: 64 threads each printf
 * 200 lines to one stdout, interleaved with malloc/free storms, getenv and
 * strerror, sleeping now and then.  Every line must arrive whole; the
 * order of lines between threads is the scheduler's, so the harness
 * compares the output sorted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 64
#define LINES 200

static void *storm(void *arg)
{
	long id = (long)arg;
	unsigned seed = (unsigned)id;
	const char *path = getenv("PRINTF_STORM_TAG");
	for (int i = 0; i < LINES; i++) {
		size_t sz = 16 + rand_r(&seed) % 4096;
		char *p = malloc(sz);
		memset(p, (int)id, sz);
		char *q = realloc(p, sz * 2);
		int ok = q && q[sz - 1] == (char)id;
		free(q);
		printf("thread %02ld line %03d %s %s %s\n", id, i, ok ? "ok" : "CORRUPT",
		       strerror(i % 2 ? EAGAIN : ETIMEDOUT), path ? path : "-");
		if (i % 50 == 0) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	setenv("PRINTF_STORM_TAG", "tag", 1);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, storm, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	fflush(stdout);
	return 0;
}
