/*
 * guest_keys_and_exit — thread-specific values of kernel threads Weft did
 * not make (glibc's own pthread_create, found with dlvsym, as jemalloc's
 * background thread is made), and their end.
 *
 * Asserts: a foreign thread reads NULL before it stores a value, reads
 * back its own value, and never sees or changes a UT's (UTs check theirs
 * over and over while foreign threads store); pthread_setspecific on a
 * foreign thread succeeds whether the VP is busy or idle (jemalloc's
 * "Error setting tsd" came from ENOMEM here); when a foreign thread ends,
 * its keys' destructors run exactly once each, on that thread, with its
 * values; 300 foreign threads made and ended one after another leave the
 * runtime working, with the number of live threads back where it was.
 */
#include "foreign.h"

#include <stdatomic.h>
#include <sys/syscall.h>

#define FOREIGN 300
#define CHECKS 20000


static pthread_key_t key, key2;
static atomic_int dtor_calls, dtor2_calls, dtor_wrong, ut_dtor_calls;
static int values[FOREIGN];
static int ut_values[2];
static pid_t foreign_tid[FOREIGN];
static atomic_int foreign_ok;
static volatile int uts_on = 1;

static void dtor(void *v)
{
	int *p = v;
	if (p == &ut_values[0] || p == &ut_values[1]) {
		atomic_fetch_add(&ut_dtor_calls, 1);   /* a UT's, at its exit */
		return;
	}
	int i = (int)(p - values);
	if (i < 0 || i >= FOREIGN || (pid_t)syscall(SYS_gettid) != foreign_tid[i])
		atomic_fetch_add(&dtor_wrong, 1);
	/* a destructor may store again: the next round sees it */
	atomic_fetch_add(&dtor_calls, 1);
}

static void dtor2(void *v)
{
	if (v != &key2)
		atomic_fetch_add(&dtor_wrong, 1);
	atomic_fetch_add(&dtor2_calls, 1);
}

/* A UT that owns a value and checks it while foreign threads store. */
static void *ut_checker(void *arg)
{
	CHECK_OK(pthread_setspecific(key, arg));
	long n = 0;
	while (uts_on || n < CHECKS) {
		CHECK(pthread_getspecific(key) == arg);
		CHECK(pthread_getspecific(key2) == NULL);
		if (++n % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void *foreign(void *arg)
{
	int i = (int)(intptr_t)arg;
	foreign_tid[i] = (pid_t)syscall(SYS_gettid);
	if (pthread_getspecific(key) != NULL || pthread_getspecific(key2) != NULL)
		return NULL;
	if (pthread_setspecific(key, &values[i]) != 0)
		return NULL;
	for (int r = 0; r < 50; r++)
		if (pthread_getspecific(key) != &values[i])
			return NULL;
	/* every other thread stores a second value, and clears it again on
	 * some: a NULL value has no destructor call */
	if (i % 2 == 0) {
		if (pthread_setspecific(key2, &key2) != 0)
			return NULL;
		if (i % 4 == 0 && pthread_setspecific(key2, NULL) != 0)
			return NULL;
	}
	pthread_t self = pthread_self();
	if (!pthread_equal(self, pthread_self()))
		return NULL;
	atomic_fetch_add(&foreign_ok, 1);
	return NULL;
}

int main(void)
{
	FOREIGN_SETUP(glibc_create, glibc_join);

	CHECK_OK(pthread_key_create(&key, dtor));
	CHECK_OK(pthread_key_create(&key2, dtor2));
	static int main_value;
	CHECK_OK(pthread_setspecific(key, &main_value));

	/* phase 1: foreign threads store while the VP is idle (no UT but
	 * main, which waits in glibc's join, off the VP after the monitor's
	 * threshold or with nothing to run) */
	for (int i = 0; i < FOREIGN / 3; i++) {
		pthread_t g;
		CHECK_OK(glibc_create(&g, NULL, foreign, (void *)(intptr_t)i));
		CHECK_OK(glibc_join(g, NULL));
	}
	CHECK(pthread_getspecific(key) == &main_value);

	/* phase 2: while two UTs run and check their own values */
	struct weft_stats s0 = test_stats();
	pthread_t u[2];
	for (int j = 0; j < 2; j++)
		CHECK_OK(pthread_create(&u[j], NULL, ut_checker, &ut_values[j]));
	for (int i = FOREIGN / 3; i < FOREIGN; i++) {
		pthread_t g;
		CHECK_OK(glibc_create(&g, NULL, foreign, (void *)(intptr_t)i));
		CHECK_OK(glibc_join(g, NULL));
		if (i % 20 == 0)
			sched_yield();
	}
	uts_on = 0;
	for (int j = 0; j < 2; j++)
		CHECK_OK(pthread_join(u[j], NULL));

	CHECK_EQ(atomic_load(&foreign_ok), FOREIGN);
	CHECK_EQ(atomic_load(&ut_dtor_calls), 2);
	CHECK_EQ(atomic_load(&dtor_calls), FOREIGN);
	/* key2 stays set on i % 2 == 0 && i % 4 != 0 */
	int expect2 = 0;
	for (int i = 0; i < FOREIGN; i++)
		expect2 += i % 2 == 0 && i % 4 != 0;
	CHECK_EQ(atomic_load(&dtor2_calls), expect2);
	CHECK_EQ(atomic_load(&dtor_wrong), 0);
	CHECK(pthread_getspecific(key) == &main_value);

	/* every guest ended with its thread: as many exits as creations
	 * since phase 2 began, besides the two UTs */
	struct weft_stats s1 = test_stats();
	CHECK_EQ(s1.threads_created - s0.threads_created, s1.threads_exited - s0.threads_exited);
	CHECK(s1.threads_created - s0.threads_created >= 2);

	/* the runtime goes on: a UT made now runs and is joined */
	pthread_t last;
	CHECK_OK(pthread_create(&last, NULL, ut_checker, &ut_values[0]));
	CHECK_OK(pthread_join(last, NULL));
	CHECK_OK(pthread_key_delete(key));
	CHECK_OK(pthread_key_delete(key2));
	return 0;
}
