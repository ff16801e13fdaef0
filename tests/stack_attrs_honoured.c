/* Stack attributes are honoured: a UT runs on the stack pthread_attr_setstack
 * gave it, gets at least the size pthread_attr_setstacksize asked for and
 * can use all of it, and the stacks of live UTs never overlap -- also after
 * pthread_setattr_default_np changes the default size while stacks of the
 * old size sit in the pool.  Stacks come back from the pool after join. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <weft.h>

struct probe {
	char *lo, *hi;     /* from pthread_getattr_np */
	uintptr_t sp;      /* an address in the UT's first frame */
	size_t use;        /* bytes of stack to touch below the frame */
	volatile int go;
};

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	pthread_attr_t a;
	void *lo;
	size_t size;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_destroy(&a));
	p->lo = lo;
	p->hi = (char *)lo + size;
	p->sp = (uintptr_t)TEST_HERE();
	CHECK((uintptr_t)p->lo < p->sp && p->sp < (uintptr_t)p->hi);
	if (p->use)
		test_touch_stack(p->use);
	while (!p->go)
		sched_yield();             /* stay alive while the others start */
	return NULL;
}

static pthread_t start(struct probe *p, const pthread_attr_t *a)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, a, probe_main, p));
	return t;
}

static void check_disjoint(struct probe *p, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (p[i].lo < p[j].hi && p[j].lo < p[i].hi) {
				fprintf(stderr, "stacks [%p, %p) and [%p, %p) overlap\n", (void *)p[i].lo,
					(void *)p[i].hi, (void *)p[j].lo, (void *)p[j].hi);
				CHECK(0);
			}
}

static void run_live(struct probe *p, pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		sched_yield();
	check_disjoint(p, n);
	for (int i = 0; i < n; i++)
		p[i].go = 1;
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

static void test_user_stack(void)
{
	static char mem[128 * 1024] __attribute__((aligned(64)));
	pthread_attr_t a;
	struct probe p = { .use = 64 * 1024, .go = 1 };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstack(&a, mem, sizeof mem));
	pthread_t t = start(&p, &a);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(p.lo == mem);
	CHECK(p.hi == mem + sizeof mem);
	CHECK(p.sp > (uintptr_t)mem && p.sp < (uintptr_t)(mem + sizeof mem));
	/* the same stack serves the next UT once the first is gone */
	t = start(&p, &a);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(p.sp > (uintptr_t)mem && p.sp < (uintptr_t)(mem + sizeof mem));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void test_sizes(void)
{
	static const size_t sizes[] = { 16384, 20000, 64 * 1024, 1 << 20, 8 << 20 };
	enum { N = sizeof sizes / sizeof sizes[0] };
	struct probe p[N];
	pthread_t t[N];
	for (int i = 0; i < N; i++) {
		pthread_attr_t a;
		CHECK_OK(pthread_attr_init(&a));
		CHECK_OK(pthread_attr_setstacksize(&a, sizes[i]));
		memset(&p[i], 0, sizeof p[i]);
		p[i].use = sizes[i] / 2;
		t[i] = start(&p[i], &a);
		CHECK_OK(pthread_attr_destroy(&a));
	}
	run_live(p, t, N);
	for (int i = 0; i < N; i++)
		CHECK((size_t)(p[i].hi - p[i].lo) >= sizes[i]);
}

static void test_pool_reuse(void)
{
	struct weft_stats s0, s1;
	pthread_t t;
	struct probe p = { .go = 1 };
	t = start(&p, NULL);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	for (int i = 0; i < 100; i++) {
		t = start(&p, NULL);
		CHECK_OK(pthread_join(t, NULL));
	}
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(s1.stacks_mapped, s0.stacks_mapped);
	CHECK(s1.stacks_reused >= s0.stacks_reused + 100);
}

/* Stacks of the old default size wait in the pool when the default grows;
 * a UT must never get one of them with the new size pretended. */
static void test_default_size_change(void)
{
	enum { N = 8 };
	struct probe p[N];
	pthread_t t[N];
	for (int i = 0; i < N; i++) {
		memset(&p[i], 0, sizeof p[i]);
		t[i] = start(&p[i], NULL);
	}
	run_live(p, t, N);                 /* N default stacks now pooled */

	pthread_attr_t d, saved;
	CHECK_OK(pthread_getattr_default_np(&saved));
	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_setstacksize(&d, 512 * 1024));
	CHECK_OK(pthread_setattr_default_np(&d));
	CHECK_OK(pthread_attr_destroy(&d));
	for (int i = 0; i < N; i++) {
		memset(&p[i], 0, sizeof p[i]);
		p[i].use = 400 * 1024;
		t[i] = start(&p[i], NULL);
	}
	run_live(p, t, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(p[i].hi - p[i].lo, 512 * 1024);

	/* and back: the 512 KiB stacks are not handed out as 256 KiB ones
	 * overlapping each other either */
	CHECK_OK(pthread_setattr_default_np(&saved));
	CHECK_OK(pthread_attr_destroy(&saved));
	for (int i = 0; i < N; i++) {
		memset(&p[i], 0, sizeof p[i]);
		p[i].use = 200 * 1024;
		t[i] = start(&p[i], NULL);
	}
	run_live(p, t, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(p[i].hi - p[i].lo, 256 * 1024);
}

int main(void)
{
	test_user_stack();
	test_sizes();
	test_pool_reuse();
	test_default_size_change();
	return 0;
}
