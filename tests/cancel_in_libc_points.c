/*
 * cancel_in_libc_points — a cancellation point inside libc that Weft does
 * not wrap (the write under fprintf) acts on a pending request, for the
 * cancelled UT only (runtime/libc_cancel.c).
 *
 * Invariants checked:
 *  1. A UT looping in fprintf on an unbuffered FILE (sched_yield between,
 *     no other cancellation point) is cancelled: join gives
 *     PTHREAD_CANCELED, its pthread_cleanup_push handler ran once, and
 *     libc's own cleanup ran too: the FILE's lock is free (the main UT
 *     writes to it afterwards).
 *  2. Only the cancelled UT: while A, cancelled, waits for a mutex (not a
 *     cancellation point), B writes 2,000 times with fprintf and returns
 *     its value; A is cancelled at its first fprintf once it has the
 *     mutex, and its handler (which unlocks the mutex) ran.
 *  3. Disabled: a UT cancelled with cancellation disabled writes 200
 *     times; at its first write after enabling it is cancelled, and the
 *     statement after that write never runs.
 *  4. No cleanup buffer: a UT with none is still cancelled in fprintf,
 *     and its thread-specific destructor runs (the exit went on in Weft).
 *  5. UT 1, alone in a child process, cancels itself and calls fprintf:
 *     its handler runs (it exits the child with 7).
 *  6. A request is never acted on in a UT after its target left: the
 *     main UT, after the cancelled UTs are joined, writes 100 times.
 *  7. A UT cancelled while ready, then resumed by a spare kernel thread
 *     (the main UT blocks in a call Weft cannot see, syscall(SYS_nanosleep),
 *     and the monitor hands the VP on: __weft_run_from_home), is cancelled
 *     at its first fprintf: it completes none.
 */
#include "check.h"

#include <stdatomic.h>
#include <sys/syscall.h>

static FILE *devnull;
static atomic_int started, handled, key_dtor, b_writes;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t key;

static void on_cleanup(void *arg)
{
	(void)arg;
	atomic_fetch_add(&handled, 1);
}

static void *looping_writer(void *arg)
{
	(void)arg;
	pthread_cleanup_push(on_cleanup, NULL);
	atomic_fetch_add(&started, 1);
	for (;;) {
		fprintf(devnull, "x");
		sched_yield();
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void unlock_m(void *arg)
{
	(void)arg;
	atomic_fetch_add(&handled, 1);
	pthread_mutex_unlock(&m);
}

static void *waits_then_writes(void *arg)
{
	(void)arg;
	pthread_cleanup_push(unlock_m, NULL);
	atomic_fetch_add(&started, 1);
	pthread_mutex_lock(&m);           /* not a cancellation point */
	fprintf(devnull, "a");
	pthread_cleanup_pop(1);
	return (void *)1;
}

static void *many_writes(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++) {
		fprintf(devnull, "b");
		atomic_fetch_add(&b_writes, 1);
		if (i % 100 == 0)
			sched_yield();
	}
	return (void *)42;
}

static atomic_int may_enable, after_enable, disabled_writes;

static void *disabled_then_enabled(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL));
	pthread_cleanup_push(on_cleanup, NULL);
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&may_enable))
		sched_yield();
	for (int i = 0; i < 200; i++) {
		fprintf(devnull, "d");
		atomic_fetch_add(&disabled_writes, 1);
	}
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
	fprintf(devnull, "e");
	atomic_store(&after_enable, 1);
	pthread_cleanup_pop(0);
	return NULL;
}

static void dtor(void *v)
{
	(void)v;
	atomic_fetch_add(&key_dtor, 1);
}

static void *no_buffer_writer(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_setspecific(key, (void *)1));
	atomic_fetch_add(&started, 1);
	for (;;) {
		fprintf(devnull, "n");
		sched_yield();
	}
	return NULL;
}

static void await_started(int n)
{
	while (atomic_load(&started) < n)
		sched_yield();
}

/* Start fn, wait until `started` reaches n, cancel it, and join it: it
 * must have ended cancelled. */
static void cancel_when_started(void *(*fn)(void *), int n)
{
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	await_started(n);
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
}

static atomic_int go, spare_writes;

static void *writes_after_go(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&go))
		sched_yield();
	for (;;) {
		fprintf(devnull, "s");
		atomic_fetch_add(&spare_writes, 1);
		sched_yield();
	}
	return NULL;
}

static void exit7(void *arg)
{
	(void)arg;
	fflush(NULL);
	_exit(7);
}

static void main_cancels_itself(void *arg)
{
	(void)arg;
	pthread_cleanup_push(exit7, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	fprintf(devnull, "not cancelled\n");
	pthread_cleanup_pop(0);
	_exit(1);
}

int main(void)
{
	devnull = fopen("/dev/null", "w");
	CHECK(devnull != NULL);
	CHECK_OK(setvbuf(devnull, NULL, _IONBF, 0));   /* a write per fprintf */
	CHECK_OK(pthread_key_create(&key, dtor));
	void *r;

	/* 1 */
	cancel_when_started(looping_writer, 1);
	CHECK_EQ(atomic_load(&handled), 1);
	CHECK(fprintf(devnull, "free") == 4);    /* its lock was let go */

	/* 2 */
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t w, b;
	CHECK_OK(pthread_create(&w, NULL, waits_then_writes, NULL));
	await_started(2);
	test_settle();                            /* w parks on m */
	CHECK_OK(pthread_cancel(w));
	CHECK_OK(pthread_create(&b, NULL, many_writes, NULL));
	CHECK_OK(pthread_join(b, &r));
	CHECK(r == (void *)42);
	CHECK_EQ(atomic_load(&b_writes), 2000);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(w, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&handled), 2);
	CHECK_OK(pthread_mutex_trylock(&m));      /* the handler unlocked it */
	CHECK_OK(pthread_mutex_unlock(&m));

	/* 3 */
	pthread_t d;
	CHECK_OK(pthread_create(&d, NULL, disabled_then_enabled, NULL));
	await_started(3);
	CHECK_OK(pthread_cancel(d));
	atomic_store(&may_enable, 1);
	CHECK_OK(pthread_join(d, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&disabled_writes), 200);
	CHECK_EQ(atomic_load(&after_enable), 0);
	CHECK_EQ(atomic_load(&handled), 3);

	/* 4 */
	cancel_when_started(no_buffer_writer, 4);
	CHECK_EQ(atomic_load(&key_dtor), 1);

	/* 5 */
	char err[256];
	int st = test_in_child(main_cancels_itself, NULL, err, sizeof err);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 7);

	/* 6 */
	for (int i = 0; i < 100; i++)
		CHECK(fprintf(devnull, "m") == 1);

	/* 7 */
	pthread_t s;
	CHECK_OK(pthread_create(&s, NULL, writes_after_go, NULL));
	await_started(5);
	CHECK_OK(pthread_cancel(s));
	atomic_store(&go, 1);
	struct timespec nap = { 0, 300000000 };
	CHECK_EQ(syscall(SYS_nanosleep, &nap, NULL), 0);
	CHECK_OK(pthread_join(s, &r));
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&spare_writes), 0);
	fclose(devnull);
	return 0;
}
