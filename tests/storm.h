/*
 * storm.h — run copies of a test program at once and judge them together.
 *
 * The storm tests hammer the runtime from outside (the tick, signals) while
 * it grows and shrinks its tables; a race shows up only now and then, so
 * each test runs as many copies of itself in parallel, which also makes the
 * kernel deliver signals at more varied points.  storm_run re-executes the
 * program with "copy I" as its arguments and waits for every copy with a
 * generous limit: a copy that crashes, fails or hangs fails the test with
 * its number and how it ended.
 */
#ifndef WEFT_TEST_STORM_H
#define WEFT_TEST_STORM_H
#include "check.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Start `copies` copies of this program as `prog copy I`; 0 when every one
 * exited 0 within limit_s seconds. */
static inline int storm_run(int copies, int limit_s)
{
	pid_t pids[64];
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0 && copies <= 64);
	self[n] = 0;
	for (int i = 0; i < copies; i++) {
		char num[16];
		snprintf(num, sizeof num, "%d", i);
		char *argv[] = { self, "copy", num, NULL };
		CHECK_OK(posix_spawn(&pids[i], self, NULL, NULL, argv, environ));
	}
	int failed = 0, left = copies;
	int64_t deadline = test_now_ns() + (int64_t)limit_s * 1000000000;
	while (left) {
		for (int i = 0; i < copies; i++) {
			int st;
			if (!pids[i] || waitpid(pids[i], &st, WNOHANG) != pids[i])
				continue;
			if (WIFSIGNALED(st)) {
				fprintf(stderr, "copy %d died of signal %d\n", i, WTERMSIG(st));
				failed++;
			} else if (WEXITSTATUS(st) != 0) {
				fprintf(stderr, "copy %d exited with status %d\n", i, WEXITSTATUS(st));
				failed++;
			}
			pids[i] = 0;
			left--;
		}
		if (left && test_now_ns() > deadline) {
			for (int i = 0; i < copies; i++)
				if (pids[i]) {
					fprintf(stderr, "copy %d hung (still running after %d s)\n", i, limit_s);
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					pids[i] = 0;
					failed++;
					left--;
				}
		}
		if (left)
			usleep(20000);
	}
	return failed;
}
#endif
