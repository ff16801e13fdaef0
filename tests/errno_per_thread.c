/* errno belongs to each UT: a value set before a yield, a sleep, a join or
 * a create is still there afterwards whatever the other UTs did to theirs
 * meanwhile, a new UT starts with errno 0, and an error a Weft call reports
 * through errno lands in the caller's errno only. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

enum { NT = 8, ROUNDS = 200 };

static void *churn(void *arg)
{
	int mine = (int)(intptr_t)arg;
	CHECK_EQ(errno, 0);                /* a fresh UT's errno */
	for (int i = 0; i < ROUNDS; i++) {
		errno = mine + i;
		sched_yield();
		CHECK_EQ(errno, mine + i);
		if (i % 50 == 0) {
			usleep(100);
			CHECK_EQ(errno, mine + i);
		}
	}
	return NULL;
}

static void *fail_a_sleep(void *arg)
{
	struct timespec bad = { 0, -5 };
	errno = 0;
	CHECK_EQ(nanosleep(&bad, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	sched_yield();
	CHECK_EQ(errno, EINVAL);
	return NULL;
}

int main(void)
{
	pthread_t t[NT];
	errno = 4242;
	for (int i = 0; i < NT; i++) {
		CHECK_OK(pthread_create(&t[i], NULL, churn, (void *)(intptr_t)(1000 * (i + 1))));
		CHECK_EQ(errno, 4242);
	}
	for (int i = 0; i < ROUNDS; i++) {
		sched_yield();
		CHECK_EQ(errno, 4242);
	}
	for (int i = 0; i < NT; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		CHECK_EQ(errno, 4242);
	}

	/* an error in another UT does not leak into ours */
	errno = 0;
	pthread_t f;
	CHECK_OK(pthread_create(&f, NULL, fail_a_sleep, NULL));
	CHECK_OK(pthread_join(f, NULL));
	CHECK_EQ(errno, 0);
	return 0;
}
