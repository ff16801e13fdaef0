/*
 * mn_fork_child_identity — a child forked from a thread on a VP other than
 * the first, while a spare kernel thread carries that VP, names a live
 * glibc thread as its identity.
 *
 * glibc knows the threads of one VP as one thread: THREAD_SELF (the word
 * at %fs:0x10) in each UT's thread block is the VP's identity, the block of
 * the VP's first kernel thread (docs/mn.md).  A UT whose blocking call
 * (fsync) handed the VP on comes back on a spare; if it forks there, the
 * VP's first kernel thread does not exist in the child, and glibc's fork
 * gives its block back to glibc's cache, with the tid in it zeroed.  Until
 * the twenty-fourth stop the child went on naming that block: the next
 * kernel thread glibc made in the child could get it, and share its
 * identity with the UTs of that VP.  Now the identity moves to the kernel
 * thread that forked.
 *
 * What it checks, in the child, with glibc 2.36's layout (struct pthread's
 * tid at 720 bytes; skipped on another glibc): the identity's tid is the
 * child's own (glibc writes the forking thread's, zeroes the others'), and
 * so is the tid in the UT's own block.  The UT knows it runs on a VP other
 * than VP 0 by its identity: not the one main had before any thread
 * existed (VP 0's).  main spins without calling Weft meanwhile, so the UT
 * has the other VP to itself; when the UT finds itself on VP 0, main is on
 * VP 1 (a join ends on the VP of the thread joined), and main makes the
 * attempt while the UT spins on VP 0.  A round where the fsync was not
 * handed on, or its caller came back on VP 0, is tried again.  Two VPs
 * only.
 */
#include "mn_test.h"

#include <weft.h>

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define GLIBC_TID_OFFSET 720
#define ATTEMPTS 100
#define WANTED 5

static void *vp0_identity;
static volatile int done, swap, main_done;
static char path[] = "/tmp/weft-mn-identity-XXXXXX";
static int file;

static void *identity(void)
{
	void *self;
	__asm__ volatile("movq %%fs:0x10, %0" : "=r"(self));
	return self;
}

static pid_t identity_tid(void) { return *(volatile pid_t *)((char *)identity() + GLIBC_TID_OFFSET); }

static pid_t own_block_tid(void)
{
	pid_t tid;
	__asm__ volatile("movl %%fs:%c1, %0" : "=r"(tid) : "i"(GLIBC_TID_OFFSET));
	return tid;
}

/* 1: forked on a VP other than VP 0 and the child's names were right;
 * 0: the caller was not on one (try again). */
static int attempt(void)
{
	int verdict = 0;
	if (identity() != vp0_identity) {
		struct weft_stats s0, s1;
		CHECK_OK(weft_stats_get(&s0, sizeof s0));
		char block[4096];
		memset(block, 'x', sizeof block);
		CHECK_EQ(pwrite(file, block, sizeof block, 0), (ssize_t)sizeof block);
		CHECK_OK(fsync(file));         /* handed on: back on a spare */
		CHECK_OK(weft_stats_get(&s1, sizeof s1));
		if (identity() != vp0_identity && s1.handoffs > s0.handoffs) {
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0) {
				pid_t me = (pid_t)syscall(SYS_gettid);
				int bad = 0;
				if (identity_tid() != me) {
					fprintf(stderr, "child: the identity's tid is %d, not %d\n",
						(int)identity_tid(), (int)me);
					bad = 1;
				}
				if (own_block_tid() != me) {
					fprintf(stderr, "child: the thread block's tid is %d, not %d\n",
						(int)own_block_tid(), (int)me);
					bad = 1;
				}
				_exit(bad);
			}
			int st;
			CHECK_EQ(waitpid(pid, &st, 0), pid);
			CHECK(WIFEXITED(st));
			CHECK_EQ(WEXITSTATUS(st), 0);
			verdict = 1;
		}
	}
	return verdict;
}

/* The thread made for a round: it attempts if it is on VP 1; on VP 0 it
 * spins, keeping VP 0 busy, while main, on VP 1, attempts. */
static void *forker(void *arg)
{
	(void)arg;
	intptr_t verdict = 0;
	if (identity() != vp0_identity) {
		verdict = attempt();
	} else {
		__atomic_store_n(&swap, 1, __ATOMIC_RELEASE);
		int64_t t0 = test_now_ns();
		while (!__atomic_load_n(&main_done, __ATOMIC_ACQUIRE) && test_now_ns() - t0 < 2000000000LL)
			__builtin_ia32_pause();
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return (void *)verdict;
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	if (s.vps < 2) {
		fprintf(stderr, "needs two VPs in force (WEFT_VPS=2), has %d\n", (int)s.vps);
		return 77;
	}
	if (strcmp(gnu_get_libc_version(), "2.36") != 0) {
		fprintf(stderr, "reads glibc 2.36's struct pthread; this is %s\n", gnu_get_libc_version());
		return 77;
	}
	vp0_identity = identity();           /* no other thread yet: VP 0's */
	file = mkstemp(path);
	CHECK(file >= 0);
	unlink(path);
	int forked = 0;
	for (int i = 0; i < ATTEMPTS && forked < WANTED; i++) {
		done = swap = main_done = 0;
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, forker, NULL));
		int64_t t0 = test_now_ns();
		while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE) && test_now_ns() - t0 < 2000000000LL) {
			__builtin_ia32_pause();   /* the other VP is the forker's */
			if (__atomic_load_n(&swap, __ATOMIC_ACQUIRE)) {
				/* the forker is on VP 0, so main is on VP 1 (a join
				 * ends on the VP of the thread joined): main tries,
				 * the forker keeps VP 0 busy meanwhile */
				forked += attempt();
				__atomic_store_n(&main_done, 1, __ATOMIC_RELEASE);
				swap = 0;
			}
		}
		void *r;
		CHECK_OK(pthread_join(t, &r));
		forked += (int)(intptr_t)r;
	}
	close(file);
	if (forked < WANTED)
		fprintf(stderr, "forked on the other VP %d times of %d attempts\n", forked, ATTEMPTS);
	CHECK(forked >= WANTED);
	return 0;
}
