/* 100,000 create+join in sequence: every return value comes back, every
 * handle is dead afterwards, and stacks are reused rather than remapped. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <weft.h>

static void *echo(void *arg) { return (void *)((uintptr_t)arg * 3 + 1); }

int main(void)
{
	const int n = 100000 / TEST_SCALE;
	pthread_t prev = 0;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *ret = NULL;
		CHECK_OK(pthread_create(&t, NULL, echo, (void *)(uintptr_t)i));
		CHECK(t != prev);
		CHECK_OK(pthread_join(t, &ret));
		CHECK_EQ((uintptr_t)ret, (uintptr_t)i * 3 + 1);
		CHECK_EQ(pthread_join(t, NULL), ESRCH);
		prev = t;
	}
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.threads_created, n);
	CHECK_EQ(s.threads_exited, n);
	CHECK_EQ(s.threads_live, 1);
	/* one slab: the rest came from the pool (under M:N each VP maps one
	 * more, its idle context's: docs/architecture.md, "M:N") */
	CHECK(s.stacks_mapped <= 64 + (s.vps > 1 ? s.vps : 0));
	return 0;
}
