/*
 * activations_unknown_blocking — a UT that blocks in the kernel where no
 * wrapper of Weft's can see it (glibc's syscall() with any number, a
 * `syscall` instruction in the program's own code, glibc's stdio reading a
 * pipe) stops nobody for long: the monitor takes the VP from its kernel
 * thread after WEFT_BLOCK_THRESHOLD and the other UTs run on.  The call
 * returns its own result (no spurious EINTR), and the UT goes on: at its
 * next entry into Weft, or, if it only computes, at the next tick after it
 * is seen running, it is back on the VP.
 *
 *   activations_unknown_blocking          every case
 *   activations_unknown_blocking storm    only the storm: many short unknown
 *                                         blocks while others lock and unlock
 */
#include "check.h"
#include "weft.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct test_counter ctr;
static __thread int tls_mark;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A child process that writes `per` bytes (0, 1, 2, ...) to each of the n
 * pipes, one byte to each every period_us, after delay_us; or, with text,
 * that text once to each. */
static pid_t writer(const int *fds, int n, int per, int delay_us, int period_us, const char *text)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct timespec d = { delay_us / 1000000, (delay_us % 1000000) * 1000L };
		nanosleep(&d, NULL);
		for (int j = 0; text && j < n; j++)
			if (write(fds[j], text, strlen(text)) != (ssize_t)strlen(text))
				_exit(3);
		for (int i = 0; !text && i < per; i++) {
			for (int j = 0; j < n; j++) {
				unsigned char c = (unsigned char)i;
				if (write(fds[j], &c, 1) != 1)
					_exit(3);
			}
			struct timespec p = { 0, period_us * 1000L };
			nanosleep(&p, NULL);
		}
		_exit(0);
	}
	return pid;
}


/* ---- one UT blocks, one counts ------------------------------------------ */

enum how { VIA_SYSCALL, VIA_INSTRUCTION, VIA_STDIO };

struct job {
	enum how how;
	int fd;
	long result;
	int err;
	unsigned char byte;
	unsigned long counted;
	pid_t tid_before, tid_later;
};

static pid_t raw_gettid(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"((long)SYS_gettid) : "rcx", "r11", "memory");
	return (pid_t)r;
}

static void *blocker(void *arg)
{
	struct job *j = arg;
	tls_mark = 42 + (int)j->how;
	unsigned long before = ctr.count;
	char line[8] = { 0 };
	errno = 0;
	switch (j->how) {
	case VIA_SYSCALL:
		j->result = syscall(SYS_read, j->fd, &j->byte, 1);
		break;
	case VIA_INSTRUCTION:
		j->tid_before = raw_gettid();
		j->result = test_raw_read(j->fd, &j->byte, 1);
		break;
	case VIA_STDIO: {
		FILE *f = fdopen(j->fd, "r");
		CHECK(f != NULL);
		j->result = fgets(line, sizeof line, f) != NULL;
		j->byte = (unsigned char)line[0];
		fclose(f);
		break;
	}
	}
	j->err = errno;
	j->counted = ctr.count - before;
	if (j->how == VIA_INSTRUCTION) {
		/* back from the kernel, it only computes: the monitor's kick
		 * sends its kernel thread home and the UT comes back on the VP's
		 * carrier (another kernel thread: the one it blocked on parks as
		 * a spare), all without a call into Weft */
		long end = now_ms() + 300;
		volatile unsigned long spin = 0;
		while (now_ms() < end)
			spin++;
		j->tid_later = raw_gettid();
	}
	CHECK_EQ(tls_mark, 42 + (int)j->how);
	return NULL;
}

