/* What a cancelled UT runs on its way out: its cleanup handlers innermost
 * first (only those still pushed; a popped one does not run), in the old
 * _pthread_cleanup_push ABI too, then its key destructors; cancellation
 * points reached inside a handler do not act again; and a cancelled
 * pthread_once init routine leaves the once control free, so the next
 * caller runs the routine. */
#include "check.h"
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <stdatomic.h>

/* glibc's header no longer declares the old ABI; old binaries still use it. */
void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*routine)(void *), void *arg);
void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute);

static char trace[32];
static int ntrace;
static pthread_key_t key;

static void note(void *arg)
{
	trace[ntrace++] = (char)(long)arg;
}

/* A handler that reaches cancellation points: they must not act again. */
static void sleepy_note(void *arg)
{
	usleep(100);
	pthread_testcancel();
	note(arg);
}

static void key_destructor(void *v) { note(v); }

static void *nested(void *arg)
{
	CHECK_OK(pthread_setspecific(key, (void *)'k'));
	pthread_cleanup_push(note, (void *)'a');
	pthread_cleanup_push(note, (void *)'x');
	pthread_cleanup_pop(0);                 /* popped: never runs */
	pthread_cleanup_push(sleepy_note, (void *)'b');
	struct _pthread_cleanup_buffer old;
	_pthread_cleanup_push_defer(&old, note, (void *)'c');
	pthread_cleanup_push(note, (void *)'d');
	for (;;)
		sleep(1000);
	pthread_cleanup_pop(0);
	_pthread_cleanup_pop_restore(&old, 0);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

static void handlers_innermost_first_then_keys(void)
{
	pthread_t t;
	void *ret;
	CHECK_OK(pthread_key_create(&key, key_destructor));
	CHECK_OK(pthread_create(&t, NULL, nested, NULL));
	usleep(1000);
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	trace[ntrace] = 0;
	CHECK(strcmp(trace, "dcbak") == 0);
}

/* ---- pthread_once ---- */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int init_calls, init_done;

static void init_routine(void)
{
	if (++init_calls == 1) {
		sleep(1000);                     /* cancelled here */
		CHECK(0);
	}
	init_done = 1;
}

static void *call_once(void *arg)
{
	CHECK_OK(pthread_once(&once, init_routine));
	return NULL;
}

static void cancelled_once_routine_runs_again(void)
{
	pthread_t first, second;
	void *ret;
	CHECK_OK(pthread_create(&first, NULL, call_once, NULL));
	while (init_calls == 0)
		sched_yield();
	CHECK_OK(pthread_create(&second, NULL, call_once, NULL));
	sched_yield();                            /* it waits for the first */
	CHECK_OK(pthread_cancel(first));
	CHECK_OK(pthread_join(first, &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_OK(pthread_join(second, &ret));
	CHECK_EQ(init_calls, 2);
	CHECK(init_done);
	CHECK_OK(pthread_once(&once, init_routine));
	CHECK_EQ(init_calls, 2);
}

int main(void)
{
	handlers_innermost_first_then_keys();
	cancelled_once_routine_runs_again();
	return 0;
}
