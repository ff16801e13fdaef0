/*
 * old_abi_condvar — a program as built against glibc before 2.3.2, which
 * binds pthread_cond_*@GLIBC_2.2.5: that ABI promises only one word of
 * condition variable (glibc's compat code keeps a pointer there).  The
 * object here is that one word followed by a guard, which must survive;
 * a waiter and a signaller must still meet, and destroy must succeed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct old_cond {
	void *word;
	uint64_t guard;
};

#define OLD(name) __asm__(".symver old_" #name ", pthread_cond_" #name "@GLIBC_2.2.5")
int old_init(struct old_cond *, const pthread_condattr_t *);
int old_destroy(struct old_cond *);
int old_wait(struct old_cond *, pthread_mutex_t *);
int old_signal(struct old_cond *);
int old_broadcast(struct old_cond *);
OLD(init);
OLD(destroy);
OLD(wait);
OLD(signal);
OLD(broadcast);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct old_cond cv = { NULL, 0x5afe5afe5afe5afeull };
static int stage;

static void *waiter(void *unused)
{
	pthread_mutex_lock(&lock);
	stage = 1;
	old_broadcast(&cv);
	while (stage != 2)
		old_wait(&cv, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	pthread_t t;
	int rc = old_init(&cv, NULL);
	pthread_create(&t, NULL, waiter, NULL);
	pthread_mutex_lock(&lock);
	while (stage != 1)
		old_wait(&cv, &lock);
	stage = 2;
	old_signal(&cv);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	rc |= old_destroy(&cv);
	printf("stage %d rc %d guard %s\n", stage, rc, cv.guard == 0x5afe5afe5afe5afeull ? "intact" : "overwritten");
	return 0;
}
