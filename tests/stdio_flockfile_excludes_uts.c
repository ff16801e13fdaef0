/*
 * stdio_flockfile_excludes_uts — flockfile(f) held by one thread keeps every
 * other thread's flockfile(f) waiting and its ftrylockfile(f) failing, as
 * POSIX says, between UTs of one VP too (glibc's tst-stdio1: glibc's lock
 * knows its owner by the VP's kernel thread, so a second UT's flockfile
 * returned at once).  Checked:
 *  - main holds f (twice: it is recursive); a UT's ftrylockfile fails and
 *    its flockfile waits, with only that UT waiting (another UT runs), until
 *    main's last funlockfile; then it has f;
 *  - a UT holding f1 keeps no one from f2;
 *  - eight UTs each take f 2,000 times and, holding it, yield and count:
 *    never two inside at once, and the count is exact, under a 100 µs slice.
 */
#include "check.h"
#include "preempt_test.h"

#include <errno.h>
#include <stdatomic.h>

static FILE *f, *f2;
static atomic_int waiter_has, tried, other_ran;

static void *waiter(void *arg)
{
	(void)arg;
	CHECK(ftrylockfile(f) != 0);
	atomic_store(&tried, 1);
	flockfile(f);                     /* waits for main's last funlockfile */
	atomic_store(&waiter_has, 1);
	funlockfile(f);
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	while (!atomic_load(&tried))
		sched_yield();
	for (int i = 0; i < 100; i++) {
		atomic_fetch_add(&other_ran, 1);
		sched_yield();
	}
	/* f2 is free while f is held */
	CHECK_EQ(ftrylockfile(f2), 0);
	funlockfile(f2);
	flockfile(f2);
	funlockfile(f2);
	return NULL;
}

enum { WORKERS = 8, ROUNDS = 2000 };
static atomic_int inside;
static long total;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS / TEST_SCALE; i++) {
		flockfile(f);
		CHECK_EQ(atomic_fetch_add(&inside, 1), 0);
		long t = total;
		if (i % 3 == 0)
			sched_yield();
		total = t + 1;
		CHECK_EQ(atomic_fetch_sub(&inside, 1), 1);
		funlockfile(f);
		if (i % 7 == 0)
			sched_yield();
	}
	return NULL;
}

int main(void)
{
	f = tmpfile();
	f2 = tmpfile();
	CHECK(f && f2);

	flockfile(f);
	flockfile(f);                     /* recursive */
	pthread_t w, o;
	CHECK_OK(pthread_create(&w, NULL, waiter, NULL));
	CHECK_OK(pthread_create(&o, NULL, other, NULL));
	while (!atomic_load(&tried))
		sched_yield();
	while (atomic_load(&other_ran) < 100)
		sched_yield();                /* the waiter waits; the other UT runs */
	usleep(20000);
	CHECK_EQ(atomic_load(&waiter_has), 0);
	funlockfile(f);
	for (int i = 0; i < 100; i++)
		sched_yield();
	CHECK_EQ(atomic_load(&waiter_has), 0);   /* still held once */
	funlockfile(f);
	CHECK_OK(pthread_join(w, NULL));
	CHECK_EQ(atomic_load(&waiter_has), 1);
	CHECK_OK(pthread_join(o, NULL));

	/* main may take it again, and a try succeeds when no one holds it */
	CHECK_EQ(ftrylockfile(f), 0);
	funlockfile(f);

	weft_timeslice_set(100000);
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (int i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(total, (long)WORKERS * (ROUNDS / TEST_SCALE));
	fclose(f);
	fclose(f2);
	return 0;
}
