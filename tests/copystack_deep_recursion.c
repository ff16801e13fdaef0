/*
 * copystack_deep_recursion — a copy-stack UT recursing megabytes deep keeps
 * every frame while other copy-stack UTs use the run stack between its
 * calls (each switch saves and restores its whole live stack), and one
 * that recurses past its run stack is caught by the run stack's guard and
 * named (fault.c), not left to corrupt memory.
 */
#include "check.h"

#include <signal.h>
#include <sys/wait.h>

#define FRAME_BYTES 1024
static volatile long sink;

/* depth frames of FRAME_BYTES each; at every 256th level, yield (another
 * copy-stack UT runs on the run stack meanwhile); on the way back each
 * frame checks its bytes. */
static long deep(long id, int depth)
{
	volatile unsigned char buf[FRAME_BYTES];
	for (int i = 0; i < FRAME_BYTES; i++)
		buf[i] = (unsigned char)(id * 31 + depth * 7 + i);
	if (depth % 256 == 0)
		sched_yield();
	long r = depth > 0 ? deep(id, depth - 1) : 0;
	for (int i = 0; i < FRAME_BYTES; i++)
		if (buf[i] != (unsigned char)(id * 31 + depth * 7 + i))
			return -1;
	return r < 0 ? r : r + 1;
}

static int depth_of(long id) { return 4096 + 512 * (int)id; }   /* 4 MiB and more */

static void *diver(void *arg)
{
	long id = (long)arg;
	return (void *)deep(id, depth_of(id));
}

static void *chatter(void *arg)
{
	volatile long local = (long)arg;
	for (int i = 0; i < 5000; i++) {
		sched_yield();
		CHECK_EQ(local, (long)arg);
	}
	return NULL;
}

static volatile int keep_going = 1;
static long recurse(int depth)
{
	volatile char pad[512];
	pad[0] = (char)depth;
	sink += pad[0];
	if (!keep_going)
		return depth;
	return recurse(depth + 1) + pad[sizeof pad - 1];
}

static void *overflow(void *arg)
{
	sink = recurse(0);
	return NULL;
}

static void overflow_child(void *arg)
{
	pthread_t t = test_spawn_copy(overflow, NULL, 0);
	CHECK_OK(pthread_setname_np(t, "deep-copy"));
	pthread_join(t, NULL);
}

int main(void)
{
	pthread_t d[3], c[2];
	for (long i = 0; i < 3; i++)
		d[i] = test_spawn_copy(diver, (void *)i, 0);
	for (long i = 0; i < 2; i++)
		c[i] = test_spawn_copy(chatter, (void *)(i + 100), 0);
	for (long i = 0; i < 3; i++) {
		void *r;
		CHECK_OK(pthread_join(d[i], &r));
		CHECK_EQ((long)r, depth_of(i) + 1);
	}
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	/* the divers' frames are copied when they share a run stack (one
	 * per VP) with another UT: always on one VP or two; with more (the
	 * suite runs under WEFT_VPS=1 and 2), each may have one to itself */
	if (test_stats().vps <= 2)
		CHECK(test_stats().stack_bytes_copied > (uint64_t)4 << 20);

	/* past the run stack: the guard, and a line naming the thread */
	static char err[16384];
	int st = test_in_child(overflow_child, NULL, err, sizeof err);
#ifndef WEFT_TEST_SANITIZE
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
#else
	CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 0);
#endif
	CHECK(strstr(err, "thread ") && strstr(err, "(deep-copy) overflowed its stack"));
	return 0;
}
