/* Dining philosophers, 5 and 100 of them, to completion: each fork is a
 * mutex, the last philosopher takes his forks in the other order, and every
 * philosopher eats the set number of meals while no fork is ever held by two.
 * Then spinlocks: mutual exclusion under yields, a spinner of higher priority
 * than the holder still lets the holder run (no spinning for ever), and the
 * error codes. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* NULL the compiler cannot see through (glibc's headers declare these
 * nonnull); PASSES_NULL keeps UBSan's nonnull check out of the callers. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

struct table {
	int n, meals;
	pthread_mutex_t *fork;
	volatile int *fork_user;     /* who holds each fork, -1 none */
	volatile int *eaten;
};

struct seat {
	struct table *t;
	int id;
};

static void take(struct table *t, int f, int id)
{
	CHECK_OK(pthread_mutex_lock(&t->fork[f]));
	CHECK_EQ(t->fork_user[f], -1);
	t->fork_user[f] = id;
}

static void put(struct table *t, int f, int id)
{
	CHECK_EQ(t->fork_user[f], id);
	t->fork_user[f] = -1;
	CHECK_OK(pthread_mutex_unlock(&t->fork[f]));
}

static void *philosopher(void *arg)
{
	struct seat *s = arg;
	struct table *t = s->t;
	int left = s->id, right = (s->id + 1) % t->n;
	int first = s->id == t->n - 1 ? right : left;
	int second = first == left ? right : left;
	for (int m = 0; m < t->meals; m++) {
		take(t, first, s->id);
		sched_yield();                     /* think with one fork */
		take(t, second, s->id);
		t->eaten[s->id]++;
		sched_yield();                     /* eat */
		put(t, second, s->id);
		put(t, first, s->id);
		sched_yield();
	}
	return NULL;
}

static void dine(int n, int meals)
{
	struct table t = { n, meals, calloc(n, sizeof(pthread_mutex_t)), calloc(n, sizeof(int)),
			   calloc(n, sizeof(int)) };
	struct seat *seats = calloc(n, sizeof *seats);
	pthread_t *th = calloc(n, sizeof *th);
	CHECK(t.fork && t.fork_user && t.eaten && seats && th);
	for (int i = 0; i < n; i++) {
		CHECK_OK(pthread_mutex_init(&t.fork[i], NULL));
		t.fork_user[i] = -1;
	}
	for (int i = 0; i < n; i++) {
		seats[i] = (struct seat){ &t, i };
		CHECK_OK(pthread_create(&th[i], NULL, philosopher, &seats[i]));
	}
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	for (int i = 0; i < n; i++) {
		CHECK_EQ(t.eaten[i], meals);
		CHECK_OK(pthread_mutex_destroy(&t.fork[i]));
	}
	free(t.fork);
	free((void *)t.fork_user);
	free((void *)t.eaten);
	free(seats);
	free(th);
}

/* ---- spinlocks ---- */
static pthread_spinlock_t sl;
static atomic_int spin_in, spin_count;   /* main reads spin_count without the lock */

static void *spin_worker(void *arg)
{
	for (int i = 0; i < test_iters(10000); i++) {
		CHECK_OK(pthread_spin_lock(&sl));
		CHECK_EQ(spin_in, 0);
		spin_in = 1;
		if (i % 3 == 0)
			sched_yield();
		spin_count++;
		spin_in = 0;
		CHECK_OK(pthread_spin_unlock(&sl));
	}
	return NULL;
}

static void *high_prio_spinner(void *arg)
{
	CHECK_OK(pthread_spin_lock(&sl));     /* held by main, lower priority */
	spin_count = -1;
	CHECK_OK(pthread_spin_unlock(&sl));
	return NULL;
}

PASSES_NULL static void spin_semantics(void)
{
	pthread_t t[4];
	CHECK_OK(pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t[i], NULL, spin_worker, NULL));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(spin_count, 4 * (test_iters(10000)));

	/* a higher-priority spinner must not starve the holder */
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = 20 };
	CHECK_OK(pthread_spin_lock(&sl));
	CHECK_EQ(pthread_spin_trylock(&sl), EBUSY);
	CHECK_EQ(pthread_spin_destroy(&sl), EBUSY);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_FIFO));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	CHECK_OK(pthread_create(&t[0], &a, high_prio_spinner, NULL));  /* runs now, waits */
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK(spin_count != -1);
	CHECK_OK(pthread_spin_unlock(&sl));   /* hands over; the spinner runs at once */
	test_await_on_many_vps(&spin_count, -1);   /* (or on its own VP, meanwhile) */
	CHECK_EQ(spin_count, -1);
	CHECK_OK(pthread_join(t[0], NULL));
	CHECK_EQ(pthread_spin_unlock(&sl), EPERM);   /* not held */
	CHECK_OK(pthread_spin_destroy(&sl));
	CHECK_EQ(pthread_spin_init(&sl, 42), EINVAL);
	CHECK_EQ(pthread_spin_init(NUL(pthread_spinlock_t *), 0), EINVAL);
	CHECK_EQ(pthread_spin_lock(NUL(pthread_spinlock_t *)), EINVAL);
	CHECK_EQ(pthread_spin_unlock(NUL(pthread_spinlock_t *)), EINVAL);
}

int main(void)
{
	dine(5, test_iters(2000));
	dine(100, test_iters(200));
	spin_semantics();
	return 0;
}
