/*
 * cleanup_handlers_run_on_exit — pthread_cleanup_push/pop as glibc's header
 * compiles them in C (the __pthread_register_cancel ABI): pop(1) runs the
 * handler, pop(0) does not, and pthread_exit runs every handler still
 * pushed, innermost first, across nested functions; the old
 * _pthread_cleanup_push ABI too.  The exit value survives the unwind.
 */
#include "check.h"

#include <pthread.h>

static char trace[64];
static int ntrace;

static void note(void *arg)
{
	trace[ntrace++] = (char)(intptr_t)arg;
	trace[ntrace] = 0;
}

static void *pop_execute_or_not(void *unused)
{
	pthread_cleanup_push(note, (void *)'a');
	pthread_cleanup_push(note, (void *)'b');
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(1);
	return (void *)7;
}

static void inner_exit(void)
{
	pthread_cleanup_push(note, (void *)'3');
	pthread_exit((void *)42);
	pthread_cleanup_pop(0);
}

static void *exit_from_nested(void *unused)
{
	pthread_cleanup_push(note, (void *)'1');
	pthread_cleanup_push(note, (void *)'2');
	inner_exit();
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *exit_after_pops(void *unused)
{
	pthread_cleanup_push(note, (void *)'x');
	pthread_cleanup_pop(1);
	pthread_cleanup_push(note, (void *)'y');
	pthread_exit((void *)5);
	pthread_cleanup_pop(0);
	return NULL;
}

/* The pre-2.3.3 ABI, which old binaries call directly. */
void _pthread_cleanup_push(struct _pthread_cleanup_buffer *, void (*)(void *), void *);
void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *, int);

static void *old_abi(void *unused)
{
	struct _pthread_cleanup_buffer outer, inner;
	_pthread_cleanup_push(&outer, note, (void *)'o');
	_pthread_cleanup_push(&inner, note, (void *)'i');
	_pthread_cleanup_pop(&inner, 1);
	_pthread_cleanup_push(&inner, note, (void *)'j');
	pthread_exit(NULL);
	return NULL;
}

static void run(void *(*fn)(void *), void *want_ret, const char *want_trace)
{
	pthread_t t;
	void *ret;
	ntrace = 0;
	trace[0] = 0;
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == want_ret);
	if (strcmp(trace, want_trace) != 0) {
		fprintf(stderr, "trace \"%s\", want \"%s\"\n", trace, want_trace);
		exit(1);
	}
}

int main(void)
{
	run(pop_execute_or_not, (void *)7, "a");
	run(exit_from_nested, (void *)42, "321");
	run(exit_after_pops, (void *)5, "xy");
	run(old_abi, NULL, "ijo");
	return 0;
}
