/* Absurd stack sizes are refused with glibc's errors, never a crash:
 * a size or guard whose rounding to pages, or whose sum, overflows size_t
 * makes pthread_create return EINVAL (glibc 2.36 does the same); one that
 * fits size_t but not the address space is EAGAIN; below PTHREAD_STACK_MIN
 * pthread_attr_setstacksize says EINVAL.  The same holds for the default
 * stack set with pthread_setattr_default_np: every create with NULL
 * attributes answers EINVAL until a sane default is back.  Nothing is left
 * behind by the failures. */
#include "check.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

static void *nothing(void *arg) { return arg; }

/* pthread_create's answer for stack size `size` and guard `guard`. */
static int create_with(size_t size, size_t guard)
{
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, size));
	CHECK_OK(pthread_attr_setguardsize(&a, guard));
	int e = pthread_create(&t, &a, nothing, (void *)7);
	if (e == 0) {
		void *r;
		CHECK_OK(pthread_join(t, &r));
		CHECK(r == (void *)7);
	}
	CHECK_OK(pthread_attr_destroy(&a));
	return e;
}

static uint64_t live(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.threads_live;
}

int main(void)
{
	const size_t page = 4096;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_EQ(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
	CHECK_EQ(pthread_attr_setstacksize(&a, 0), EINVAL);
	CHECK_OK(pthread_attr_setstacksize(&a, SIZE_MAX));
	CHECK_OK(pthread_attr_setguardsize(&a, SIZE_MAX));   /* glibc takes any */
	CHECK_OK(pthread_attr_destroy(&a));

	uint64_t live0 = live();
	/* the size rounds past SIZE_MAX */
	CHECK_EQ(create_with(SIZE_MAX, page), EINVAL);
	CHECK_EQ(create_with(SIZE_MAX - page + 2, page), EINVAL);
	/* the size rounds fine, size + guard wraps */
	CHECK_EQ(create_with(SIZE_MAX - page + 1, page), EINVAL);
	CHECK_EQ(create_with(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1), EINVAL);
	CHECK_EQ(create_with(PTHREAD_STACK_MIN, SIZE_MAX - page + 1), EINVAL);
	/* the guard rounds past SIZE_MAX */
	CHECK_EQ(create_with(PTHREAD_STACK_MIN, SIZE_MAX), EINVAL);
	/* representable, but larger than any address space */
	CHECK_EQ(create_with((size_t)1 << 62, page), EAGAIN);
	CHECK_EQ(create_with(PTHREAD_STACK_MIN, (size_t)1 << 62), EAGAIN);
	CHECK_EQ(live(), live0);
	/* sane sizes still work, odd ones rounded up */
	CHECK_OK(create_with(PTHREAD_STACK_MIN + 1, 1));
	CHECK_OK(create_with(PTHREAD_STACK_MIN, 0));

	/* an absurd default: accepted as glibc does, refused at create */
	pthread_attr_t d, saved;
	pthread_t t;
	CHECK_OK(pthread_getattr_default_np(&saved));
	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_setstacksize(&d, SIZE_MAX));
	CHECK_OK(pthread_setattr_default_np(&d));
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pthread_create(&t, NULL, nothing, NULL), EINVAL);
	size_t got;
	pthread_attr_t now;
	CHECK_OK(pthread_getattr_default_np(&now));
	CHECK_OK(pthread_attr_getstacksize(&now, &got));
	CHECK(got == SIZE_MAX);
	CHECK_OK(pthread_attr_destroy(&now));
	/* an explicit size still works meanwhile */
	CHECK_OK(create_with(64 * 1024, page));
	/* a default whose sum with its guard wraps */
	CHECK_OK(pthread_attr_setstacksize(&d, SIZE_MAX - page + 1));
	CHECK_OK(pthread_setattr_default_np(&d));
	CHECK_EQ(pthread_create(&t, NULL, nothing, NULL), EINVAL);
	CHECK_EQ(live(), live0);
	/* a sane default again: creates work */
	CHECK_OK(pthread_setattr_default_np(&saved));
	for (int i = 0; i < 3; i++) {
		CHECK_OK(pthread_create(&t, NULL, nothing, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	CHECK_OK(pthread_attr_destroy(&d));
	CHECK_OK(pthread_attr_destroy(&saved));
	return 0;
}
