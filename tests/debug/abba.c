/* The classic ABBA deadlock between two named UTs. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;

static void *ab(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&first);
	sched_yield();
	pthread_mutex_lock(&second);
	return NULL;
}

static void *ba(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&second);
	sched_yield();
	pthread_mutex_lock(&first);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, ab, NULL);
	pthread_create(&b, NULL, ba, NULL);
	pthread_setname_np(a, "alpha");
	pthread_setname_np(b, "beta");
	printf("first=%p second=%p\n", (void *)&first, (void *)&second);
	fflush(stdout);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
