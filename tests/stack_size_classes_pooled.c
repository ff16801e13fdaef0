/* Stacks of every size a program sets come from a pool, as default ones
 * do (runtime/stack.c, "The pool"): after the first create of a size and
 * guard, create+join of that geometry maps no stack again.  Each UT gets
 * exactly the size and guard it asked for, whole and writable; the live
 * stacks of many sizes at once (more sizes than the pool keeps classes,
 * so classes are retired while their stacks are in use) never overlap one
 * another's stack or guard; and a stack with no guard, whose low end the
 * program owns, is never handed on with the pages the last UT protected. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <weft.h>

struct probe {
	char *lo, *hi;              /* from pthread_getattr_np */
	size_t guard;
	size_t use;                 /* bytes of stack to write below the frame */
	volatile int go;            /* 1: end at once; else wait for it */
	int protect_low;            /* leave the lowest page PROT_NONE */
};

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	pthread_attr_t a;
	void *lo;
	size_t size;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_getguardsize(&a, &p->guard));
	CHECK_OK(pthread_attr_destroy(&a));
	p->lo = lo;
	p->hi = (char *)lo + size;
	char *sp = TEST_HERE();
	CHECK(p->lo < sp && sp < p->hi);
	if (p->use)
		test_touch_stack(p->use);
	if (p->protect_low)
		CHECK_OK(mprotect(p->lo, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE));
	while (!p->go)
		sched_yield();
	return NULL;
}

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static uint64_t stacks_mapped(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.stacks_mapped;
}

static void one(const pthread_attr_t *a, struct probe *p)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, a, probe_main, p));
	CHECK_OK(pthread_join(t, NULL));
}

/* create+join of one geometry: the size and guard asked, the whole stack
 * writable, and no stack mapped after the first. */
static void steady_state(size_t size, size_t guard)
{
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, size));
	CHECK_OK(pthread_attr_setguardsize(&a, guard));
	struct probe p = { .go = 1, .use = size / 2 };
	one(&a, &p);
	uint64_t before = stacks_mapped();
	for (int i = 0; i < 300; i++) {
		p = (struct probe){ .go = 1, .use = i % 50 == 0 ? size / 2 : 0 };
		one(&a, &p);
		CHECK_EQ((size_t)(p.hi - p.lo), page_round(size));
		CHECK_EQ(p.guard, page_round(guard));
	}
	CHECK_EQ(stacks_mapped(), before);
	CHECK_OK(pthread_attr_destroy(&a));
}

/* Three live UTs of each of 12 geometries at once, twice over: no two
 * stacks, guards included, overlap. */
static void many_classes_live(void)
{
	enum { SIZES = 12, EACH = 3, N = SIZES * EACH };
	static struct probe p[N];
	pthread_t t[N];
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			int k = (i + round * 5) % SIZES;
			size_t size = (size_t)(24 + 8 * k) << 10;
			size_t guard = (size_t)(1 + k % 3) << 12;
			pthread_attr_t a;
			CHECK_OK(pthread_attr_init(&a));
			CHECK_OK(pthread_attr_setstacksize(&a, size));
			CHECK_OK(pthread_attr_setguardsize(&a, guard));
			p[i] = (struct probe){ .use = size / 2 };
			CHECK_OK(pthread_create(&t[i], &a, probe_main, &p[i]));
			CHECK_OK(pthread_attr_destroy(&a));
			/* start it now: its stack is written while the others exist */
			while (!p[i].hi)
				sched_yield();
			CHECK_EQ((size_t)(p[i].hi - p[i].lo), page_round(size));
			CHECK_EQ(p[i].guard, guard);
		}
		for (int i = 0; i < N; i++)
			for (int j = i + 1; j < N; j++) {
				char *ilo = p[i].lo - p[i].guard, *jlo = p[j].lo - p[j].guard;
				if (ilo < p[j].hi && jlo < p[i].hi) {
					fprintf(stderr, "stacks %d [%p,%p) and %d [%p,%p) overlap\n", i,
						(void *)ilo, (void *)p[i].hi, j, (void *)jlo, (void *)p[j].hi);
					CHECK(0);
				}
			}
		for (int i = 0; i < N; i++)
			p[i].go = 1;
		for (int i = 0; i < N; i++)
			CHECK_OK(pthread_join(t[i], NULL));
	}
}

/* guardsize 0: the program's own low end.  A UT that leaves its lowest
 * page PROT_NONE does not hand that page to the next UT of its size. */
static void unguarded_not_inherited(void)
{
	const size_t size = 96u << 10;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, size));
	CHECK_OK(pthread_attr_setguardsize(&a, 0));
	for (int i = 0; i < 50; i++) {
		struct probe p = { .go = 1, .protect_low = 1 };
		one(&a, &p);
		CHECK_EQ(p.guard, 0);
		/* the next one writes down to its last page */
		struct probe q = { .go = 1, .use = size / 2 };
		one(&a, &q);
		CHECK_EQ((size_t)(q.hi - q.lo), size);
	}
	CHECK_OK(pthread_attr_destroy(&a));
}

int main(void)
{
	static const size_t sizes[] = { 16u << 10, 64u << 10, 200u << 10, 1u << 20, 8u << 20 };
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		steady_state(sizes[i], 4096);
		steady_state(sizes[i], 64u << 10);
	}
	many_classes_live();
	/* the first sizes again, after their classes made room for others */
	steady_state(64u << 10, 4096);
	unguarded_not_inherited();
	return 0;
}
