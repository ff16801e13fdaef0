/* Myth's locks under contention: N threads each take the lock M times and
 * yield while holding it, so every acquisition but the first finds it held
 * and waits; the count is exact and no two holders overlap.  Waiters get
 * the lock in the order they came (hand-off); any thread may unlock a lock
 * another holds, as Figure 1's word allows; unlocking a free lock does
 * nothing; trylock says EBUSY; a static all-zero lock (and TH_MUTEX_-
 * INITIALIZER, and Figure 1's type name `mutex`) is ready to use. */
#include "../check.h"
#include <errno.h>
#include <weft/myth.h>

#define N 8
#define M 500

static mutex lock;                     /* all zero: free */
static th_mutex_t lock2 = TH_MUTEX_INITIALIZER;
static long count;
static int holders, overlaps;
static int order[N], norder;

static void *hammer(void *arg)
{
	for (int i = 0; i < M; i++) {
		CHECK_EQ(th_mutex_lock(&lock), 0);
		if (++holders != 1)
			overlaps++;
		long c = count;
		th_yield();                 /* everyone else piles up on the lock */
		count = c + 1;
		holders--;
		CHECK_EQ(th_mutex_unlock(&lock), 0);
	}
	return NULL;
}

static void *queue_up(void *arg)
{
	CHECK_EQ(th_mutex_lock(&lock2), 0);
	order[norder++] = (int)(long)arg;
	CHECK_EQ(th_mutex_unlock(&lock2), 0);
	return NULL;
}

static void *unlock_other(void *arg)
{
	CHECK_EQ(th_mutex_unlock(&lock2), 0);
	return NULL;
}

int main(void)
{
	/* a short slice: Myth threads are never sliced, so the orders checked
	 * here are those of yields and hand-offs alone even with ticks coming */
	CHECK_OK(weft_timeslice_set(1000 * 1000));

	th_thread_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = th_fork(hammer, NULL);
	for (int i = 0; i < N; i++)
		CHECK(th_join(t[i]) == NULL);
	CHECK_EQ(count, (long)N * M);
	CHECK_EQ(overlaps, 0);

	/* FIFO hand-off: queue N waiters while we hold it */
	CHECK_EQ(th_mutex_lock(&lock2), 0);
	for (int i = 0; i < N; i++)
		t[i] = th_fork(queue_up, (void *)(long)i);
	th_yield();                         /* all of them wait now */
	CHECK_EQ(norder, 0);
	CHECK_EQ(th_mutex_unlock(&lock2), 0);
	for (int i = 0; i < N; i++)
		th_join(t[i]);
	for (int i = 0; i < N; i++)
		CHECK_EQ(order[i], i);

	/* another thread may release it; a free lock's unlock is a no-op */
	CHECK_EQ(th_mutex_lock(&lock2), 0);
	th_join(th_fork(unlock_other, NULL));
	CHECK_EQ(th_mutex_trylock(&lock2), 0);
	CHECK_EQ(th_mutex_trylock(&lock2), -1);
	CHECK_EQ(errno, EBUSY);
	CHECK_EQ(th_mutex_unlock(&lock2), 0);
	CHECK_EQ(th_mutex_unlock(&lock2), 0);
	th_mutex_t heap;
	CHECK_EQ(th_mutex_init(&heap), 0);
	CHECK_EQ(th_mutex_lock(&heap), 0);
	CHECK_EQ(th_mutex_destroy(&heap), -1);
	CHECK_EQ(errno, EBUSY);
	CHECK_EQ(th_mutex_unlock(&heap), 0);
	CHECK_EQ(th_mutex_destroy(&heap), 0);
	return 0;
}
