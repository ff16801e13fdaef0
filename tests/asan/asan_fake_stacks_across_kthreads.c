/*
 * asan_fake_stacks_across_kthreads — with ASan's fake stacks on
 * (detect_stack_use_after_return=1), a UT's frames stay on a fake stack of
 * its own while it goes on on other kernel threads: another VP's under
 * WEFT_VPS=2, a spare's after a blocking call Weft hands off (flock), the
 * home of the kernel thread it blocked on.  Two kernel threads that named
 * one fake stack at once would cut frames from it for two UTs: one UT's
 * bytes would show in another's, or ASan would report a frame it did not
 * make.
 *
 * Each of NWORKERS UTs descends DEPTH frames, each with a 128-byte local
 * (address taken: a fake frame) filled with a pattern of its UT, round and
 * depth; at the bottom it yields or takes a flock the other UTs contend
 * for, so that it blocks in the kernel and comes back on whichever kernel
 * thread carries it then.  On the way up every frame's bytes are checked.
 * Asserted: every local was on a fake stack (ASan's own
 * __asan_addr_is_in_fake_stack on the running fake stack), every pattern
 * survived, frames lived across changes of kernel thread (counted by
 * gettid), the blocking calls were handed off (weft_stats), and ASan
 * reported nothing (a report ends the run with ASan's exit code).
 */
#include "check.h"
#include "weft.h"

#include <fcntl.h>
#include <pthread.h>
#include <sanitizer/asan_interface.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define NWORKERS 6
#define ROUNDS 1000
#define DEPTH 6
#define LOCAL 128

static char path[64];
static atomic_ulong frames_checked, frames_moved, not_fake;

static unsigned char pattern(int id, int round, int depth, int i)
{
	return (unsigned char)(id * 31 + round * 7 + depth * 3 + i);
}

static __attribute__((noinline)) void fill(volatile unsigned char *b, int id, int round, int depth)
{
	for (int i = 0; i < LOCAL; i++)
		b[i] = pattern(id, round, depth, i);
}

static __attribute__((noinline)) void check_frame(volatile unsigned char *b, int id, int round, int depth)
{
	for (int i = 0; i < LOCAL; i++)
		if (b[i] != pattern(id, round, depth, i)) {
			fprintf(stderr, "UT %d round %d depth %d: byte %d is %u, not %u (another UT's frame?)\n",
				id, round, depth, i, b[i], pattern(id, round, depth, i));
			abort();
		}
}

static __attribute__((noinline)) void bottom(int id, int round, int fd)
{
	if (round % 2 == 0) {
		sched_yield();
		return;
	}
	CHECK(flock(fd, LOCK_EX) == 0);     /* contended: blocks in the kernel, handed off */
	sched_yield();                      /* the others queue on the lock meanwhile */
	CHECK(flock(fd, LOCK_UN) == 0);
}

static __attribute__((noinline)) void descend(int id, int round, int depth, int fd)
{
	volatile unsigned char local[LOCAL];
	fill(local, id, round, depth);
	if (!__asan_addr_is_in_fake_stack(__asan_get_current_fake_stack(), (void *)local, NULL, NULL))
		atomic_fetch_add(&not_fake, 1);
	pid_t before = gettid();
	if (depth)
		descend(id, round, depth - 1, fd);
	else
		bottom(id, round, fd);
	check_frame(local, id, round, depth);
	atomic_fetch_add(&frames_checked, 1);
	if (gettid() != before)
		atomic_fetch_add(&frames_moved, 1);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	int fd = open(path, O_RDWR);        /* an open file description of its own */
	CHECK(fd >= 0);
	for (int r = 0; r < ROUNDS; r++)
		descend(id, r, DEPTH, fd);
	CHECK(close(fd) == 0);
	return NULL;
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/weft-fake-stacks-%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(close(fd) == 0);

	/* three waves: a wave's UTs end (ASan frees their fake stacks) on
	 * whichever kernel thread carries them then, and the next wave's get
	 * new ones on the same kernel threads */
	for (int wave = 0; wave < 3; wave++) {
		pthread_t t[NWORKERS];
		for (int i = 0; i < NWORKERS; i++)
			CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(wave * NWORKERS + i)));
		for (int i = 0; i < NWORKERS; i++)
			CHECK_OK(pthread_join(t[i], NULL));
	}
	CHECK(unlink(path) == 0);

	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	unsigned long want = 3ul * NWORKERS * ROUNDS * (DEPTH + 1);
	printf("frames checked %lu (of %lu), moved to another kernel thread %lu, not on a fake stack %lu; "
	       "handoffs %lu, kernel threads made %lu, vps %lu\n",
	       (unsigned long)frames_checked, want, (unsigned long)frames_moved, (unsigned long)not_fake,
	       (unsigned long)s.handoffs, (unsigned long)s.kthreads_made, (unsigned long)s.vps);
	CHECK(frames_checked == want);
	CHECK(not_fake == 0);            /* fake stacks stayed on with several kernel threads */
	CHECK(s.handoffs > 0);           /* the flocks were handed off the VP */
	CHECK(frames_moved > 0);         /* frames lived across a change of kernel thread */
	return 0;
}
