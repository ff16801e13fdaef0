/* Barriers: 1,000 rounds of 16 UTs with exactly one serial waiter per
 * round and nobody leaving a round before everyone arrived; bad counts and
 * busy destroy.  Unnamed semaphores: counts, hand-off to waiters, ping-pong,
 * timeouts no earlier than the deadline, EOVERFLOW, and the error codes
 * (sem_* return -1 and set errno). */
#include "check.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

/* NULL the compiler cannot see through (glibc's headers declare these
 * nonnull); PASSES_NULL keeps UBSan's nonnull check out of the callers. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

#define NT 16
static pthread_barrier_t bar;
static int rounds;
static int arrived[1000], serials[1000];   /* atomic updates: slices may end anywhere */

static void *barrier_worker(void *arg)
{
	for (int r = 0; r < rounds; r++) {
		__atomic_fetch_add(&arrived[r], 1, __ATOMIC_SEQ_CST);
		if ((intptr_t)arg & 1)
			sched_yield();
		int e = pthread_barrier_wait(&bar);
		CHECK(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD);
		CHECK_EQ(__atomic_load_n(&arrived[r], __ATOMIC_SEQ_CST), NT);           /* everyone got here first */
		if (e == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_fetch_add(&serials[r], 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void barrier_rounds_one_serial_each(void)
{
	pthread_t t[NT];
	rounds = test_iters(1000);
	CHECK_OK(pthread_barrier_init(&bar, NULL, NT));
	for (int i = 0; i < NT; i++)
		CHECK_OK(pthread_create(&t[i], NULL, barrier_worker, (void *)(intptr_t)i));
	for (int i = 0; i < NT; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	for (int r = 0; r < rounds; r++)
		CHECK_EQ(serials[r], 1);
	CHECK_OK(pthread_barrier_destroy(&bar));
}

static void *wait_on_bar(void *arg)
{
	return (void *)(intptr_t)pthread_barrier_wait(&bar);
}

PASSES_NULL static void barrier_errors(void)
{
	pthread_barrierattr_t a;
	pthread_t t;
	void *r;
	CHECK_EQ(pthread_barrier_init(&bar, NULL, 0), EINVAL);
	CHECK_EQ(pthread_barrier_init(NUL(pthread_barrier_t *), NULL, 2), EINVAL);
	CHECK_OK(pthread_barrierattr_init(&a));
	CHECK_OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_barrier_init(&bar, &a, 2));
	CHECK_OK(pthread_barrierattr_destroy(&a));
	CHECK_OK(pthread_create(&t, NULL, wait_on_bar, NULL));
	test_settle();
	CHECK_EQ(pthread_barrier_destroy(&bar), EBUSY);
	CHECK_EQ(pthread_barrier_wait(&bar), PTHREAD_BARRIER_SERIAL_THREAD);  /* last in */
	CHECK_OK(pthread_barrier_destroy(&bar));   /* at once, by the serial waiter */
	CHECK_OK(pthread_join(t, &r));
	CHECK_EQ((intptr_t)r, 0);
	/* count 1: every wait is serial */
	CHECK_OK(pthread_barrier_init(&bar, NULL, 1));
	CHECK_EQ(pthread_barrier_wait(&bar), PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_OK(pthread_barrier_destroy(&bar));
}

/* ---- semaphores ---- */
static sem_t a_sem, b_sem;
static long sem_rounds;

static void *sem_pong(void *arg)
{
	for (long i = 0; i < sem_rounds; i++) {
		CHECK_OK(sem_wait(&a_sem));
		CHECK_OK(sem_post(&b_sem));
	}
	return NULL;
}

static void sem_ping_pong(void)
{
	pthread_t t;
	int v;
	sem_rounds = test_iters(1000000);
	CHECK_OK(sem_init(&a_sem, 0, 0));
	CHECK_OK(sem_init(&b_sem, 0, 0));
	CHECK_OK(pthread_create(&t, NULL, sem_pong, NULL));
	for (long i = 0; i < sem_rounds; i++) {
		CHECK_OK(sem_post(&a_sem));
		CHECK_OK(sem_wait(&b_sem));
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(sem_getvalue(&a_sem, &v));
	CHECK_EQ(v, 0);
	CHECK_OK(sem_getvalue(&b_sem, &v));
	CHECK_EQ(v, 0);
}

static void *sem_taker(void *arg)
{
	CHECK_OK(sem_wait(&a_sem));
	return NULL;
}

static void sem_counts_and_handoff(void)
{
	int v;
	CHECK_OK(sem_init(&a_sem, 0, 3));
	CHECK_OK(sem_trywait(&a_sem));
	CHECK_OK(sem_wait(&a_sem));
	CHECK_OK(sem_getvalue(&a_sem, &v));
	CHECK_EQ(v, 1);
	CHECK_OK(sem_wait(&a_sem));
	CHECK_EQ(sem_trywait(&a_sem), -1);
	CHECK_EQ(errno, EAGAIN);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sem_taker, NULL));
	test_settle();                              /* t parks */
	CHECK_EQ(sem_destroy(&a_sem), -1);
	CHECK_EQ(errno, EBUSY);
	CHECK_OK(sem_post(&a_sem));                 /* handed to t, value stays 0 */
	CHECK_OK(sem_getvalue(&a_sem, &v));
	CHECK_EQ(v, 0);
	CHECK_EQ(sem_trywait(&a_sem), -1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(sem_destroy(&a_sem));
}

PASSES_NULL static void sem_timeouts_and_errors(void)
{
	const long wait_ns = 10 * 1000 * 1000;
	CHECK_OK(sem_init(&a_sem, 0, 0));
	for (int c = 0; c < 2; c++) {
		clockid_t clk = c ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		/* t0 first: time that passes between the two (a loaded machine
		 * preempting the kernel thread, a debug schedule switching at
		 * clock_gettime's end) shortens the wait, not dt's bound */
		int64_t t0 = test_now_ns();
		struct timespec ts = test_time_in(clk, wait_ns);
		CHECK_EQ(c ? sem_clockwait(&a_sem, clk, &ts) : sem_timedwait(&a_sem, &ts), -1);
		CHECK_EQ(errno, ETIMEDOUT);
		int64_t dt = test_now_ns() - t0;
		CHECK(dt >= wait_ns - 1000000);
		CHECK(dt < 100 * wait_ns);   /* generous: loaded machines, debug schedules */
	}
	struct timespec bad = { 0, 1000000000 };
	CHECK_EQ(sem_timedwait(&a_sem, &bad), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(sem_clockwait(&a_sem, CLOCK_THREAD_CPUTIME_ID, &bad), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(sem_timedwait(&a_sem, NUL(const struct timespec *)), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_OK(sem_post(&a_sem));
	CHECK_OK(sem_timedwait(&a_sem, &bad));     /* available: time not read */
	CHECK_OK(sem_destroy(&a_sem));

	CHECK_EQ(sem_init(&a_sem, 0, (unsigned)SEM_VALUE_MAX + 1), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(sem_init(NUL(sem_t *), 0, 0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_OK(sem_init(&a_sem, 0, SEM_VALUE_MAX - 1));
	CHECK_OK(sem_post(&a_sem));
	CHECK_EQ(sem_post(&a_sem), -1);
	CHECK_EQ(errno, EOVERFLOW);
	int v;
	CHECK_OK(sem_getvalue(&a_sem, &v));
	CHECK_EQ(v, SEM_VALUE_MAX);                  /* unharmed */
	CHECK_OK(sem_wait(&a_sem));
	CHECK_OK(sem_getvalue(&a_sem, &v));
	CHECK_EQ(v, SEM_VALUE_MAX - 1);
	CHECK_EQ(sem_getvalue(&a_sem, NUL(int *)), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(sem_wait(NUL(sem_t *)), -1);
	CHECK_EQ(sem_post(NUL(sem_t *)), -1);
	CHECK_OK(sem_destroy(&a_sem));
}

int main(void)
{
	barrier_rounds_one_serial_each();
	barrier_errors();
	sem_ping_pong();
	sem_counts_and_handoff();
	sem_timeouts_and_errors();
	return 0;
}
