/* The classic ABBA deadlock between two named UTs.  Each holds its first
 * mutex before either asks for its second (a barrier, not a yield: on
 * several VPs one could otherwise take both before the other starts). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;

static void *ab(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&first);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&second);
	return NULL;
}

static void *ba(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&second);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&first);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_barrier_init(&both_hold, NULL, 2);
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
