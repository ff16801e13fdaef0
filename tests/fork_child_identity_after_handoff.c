/*
 * fork_child_identity_after_handoff — a child forked by a UT whose VP a
 * spare kernel thread carries (its blocking call handed the VP on) finds
 * its own tid in the glibc thread its UTs are known as (THREAD_SELF, the
 * word at %fs:0x10: the VP's identity, docs/mn.md).
 *
 * glibc's fork writes the child's tid only into the forking kernel
 * thread's own block.  The identity of VP 0 is the first thread's block,
 * and under one VP without per-UT TLS the UTs run on that block itself:
 * forked from a spare, the identity kept the parent's main tid (its pid),
 * a task of another process, for any glibc code in the child that reads
 * THREAD_SELF->tid (tls.c, __weft_tls_fork_identity).  Run under one VP
 * (make test) and two (make test-vps2), where main may be on either VP.
 *
 * Each round: a partner UT keeps the VP wanted (so fsync hands it on),
 * main makes an fsync that was handed on (weft_stats' handoffs moved),
 * then forks; the child checks the identity's tid and its own block's
 * against gettid and exits 0.  Ten such rounds are wanted; glibc 2.36's
 * struct pthread (tid at 720 bytes) only, else skipped.
 */
#include "check.h"

#include <weft.h>

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define GLIBC_TID_OFFSET 720
#define WANTED 10
#define ATTEMPTS 400

static volatile int stop;

static void *identity(void)
{
	void *self;
	__asm__ volatile("movq %%fs:0x10, %0" : "=r"(self));
	return self;
}

static pid_t own_block_tid(void)
{
	pid_t tid;
	__asm__ volatile("movl %%fs:%c1, %0" : "=r"(tid) : "i"(GLIBC_TID_OFFSET));
	return tid;
}

static void *partner(void *arg)
{
	while (!stop)
		sched_yield();
	return arg;
}

int main(void)
{
	if (strcmp(gnu_get_libc_version(), "2.36") != 0) {
		fprintf(stderr, "reads glibc 2.36's struct pthread; this is %s\n", gnu_get_libc_version());
		return 77;
	}
	char path[] = "/tmp/weft-fork-identity-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	pthread_t p;
	CHECK_OK(pthread_create(&p, NULL, partner, NULL));
	int forked = 0;
	for (int i = 0; i < ATTEMPTS && forked < WANTED; i++) {
		struct weft_stats s0, s1;
		CHECK_OK(weft_stats_get(&s0, sizeof s0));
		char block[4096];
		memset(block, 'x', sizeof block);
		CHECK_EQ(pwrite(fd, block, sizeof block, 0), (ssize_t)sizeof block);
		CHECK_OK(fsync(fd));
		CHECK_OK(weft_stats_get(&s1, sizeof s1));
		if (s1.handoffs == s0.handoffs)
			continue;                 /* not handed on: no spare involved */
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			pid_t me = (pid_t)syscall(SYS_gettid);
			pid_t id_tid = *(volatile pid_t *)((char *)identity() + GLIBC_TID_OFFSET);
			int bad = 0;
			if (id_tid != me) {
				fprintf(stderr, "child: the identity's tid is %d, not %d\n", (int)id_tid, (int)me);
				bad = 1;
			}
			if (own_block_tid() != me) {
				fprintf(stderr, "child: the thread block's tid is %d, not %d\n", (int)own_block_tid(),
					(int)me);
				bad = 1;
			}
			_exit(bad);
		}
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), 0);
		forked++;
	}
	stop = 1;
	CHECK_OK(pthread_join(p, NULL));
	close(fd);
	if (forked < WANTED) {
		fprintf(stderr, "only %d of %d rounds were handed on\n", forked, WANTED);
		return 77;
	}
	return 0;
}
