/*
 * deadline_far_past_times_out — an absolute deadline far in the past, on
 * either clock, times out at once instead of waiting.  tv_sec near
 * LLONG_MIN used to overflow the CLOCK_REALTIME conversion and wait for
 * ever.  Out-of-range tv_nsec is EINVAL, never a wait.
 */
#include "check.h"

#include <errno.h>
#include <limits.h>
#include <semaphore.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;   /* held by the holder */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER; /* write-held by the holder */
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;  /* main's, for cond waits */
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t held, release, never;

static void *holder(void *a)
{
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_rwlock_wrlock(&rw));
	sem_post(&held);
	while (sem_wait(&release) != 0)
		;
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_mutex_unlock(&m));
	return a;
}

static void check_times_out(clockid_t clk, const struct timespec *ts, pthread_t h)
{
	CHECK_EQ(pthread_mutex_clocklock(&m, clk, ts), ETIMEDOUT);
	CHECK_EQ(pthread_rwlock_clockwrlock(&rw, clk, ts), ETIMEDOUT);
	CHECK_EQ(pthread_rwlock_clockrdlock(&rw, clk, ts), ETIMEDOUT);
	CHECK_OK(pthread_mutex_lock(&cm));
	CHECK_EQ(pthread_cond_clockwait(&c, &cm, clk, ts), ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&cm));
	errno = 0;
	CHECK_EQ(sem_clockwait(&never, clk, ts), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(pthread_clockjoin_np(h, NULL, clk, ts), ETIMEDOUT);
	if (clk == CLOCK_REALTIME) {
		CHECK_EQ(pthread_mutex_timedlock(&m, ts), ETIMEDOUT);
		CHECK_EQ(pthread_rwlock_timedwrlock(&rw, ts), ETIMEDOUT);
		CHECK_EQ(pthread_rwlock_timedrdlock(&rw, ts), ETIMEDOUT);
		CHECK_OK(pthread_mutex_lock(&cm));
		CHECK_EQ(pthread_cond_timedwait(&c, &cm, ts), ETIMEDOUT);
		CHECK_OK(pthread_mutex_unlock(&cm));
		errno = 0;
		CHECK_EQ(sem_timedwait(&never, ts), -1);
		CHECK_EQ(errno, ETIMEDOUT);
		CHECK_EQ(pthread_timedjoin_np(h, NULL, ts), ETIMEDOUT);
	}
}

int main(void)
{
	CHECK_OK(sem_init(&held, 0, 0));
	CHECK_OK(sem_init(&release, 0, 0));
	CHECK_OK(sem_init(&never, 0, 0));
	pthread_t h;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	while (sem_wait(&held) != 0)
		;

	const struct timespec past[] = {
		{ LLONG_MIN, 0 }, { LLONG_MIN + 1, 999999999 }, { -(LLONG_MAX / 2), 5 },
		{ -1, 0 }, { 0, 0 }, { 1, 0 },
	};
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		check_times_out(CLOCK_REALTIME, &past[i], h);
		check_times_out(CLOCK_MONOTONIC, &past[i], h);
	}

	/* tv_nsec out of range: EINVAL, never a wait */
	const struct timespec bad[] = { { LLONG_MIN, 1000000000 }, { 0, -1 }, { LLONG_MAX, LONG_MAX } };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ(pthread_mutex_timedlock(&m, &bad[i]), EINVAL);
		CHECK_OK(pthread_mutex_lock(&cm));
		CHECK_EQ(pthread_cond_timedwait(&c, &cm, &bad[i]), EINVAL);
		CHECK_OK(pthread_mutex_unlock(&cm));
		errno = 0;
		CHECK_EQ(sem_timedwait(&never, &bad[i]), -1);
		CHECK_EQ(errno, EINVAL);
		CHECK_EQ(pthread_timedjoin_np(h, NULL, &bad[i]), EINVAL);
	}

	CHECK_OK(sem_post(&release));
	CHECK_OK(pthread_join(h, NULL));
	return 0;
}
