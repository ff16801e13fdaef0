/* The obsolete pthread_attr_setstackaddr names a stack's top, as glibc's
 * does on x86-64, and a pthread_attr_setstacksize after it keeps that top
 * and moves the bottom (glibc stores the top): the thread then runs inside
 * [top - size, top), in either order of the two calls.  A top below the
 * size cannot be a stack: pthread_create says EINVAL. */
#include "check.h"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"   /* the obsolete calls are the point */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

static char mem[256 * 1024] __attribute__((aligned(4096)));

static void *where(void *arg)
{
	*(uintptr_t *)arg = (uintptr_t)TEST_HERE();
	return NULL;
}

static void run_inside(pthread_attr_t *a, char *lo, char *hi)
{
	pthread_t t;
	uintptr_t sp = 0;
	CHECK_OK(pthread_create(&t, a, where, &sp));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sp > (uintptr_t)lo && sp < (uintptr_t)hi);
}

int main(void)
{
	char *top = mem + sizeof mem;
	void *addr;
	size_t size;
	pthread_attr_t a;

	/* setstackaddr, then setstacksize: the top stays */
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstackaddr(&a, top));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &size));
	CHECK(addr == top - 64 * 1024 && size == 64 * 1024);
	CHECK_OK(pthread_attr_getstackaddr(&a, &addr));
	CHECK(addr == top);
	run_inside(&a, top - 64 * 1024, top);
	CHECK_OK(pthread_attr_destroy(&a));

	/* setstacksize, then setstackaddr */
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 128 * 1024));
	CHECK_OK(pthread_attr_setstackaddr(&a, top));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &size));
	CHECK(addr == top - 128 * 1024 && size == 128 * 1024);
	run_inside(&a, top - 128 * 1024, top);
	CHECK_OK(pthread_attr_destroy(&a));

	/* setstack, then a smaller setstacksize: the top stays */
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstack(&a, mem, sizeof mem));
	CHECK_OK(pthread_attr_setstacksize(&a, 32 * 1024));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &size));
	CHECK(addr == top - 32 * 1024 && size == 32 * 1024);
	run_inside(&a, top - 32 * 1024, top);
	CHECK_OK(pthread_attr_destroy(&a));

	/* a top below its size */
	pthread_t t;
	uintptr_t sp;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstackaddr(&a, (void *)4096));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	CHECK_EQ(pthread_create(&t, &a, where, &sp), EINVAL);
	CHECK_EQ(pthread_attr_setstackaddr(&a, NULL), EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));
	return 0;
}
