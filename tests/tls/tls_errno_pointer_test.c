/*
 * tls_errno_pointer_test — errno is each UT's own, and a pointer to it
 * taken before a switch still points at the same UT's errno after (the
 * compiler may keep &errno across calls).  Two UTs set errno through a
 * saved pointer, switch, and check theirs; main's stays untouched.  The
 * program has a __thread variable of its own, so its UTs have their own
 * TLS; tls_values_per_ut covers the C++ side.
 */
#include "check.h"

#include <errno.h>

__thread volatile int own_tls = 1;   /* gives the program TLS of its own */
static long wrong;

static void *run(void *arg)
{
	int me = (int)(intptr_t)arg;
	int *mine = &errno;
	for (int i = 0; i < 1000; i++) {
		*mine = me * 1000 + i;
		sched_yield();
		if (errno != me * 1000 + i || *mine != me * 1000 + i || &errno != mine)
			wrong++;
	}
	return (void *)(intptr_t)own_tls;
}

int main(void)
{
	errno = 77;
	int *main_errno = &errno;
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, run, (void *)1));
	CHECK_OK(pthread_create(&b, NULL, run, (void *)2));
	void *r;
	CHECK_OK(pthread_join(a, &r));
	CHECK_EQ((intptr_t)r, 1);
	CHECK_OK(pthread_join(b, NULL));
	CHECK_EQ(wrong, 0);
	CHECK(&errno == main_errno);
	CHECK_EQ(*main_errno, 77);
	return 0;
}
