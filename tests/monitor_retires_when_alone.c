/*
 * monitor_retires_when_alone — a process of NPTL's that is down to one
 * thread is one kernel thread again; under Weft the monitor and its
 * spawner (the kernel threads a second UT starts) end once the process has
 * been alone a while (runtime/monitor.c, "retirement"), and the next
 * create starts them again.
 *
 * Asserts, with one VP:
 *   - one kernel thread at the start; three while a second UT lives (the
 *     first, the monitor, its spawner);
 *   - after the last join, /proc/self/task comes back to one entry (within
 *     a generous 10 s; the delay is 50 ms), over 12 rounds of create, join
 *     and wait, and the process's mappings do not grow with the rounds
 *     (the ended threads' stacks are given back to glibc, which reuses
 *     them: no thread is left unjoined);
 *   - unshare(CLONE_NEWUSER), which Linux refuses a multithreaded process
 *     with EINVAL, is not refused at once after the last join (0, or EPERM
 *     where user namespaces are not allowed), as under NPTL: Weft's unshare
 *     has the monitor end first; bad arguments still fail as the kernel
 *     says;
 *   - a monitor started again works: a UT blocked in a call no wrapper
 *     sees is taken over, so main runs and ends its wait (a monitor that
 *     never came back would leave main waiting until the time limit).
 * The sanitizer builds keep their monitor for good (their records per
 * kernel thread assume Weft's never end): there it asserts that the
 * kernel threads stay and the monitor keeps working.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Waits until only the first kernel thread is left; false after 10 s. */
static __attribute__((unused)) bool back_to_one(void)
{
	for (int i = 0; i < 1000; i++) {
		if (tasks() == 1)
			return true;
		usleep(10000);
	}
	return false;
}

static void *worker(void *arg)
{
	long *sum = arg;
	for (int i = 0; i < 1000; i++) {
		*sum += i;
		if (i % 100 == 0)
			sched_yield();
	}
	return NULL;
}

static int pipefd[2];

/* Blocks in a call no wrapper sees until main writes: only the monitor,
 * by taking the VP from it, lets main run. */
static void *unwrapped_reader(void *arg)
{
	char c;
	CHECK_EQ(syscall(SYS_read, pipefd[0], &c, 1), 1);
	CHECK_EQ(c, 'x');
	return arg;
}

static void takeover_round(void)
{
	struct weft_stats s0 = test_stats();
	pthread_t r;
	CHECK_OK(pthread_create(&r, NULL, unwrapped_reader, NULL));
	sched_yield();                   /* the reader blocks: the monitor takes the VP */
	CHECK_EQ(write(pipefd[1], "x", 1), 1);
	CHECK_OK(pthread_join(r, NULL));
	struct weft_stats s1 = test_stats();
	CHECK(s1.takeovers > s0.takeovers);
}

int main(void)
{
	const char *act = getenv("WEFT_ACTIVATIONS"), *thr = getenv("WEFT_BLOCK_THRESHOLD");
	if ((act && strcmp(act, "off") == 0) || (thr && strcmp(thr, "0") == 0))
		SKIP("no monitor here");
	const char *vps = getenv("WEFT_VPS");
	if (vps && atoi(vps) > 1)
		SKIP("M:N keeps its VPs' kernel threads (docs/mn.md); one VP only");
	CHECK_OK(pipe(pipefd));
	CHECK_EQ(tasks(), 1);

#ifdef WEFT_TEST_SANITIZE
	long sum = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, worker, &sum));
	CHECK_EQ(tasks(), 3);
	CHECK_OK(pthread_join(t, NULL));
	usleep(300000);
	CHECK_EQ(tasks(), 3);            /* kept: see above */
	CHECK_EQ(unshare(CLONE_NEWUSER), -1);   /* and the process is not one thread */
	CHECK_EQ(errno, EINVAL);
	takeover_round();
	printf("sanitizer build: the monitor stays, and works\n");
	return 0;
#else
	long maps_after_first = 0;
	for (int round = 0; round < 12; round++) {
		long sums[4] = { 0 };
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			CHECK_OK(pthread_create(&t[i], NULL, worker, &sums[i]));
		CHECK_EQ(tasks(), 3);    /* started again at the first create */
		for (int i = 0; i < 4; i++) {
			CHECK_OK(pthread_join(t[i], NULL));
			CHECK_EQ(sums[i], 999L * 1000 / 2);
		}
		CHECK(back_to_one());
		if (round == 0)
			maps_after_first = test_mappings();
	}
	long maps_end = test_mappings();
	printf("mappings after the first round %ld, after the last %ld\n", maps_after_first, maps_end);
	CHECK(maps_end <= maps_after_first + 4);

	/* at once after the join, as under NPTL: Weft's unshare has the
	 * monitor end first (posix/namespace.c).  The kernel checks for one
	 * thread before the permission, so EPERM (user namespaces not
	 * allowed here) says the process was one thread too. */
	long sum = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, worker, &sum));
	CHECK_EQ(tasks(), 3);
	CHECK_OK(pthread_join(t, NULL));
	int r = unshare(CLONE_NEWUSER);
	int e = errno;
	printf("unshare(CLONE_NEWUSER) at once after the join: %s\n", r == 0 ? "done" : strerror(e));
	CHECK(r == 0 || e == EPERM);
	CHECK_EQ(tasks(), 1);
	/* a call that fails for its own reason fails as the kernel says */
	CHECK_EQ(unshare(-1), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(setns(-1, 0), -1);
	CHECK_EQ(errno, EBADF);

	/* a monitor started again takes the VP from a blocked UT */
	takeover_round();
	return 0;
#endif
}
