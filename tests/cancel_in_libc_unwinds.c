/*
 * cancel_in_libc_unwinds — built with -fexceptions (tests/CMakeLists.txt):
 * pthread_cleanup_push is then a cleanup attribute, not a registered
 * buffer, so glibc's own cancellation in the write under fprintf unwinds
 * the UT's frames itself and ends at the top of its stack
 * (runtime/libc_cancel.c, the landing).
 *
 * Invariants checked:
 *  1. A UT cancelled while it loops in fprintf (no other cancellation
 *     point) ends with PTHREAD_CANCELED; the cleanup attribute of the
 *     innermost frame ran, then the outer frame's pthread_cleanup_push
 *     handler, in that order, each once; its thread-specific destructor
 *     ran after them; the FILE is usable afterwards.
 *  2. Twenty such UTs, cancelled one after another while all of them
 *     write, each end cancelled with their handlers run: 20 inner, 20
 *     outer.
 *  3. UT 1 alone in a child cancels itself and writes: its frames' cleanup
 *     runs, the statement after the write never does, and the process
 *     ends as when the main thread exits (status 0, no other thread).
 */
#include "check.h"

#include <stdatomic.h>

#ifndef __EXCEPTIONS
#error "built with -fexceptions (tests/CMakeLists.txt)"
#endif

static FILE *devnull;
static atomic_int started, inner, outer, order_bad, dtors;
static pthread_key_t key;

static void inner_done(int *v)
{
	(void)v;
	atomic_fetch_add(&inner, 1);
}

static void outer_done(void *arg)
{
	(void)arg;
	/* each UT's inner cleanup runs before its outer handler */
	if (atomic_load(&inner) <= atomic_load(&outer))
		atomic_fetch_add(&order_bad, 1);
	atomic_fetch_add(&outer, 1);
}

static void dtor(void *v)
{
	(void)v;
	atomic_fetch_add(&dtors, 1);
}

static __attribute__((noinline)) void write_forever(void)
{
	int guard __attribute__((cleanup(inner_done))) = 0;
	(void)guard;
	atomic_fetch_add(&started, 1);
	for (;;) {
		fprintf(devnull, "x");
		sched_yield();
	}
}

static void *writer(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_setspecific(key, (void *)1));
	pthread_cleanup_push(outer_done, NULL);
	write_forever();
	pthread_cleanup_pop(0);
	return NULL;
}

static void child_cleanup(int *v)
{
	(void)v;
	fputs("cleanup\n", stderr);
}

static __attribute__((noinline)) void child_writes(void)
{
	int guard __attribute__((cleanup(child_cleanup))) = 0;
	(void)guard;
	CHECK_OK(pthread_cancel(pthread_self()));
	fprintf(devnull, "x");
	fputs("after\n", stderr);
}

static void main_cancels_itself(void *arg)
{
	(void)arg;
	child_writes();
	fputs("returned\n", stderr);
	_exit(3);
}

int main(void)
{
	devnull = fopen("/dev/null", "w");
	CHECK(devnull != NULL);
	CHECK_OK(setvbuf(devnull, NULL, _IONBF, 0));
	CHECK_OK(pthread_key_create(&key, dtor));
	void *r;

	/* 1 */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, writer, NULL));
	while (atomic_load(&started) < 1)
		sched_yield();
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&inner), 1);
	CHECK_EQ(atomic_load(&outer), 1);
	CHECK_EQ(atomic_load(&order_bad), 0);
	CHECK_EQ(atomic_load(&dtors), 1);
	CHECK(fprintf(devnull, "free") == 4);

	/* 2 */
	pthread_t many[20];
	for (int i = 0; i < 20; i++)
		CHECK_OK(pthread_create(&many[i], NULL, writer, NULL));
	while (atomic_load(&started) < 21)
		sched_yield();
	for (int i = 0; i < 20; i++) {
		CHECK_OK(pthread_cancel(many[i]));
		CHECK_OK(pthread_join(many[i], &r));
		CHECK(r == PTHREAD_CANCELED);
	}
	CHECK_EQ(atomic_load(&inner), 21);
	CHECK_EQ(atomic_load(&outer), 21);
	CHECK_EQ(atomic_load(&order_bad), 0);
	CHECK_EQ(atomic_load(&dtors), 21);

	/* 3 */
	char err[256];
	int st = test_in_child(main_cancels_itself, NULL, err, sizeof err);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK(strstr(err, "cleanup") != NULL);
	CHECK(strstr(err, "after") == NULL);
	CHECK(strstr(err, "returned") == NULL);
	fclose(devnull);
	return 0;
}