static void one_blocks(enum how how)
{
	int p[2];
	CHECK_OK(pipe(p));
	struct weft_stats s0 = test_stats();
	pid_t w = writer(&p[1], 1, 1, 300000, 1000, how == VIA_STDIO ? "7\n" : NULL);
	ctr.on = 1;
	ctr.count = 0;
	pthread_t c, b;
	struct job j = { .how = how, .fd = p[0] };
	CHECK_OK(pthread_create(&c, NULL, test_counting, &ctr));
	CHECK_OK(pthread_create(&b, NULL, blocker, &j));
	CHECK_OK(pthread_join(b, NULL));
	ctr.on = 0;
	CHECK_OK(pthread_join(c, NULL));
	test_reap(w);
	struct weft_stats s1 = test_stats();
	CHECK_EQ(j.result, 1);
	CHECK_EQ(j.byte, how == VIA_STDIO ? '7' : 0);
	/* the counter ran while the read waited 300 ms: many thousands of
	 * yields, where a stuck VP would allow none */
	CHECK(j.counted > 10000);
	CHECK(s1.takeovers > s0.takeovers);
	if (how == VIA_INSTRUCTION && j.tid_later == j.tid_before)
		fprintf(stderr, "the UT came back on its kernel thread %d: takeovers %lu -> %lu, rejoins %lu -> %lu, "
			"handoffs %lu -> %lu, spares %lu, VPs %lu\n", (int)j.tid_before,
			(unsigned long)s0.takeovers, (unsigned long)s1.takeovers, (unsigned long)s0.rejoins,
			(unsigned long)s1.rejoins, (unsigned long)s0.handoffs, (unsigned long)s1.handoffs,
			(unsigned long)s1.kthreads_spare, (unsigned long)s1.vps);
	/* the taken UT came back through the VP's inbox; on one VP its
	 * kernel thread parked as a spare and the VP's carrier runs it, so
	 * it runs on another kernel thread.  Under M:N that kernel thread
	 * may be handed a VP again and pick the UT up itself; so may it on
	 * one VP when the monitor took the VP a second time meanwhile and
	 * handed it to that spare (under ASan a UT's first fake frame maps
	 * its fake stack, and on a loaded machine that mmap can sleep long
	 * enough: takeovers 1 -> 3 in a CI run) */
	CHECK(s1.rejoins > s0.rejoins);
	if (how == VIA_INSTRUCTION && s1.vps == 1 && s1.takeovers - s0.takeovers == 1)
		CHECK(j.tid_later != j.tid_before);
	close(p[1]);
	if (how != VIA_STDIO)
		close(p[0]);
}

/* ---- the storm -------------------------------------------------------- */

#define BLOCKERS 16
#define READS 150
#define LOCKERS 4
#define LOCKS 200000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_total;

struct reader {
	int fd;
	int bad;
};

static void *storm_reader(void *arg)
{
	struct reader *r = arg;
	for (int i = 0; i < READS; i++) {
		unsigned char c;
		long n = i % 2 ? test_raw_read(r->fd, &c, 1) : syscall(SYS_read, r->fd, &c, 1);
		if (n != 1 || c != (unsigned char)i)
			r->bad++;
		/* straight into Weft: the first entry after a takeover */
		pthread_mutex_lock(&lock);
		shared_total++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *storm_locker(void *arg)
{
	(void)arg;
	for (int i = 0; i < LOCKS; i++) {
		pthread_mutex_lock(&lock);
		shared_total++;
		pthread_mutex_unlock(&lock);
		if (i % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void storm(void)
{
	int p[BLOCKERS][2], wfd[BLOCKERS];
	struct reader rd[BLOCKERS];
	for (int i = 0; i < BLOCKERS; i++) {
		CHECK_OK(pipe(p[i]));
		wfd[i] = p[i][1];
		rd[i] = (struct reader){ p[i][0], 0 };
	}
	struct weft_stats s0 = test_stats();
	shared_total = 0;
	pid_t w = writer(wfd, BLOCKERS, READS, 20000, 2000, NULL);
	pthread_t r[BLOCKERS], l[LOCKERS];
	for (int i = 0; i < BLOCKERS; i++)
		CHECK_OK(pthread_create(&r[i], NULL, storm_reader, &rd[i]));
	for (int i = 0; i < LOCKERS; i++)
		CHECK_OK(pthread_create(&l[i], NULL, storm_locker, NULL));
	for (int i = 0; i < LOCKERS; i++)
		CHECK_OK(pthread_join(l[i], NULL));
	for (int i = 0; i < BLOCKERS; i++)
		CHECK_OK(pthread_join(r[i], NULL));
	test_reap(w);
	struct weft_stats s1 = test_stats();
	for (int i = 0; i < BLOCKERS; i++) {
		CHECK_EQ(rd[i].bad, 0);
		close(p[i][0]);
		close(p[i][1]);
	}
	CHECK_EQ(shared_total, (unsigned long)BLOCKERS * READS + (unsigned long)LOCKERS * LOCKS);
	CHECK(s1.takeovers > s0.takeovers);
	CHECK_EQ(s1.threads_off_vp, 0);
	fprintf(stderr, "storm: %llu takeovers, %llu spare kernel threads made\n",
		(unsigned long long)(s1.takeovers - s0.takeovers), (unsigned long long)s1.kthreads_made);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "storm") == 0) {
		storm();
		return 0;
	}
	one_blocks(VIA_SYSCALL);
	one_blocks(VIA_INSTRUCTION);
	one_blocks(VIA_STDIO);
	storm();
	return 0;
}
