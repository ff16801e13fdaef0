/*
 * storm_tick_create_join_sleep — the tick never reads half-changed runtime
 * state.  Eight copies at once, each under a short time slice, build a chain
 * of UTs that join one another (the UT table and the timer heap grow by
 * realloc and mmap while the tick comes), with a sleeper at the head and
 * sleeps along the chain (the heap churns), then unwind it.  Before the
 * signal contract, a tick that landed on the return from the mremap inside
 * the timer heap's realloc read the freed array: about 40% of such copies
 * died of SIGSEGV.  Every copy must finish with every link's value checked.
 */
#include "preempt_test.h"
#include "storm.h"

#include <stdint.h>

enum { COPIES = 8 };

static long n_links;
static pthread_t *chain;
static volatile int released;

static void *head(void *arg)
{
	while (!released)
		usleep(100);
	return arg;
}

static void *link_(void *arg)
{
	intptr_t i = (intptr_t)arg;
	void *r;
	if (i % 64 == 0) {
		struct timespec ts = { 0, 1000 * (i % 7) };
		nanosleep(&ts, NULL);
	}
	CHECK_OK(pthread_join(chain[i - 1], &r));
	CHECK_EQ((intptr_t)r, i - 1);
	return arg;
}

static int one_copy(void)
{
	preempt_test_slice(100000);
	n_links = test_iters(40000);   /* past 16,384: the heap moves by mremap */
	chain = calloc((size_t)n_links, sizeof *chain);
	CHECK(chain);
	CHECK_OK(pthread_create(&chain[0], NULL, head, (void *)0));
	for (intptr_t i = 1; i < n_links; i++)
		CHECK_OK(pthread_create(&chain[i], NULL, link_, (void *)i));
	released = 1;
	void *r;
	CHECK_OK(pthread_join(chain[n_links - 1], &r));
	CHECK_EQ((intptr_t)r, n_links - 1);
	struct weft_stats s = preempt_test_stats();
	CHECK(s.ticks > 0);
	CHECK_EQ(s.threads_live, 1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "copy") == 0)
		return one_copy();
	/* skips (77) here, before the copies, when slicing is unavailable */
	preempt_test_slice(100000);
	return storm_run(COPIES, 120) == 0 ? 0 : 1;
}
