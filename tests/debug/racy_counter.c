/* A deliberately racy program: two UTs do an unlocked read-modify-write of
 * one counter, with a Weft call (an uncontended lock of another mutex)
 * between the read and the write.  Under the default policy nothing switches
 * there and it passes; a debug scheduler that switches at Weft's exits makes
 * an update go missing, and it exits 1.  With "locked" as argv[1] the update
 * is done under a mutex: correct under every schedule. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 50
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static int locked;

static void *increment(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		if (locked)
			pthread_mutex_lock(&guard);
		long seen = counter;
		pthread_mutex_lock(&other);
		pthread_mutex_unlock(&other);
		counter = seen + 1;
		if (locked)
			pthread_mutex_unlock(&guard);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	locked = argc > 1 && strcmp(argv[1], "locked") == 0;
	pthread_t a, b;
	pthread_create(&a, NULL, increment, NULL);
	pthread_create(&b, NULL, increment, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	if (counter != 2 * ROUNDS) {
		printf("lost updates: counter %ld, expected %d\n", counter, 2 * ROUNDS);
		return 1;
	}
	return 0;
}
