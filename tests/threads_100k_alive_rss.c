/* 100,000 UTs alive at once, all parked, cost under 16 KiB of resident
 * memory each, keep their guard pages, and fit in far fewer kernel mappings
 * than vm.max_map_count (65530 here) although every stack is guarded; then
 * all of them run to completion.
 *
 * The UTs form a join chain: UT i joins UT i-1, and UT 0 sleeps until main
 * lets it go, so every UT but one is parked on a join and nothing spins. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <weft.h>

enum { N = 100000 / TEST_SCALE };

static volatile int release;
static int started, finished;     /* updated atomically: the tick may preempt a UT anywhere */
static pthread_t chain[N];

static void *head(void *arg)
{
	__atomic_fetch_add(&started, 1, __ATOMIC_RELAXED);
	while (!release)
		usleep(1000);
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *link_(void *arg)
{
	__atomic_fetch_add(&started, 1, __ATOMIC_RELAXED);
	pthread_t prev = chain[(intptr_t)arg - 1];
	CHECK_OK(pthread_join(prev, NULL));
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Resident bytes an idle UT may cost.  Under AddressSanitizer with
 * detect_stack_use_after_return=1 each UT also has ASan's fake stack, where
 * its frames with addressable locals live: its flags and a page per frame
 * size in use, about three pages, ASan's memory rather than Weft's.  And
 * in any ASan build each UT's stack has a shadow page of its own (stacks
 * lie more than 32 KiB apart, and a shadow page covers 32 KiB), and the
 * build's unoptimised, redzoned frames take a parked UT's stack a page
 * deeper than the release build's: at 13.7 KiB a UT (an AMD EPYC guest,
 * 2026-12-02), one more local in the switch's inlined frames (c650c27)
 * crossed into a further page, 17.5 KiB, where the release build's stayed
 * 4.4 KiB.  Those two pages are ASan's too. */
#ifdef WEFT_TEST_SANITIZE
extern int __asan_option_detect_stack_use_after_return;
static long budget(void)
{
	return 24 * 1024 + (__asan_option_detect_stack_use_after_return ? 16 * 1024 : 0);
}
#else
static long budget(void)
{
	return 16 * 1024;
}
#endif

static long resident_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	CHECK(f != NULL);
	long size, rss;
	CHECK_EQ(fscanf(f, "%ld %ld", &size, &rss), 2);
	fclose(f);
	return rss;
}

static void check_guarded(pthread_t t)
{
	pthread_attr_t a;
	size_t guard;
	CHECK_OK(pthread_getattr_np(t, &a));
	CHECK_OK(pthread_attr_getguardsize(&a, &guard));
	CHECK_EQ(guard, (size_t)sysconf(_SC_PAGESIZE));
	CHECK_OK(pthread_attr_destroy(&a));
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int maps0 = (int)test_mappings();
	long rss0 = resident_pages();

	for (intptr_t i = 0; i < N; i++)
		CHECK_OK(pthread_create(&chain[i], NULL, i ? link_ : head, (void *)i));
	/* every UT runs once and parks (a tick may send one round the queue
	 * again before it gets there, so wait for it rather than assume) */
	int64_t limit = test_now_ns() + 10000000000ll;
	while (__atomic_load_n(&started, __ATOMIC_RELAXED) < N && test_now_ns() < limit)
		usleep(2000);
	CHECK_EQ(started, N);
	CHECK_EQ(finished, 0);

	long rss1 = resident_pages();
	int maps1 = (int)test_mappings();
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.threads_live, N + 1);
	long per_ut = (rss1 - rss0) * page / N;
	if (per_ut >= budget()) {
		fprintf(stderr, "%ld bytes resident per idle UT\n", per_ut);
		CHECK(per_ut < budget());
	}
	/* two mappings per guarded stack would be 200,000 */
	if (maps1 - maps0 >= N / 16) {
		fprintf(stderr, "%d new mappings for %d UTs\n", maps1 - maps0, N);
		CHECK(maps1 - maps0 < N / 16);
	}
	check_guarded(chain[0]);
	check_guarded(chain[N / 2]);
	check_guarded(chain[N - 1]);
	if (getenv("WEFT_TEST_VERBOSE"))
		fprintf(stderr, "%d UTs: %ld bytes resident each, %d new mappings\n", N, per_ut,
			maps1 - maps0);

	release = 1;
	CHECK_OK(pthread_join(chain[N - 1], NULL));
	CHECK_EQ(finished, N);
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.threads_live, 1);
	return 0;
}
