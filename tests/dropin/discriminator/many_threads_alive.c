/*
 * many_threads_alive N — an ordinary pthread program that keeps N threads
 * alive at once: each waits on a condition variable until all N exist.
 *
 * Prints "alive N kernel-threads K" and exits 0 when all N were alive
 * together; otherwise "failed at M: pthread_create: ERRNAME (message)" and
 * exits 1 (after releasing and joining the M it has).  Stacks are 64 KiB so
 * that memory is not what runs out.  It knows nothing of Weft.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static int release;

static void *wait_for_release(void *unused)
{
	pthread_mutex_lock(&lock);
	while (!release)
		pthread_cond_wait(&released, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static int kernel_threads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

static const char *errno_name(int e)
{
	return e == EAGAIN ? "EAGAIN" : e == ENOMEM ? "ENOMEM" : e == EINVAL ? "EINVAL" : "other";
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 60000;
	if (n < 1)
		return 2;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	long made = 0;
	int err = 0;
	while (made < n && (err = pthread_create(&t[made], &attr, wait_for_release, NULL)) == 0)
		made++;
	if (made == n)
		printf("alive %ld kernel-threads %d\n", made, kernel_threads());
	else
		printf("failed at %ld: pthread_create: %s (%s)\n", made, errno_name(err), strerror(err));
	fflush(stdout);
	pthread_mutex_lock(&lock);
	release = 1;
	pthread_cond_broadcast(&released);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	return made == n ? 0 : 1;
}
