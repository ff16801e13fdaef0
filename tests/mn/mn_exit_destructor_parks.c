/*
 * mn_exit_destructor_parks — a UT whose key destructor parks (a contended
 * mutex) still ends, and its joiner returns, when it resumes on another VP.
 *
 * A UT's exit runs its keys' destructors first; under M:N a destructor that
 * waits may be resumed by the other VP, and the exit must then finish on
 * the VP it now runs on.  (The exit once handed its stack to the VP it had
 * started on: that VP's next exit overwrote the hand-off, the UT stayed
 * EXITING for ever and pthread_join never returned — the jemalloc storm's
 * hang, whose free() takes a mutex in a destructor.)
 *
 * ROUNDS rounds of NUT UTs: each sets a key whose destructor locks one
 * shared mutex, adds to a counter and sleeps briefly holding it (so the
 * others park behind it), and returns its index.  Asserted: every join
 * returns its UT's value, the counter equals the number of UTs, and with two
 * VPs some destructor ended on a kernel thread other than the one it began
 * on (else the test proved nothing about M:N).
 */
#include "mn_test.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 40, NUT = 16 };

static pthread_key_t key;
static pthread_mutex_t dm = PTHREAD_MUTEX_INITIALIZER;
static long destructed;                 /* under dm */
static _Atomic int moved;               /* destructors that changed kernel thread */

static void destructor(void *v)
{
	(void)v;
	pid_t before = (pid_t)syscall(SYS_gettid);
	CHECK_OK(pthread_mutex_lock(&dm));
	destructed++;
	struct timespec ts = { 0, 20000 };   /* hold it: the others park */
	nanosleep(&ts, NULL);
	CHECK_OK(pthread_mutex_unlock(&dm));
	if ((pid_t)syscall(SYS_gettid) != before)
		moved++;
}

static void *body(void *arg)
{
	CHECK_OK(pthread_setspecific(key, arg ? arg : &key));
	/* spin a little so that the UTs spread over both VPs */
	for (volatile int i = 0; i < 20000; i++)
		;
	return arg;
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_OK(pthread_key_create(&key, destructor));
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t t[NUT];
		for (intptr_t i = 0; i < NUT; i++)
			CHECK_OK(pthread_create(&t[i], NULL, body, (void *)i));
		for (intptr_t i = 0; i < NUT; i++) {
			void *ret = NULL;
			CHECK_OK(pthread_join(t[i], &ret));
			CHECK(ret == (void *)i);
		}
	}
	CHECK_OK(pthread_mutex_lock(&dm));
	CHECK_EQ(destructed, (long)ROUNDS * NUT);
	CHECK_OK(pthread_mutex_unlock(&dm));
	if (s.vps >= 2)
		CHECK(moved >= 1);
	return 0;
}
