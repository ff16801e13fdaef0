/*
 * Transitive inheritance through a chain of 10 owners: O1 holds M1; Oi
 * holds Mi and waits for M(i-1); H (90) then waits for M10.  H's priority
 * must reach O1 through all ten, so that a medium UT (50) made ready by O1
 * runs only after the whole chain has unwound and H has run.  Each owner's
 * own priority is i, far below the medium UT.
 */
#include "prio_test.h"

#include <semaphore.h>

enum { N = 10, MEDIUM = 50, HIGH = 90 };

static pthread_mutex_t mx[N + 1];        /* mx[1..N] */
static sem_t release;                    /* lets O1 go on */
static const char *const got[N + 1] = { "", "O1", "O2", "O3", "O4", "O5", "O6", "O7", "O8", "O9", "O10" };

static void *medium(void *arg)
{
	pt_event("M");
	return arg;
}

static void *owner(void *arg)
{
	int i = (int)(intptr_t)arg;
	CHECK_OK(pthread_mutex_lock(&mx[i]));
	if (i == 1) {
		CHECK_OK(sem_wait(&release));
		pt_event(got[1]);
		pthread_t m = pt_spawn(MEDIUM, medium, NULL);   /* must not run now */
		CHECK_OK(pthread_detach(m));
	} else {
		CHECK_OK(pthread_mutex_lock(&mx[i - 1]));   /* blocks: the chain */
		pt_event(got[i]);
		CHECK_OK(pthread_mutex_unlock(&mx[i - 1]));
	}
	CHECK_OK(pthread_mutex_unlock(&mx[i]));
	return arg;
}

static void *high(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&mx[N]));
	pt_event("H");
	CHECK_OK(pthread_mutex_unlock(&mx[N]));
	return arg;
}

int main(void)
{
	/* The driver is the lowest: each UT it makes runs at once, up to the
	 * point where it blocks. */
	pt_set_self_fifo(1);
	for (int i = 1; i <= N; i++)
		pt_mutex_init(&mx[i], PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(sem_init(&release, 0, 0));
	pthread_t o[N + 1];
	for (int i = 1; i <= N; i++)
		o[i] = pt_spawn(1 + i, owner, (void *)(intptr_t)i);
	pthread_t h = pt_spawn(HIGH, high, NULL);     /* blocks on M10: all inherit 90 */
	CHECK_EQ(pt_n, 0);
	CHECK_OK(sem_post(&release));                 /* O1, at 90, runs at once */
	PT_EXPECT("O1", "O2", "O3", "O4", "O5", "O6", "O7", "O8", "O9", "O10", "H", "M");
	CHECK_OK(pthread_join(h, NULL));
	for (int i = 1; i <= N; i++)
		CHECK_OK(pthread_join(o[i], NULL));
	for (int i = 1; i <= N; i++)
		CHECK_OK(pthread_mutex_destroy(&mx[i]));
	return 0;
}
