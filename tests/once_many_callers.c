/* pthread_once from many UTs runs its routine exactly once, and no caller
 * returns before the routine has finished, even when the routine blocks
 * while the others arrive.  A routine that ends its thread instead of
 * returning leaves the control word un-done, so the next caller runs it
 * (POSIX's rule for a cancelled init routine).  A routine may use another
 * once control.  NULL arguments are EINVAL. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* NULL passed on purpose: hidden from the compiler (glibc's headers declare
 * nonnull) and from UBSan's nonnull check in the functions marked so. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

enum { CALLERS = 1000 };

static pthread_once_t once = PTHREAD_ONCE_INIT, inner = PTHREAD_ONCE_INIT;
static volatile int runs, inner_runs, done;

static void inner_init(void) { inner_runs++; }

static void slow_init(void)
{
	runs++;
	usleep(2000);                      /* every other caller arrives meanwhile */
	sched_yield();
	CHECK_OK(pthread_once(&inner, inner_init));
	done = 1;
}

static void *caller(void *arg)
{
	CHECK_OK(pthread_once(&once, slow_init));
	CHECK_EQ(done, 1);
	CHECK_EQ(runs, 1);
	return NULL;
}

static pthread_once_t quitter_once = PTHREAD_ONCE_INIT;
/* C11 atomics: main waits for quitter_entered, and the routine's second
 * run reads what the abandoned first one wrote (an abandoned routine
 * orders nothing). */
static atomic_int quitter_runs, quitter_entered;

static void quitting_init(void)
{
	if (quitter_runs++ == 0) {
		quitter_entered = 1;
		usleep(2000);                  /* the waiter arrives and parks on the word */
		pthread_exit((void *)1);       /* abandons the routine */
	}
}

static void *quitter(void *arg)
{
	CHECK_OK(pthread_once(&quitter_once, quitting_init));
	return NULL;
}

static void *quitter_waiter(void *arg)
{
	/* parks while the first quitter runs; then runs the routine itself */
	CHECK_OK(pthread_once(&quitter_once, quitting_init));
	CHECK_EQ(quitter_runs, 2);
	return (void *)2;
}

PASSES_NULL static void test_null_arguments(void)
{
	pthread_once_t fresh = PTHREAD_ONCE_INIT;
	CHECK_EQ(pthread_once(NUL(pthread_once_t *), inner_init), EINVAL);
	CHECK_EQ(pthread_once(&fresh, NUL(void (*)(void))), EINVAL);
}

int main(void)
{
	static pthread_t t[CALLERS];
	for (int i = 0; i < CALLERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, caller, NULL));
	for (int i = 0; i < CALLERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(runs, 1);
	CHECK_EQ(inner_runs, 1);
	CHECK_OK(pthread_once(&once, slow_init));   /* done: returns at once */
	CHECK_EQ(runs, 1);

	void *r1, *r2;
	pthread_t q, w;
	CHECK_OK(pthread_create(&q, NULL, quitter, NULL));
	/* the quitter runs the routine first (under several VPs the waiter
	 * could otherwise start first, on the other VP) */
	while (!quitter_entered)
		sched_yield();
	CHECK_OK(pthread_create(&w, NULL, quitter_waiter, NULL));
	CHECK_OK(pthread_join(q, &r1));
	CHECK_OK(pthread_join(w, &r2));
	CHECK(r1 == (void *)1);
	CHECK(r2 == (void *)2);
	CHECK_EQ(quitter_runs, 2);
	CHECK_OK(pthread_once(&quitter_once, quitting_init));
	CHECK_EQ(quitter_runs, 2);

	test_null_arguments();
	return 0;
}
