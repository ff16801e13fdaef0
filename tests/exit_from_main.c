/* How the process ends, each case in a forked child whose exit status and
 * output (one byte per event, on a pipe) the parent checks:
 *   - pthread_exit from main: the other UTs run on, main's return value
 *     reaches a UT that joins main, and when the last UT ends the process
 *     exits with status 0 and runs its atexit handlers once;
 *   - the last UT to end may be a detached one;
 *   - exit() from any UT ends the process at once with that status, atexit
 *     handlers run once, and no other UT runs again;
 *   - returning from main ends the process even while UTs sleep. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int out_fd;
static pthread_t main_ut;

static void emit(char c) { CHECK_EQ(write(out_fd, &c, 1), 1); }
static void at_exit_handler(void) { emit('A'); }

/* Sleeps digit * 20 ms: an order between events that far apart holds on
 * a loaded machine under two VPs (5 ms did not: the joiner's wake-up came
 * after the first sleeper's, once, in CI's two-VP run beside other load). */
static void *sleep_emit(void *arg)
{
	usleep(20000 * (int)((intptr_t)arg - '0'));
	emit((char)(intptr_t)arg);
	return NULL;
}

static void *join_main(void *arg)
{
	void *r = NULL;
	CHECK_OK(pthread_join(main_ut, &r));
	emit(r == (void *)42 ? 'J' : 'x');
	return NULL;
}

static void case_pthread_exit_from_main(void)
{
	pthread_t t;
	main_ut = pthread_self();
	for (char c = '1'; c <= '3'; c++)
		CHECK_OK(pthread_create(&t, NULL, sleep_emit, (void *)(intptr_t)c));
	CHECK_OK(pthread_create(&t, NULL, join_main, NULL));
	pthread_exit((void *)42);
}

static void case_detached_last(void)
{
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_create(&t, &a, sleep_emit, (void *)(intptr_t)'2'));
	CHECK_OK(pthread_create(&t, NULL, sleep_emit, (void *)(intptr_t)'1'));
	pthread_exit(NULL);
}

static void *exit_seven(void *arg)
{
	usleep(5000);
	emit('E');
	exit(7);
}

static void case_exit_from_ut(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sleep_emit, (void *)(intptr_t)'9'));   /* 180 ms */
	CHECK_OK(pthread_create(&t, NULL, exit_seven, NULL));
	CHECK_OK(pthread_join(t, NULL));   /* never returns */
	emit('x');
}

static void case_return_from_main(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sleep_emit, (void *)(intptr_t)'9'));
	usleep(1000);                      /* it is asleep now */
	emit('R');
}

/* Run `body` in a child with an atexit handler; return its status and
 * what it emitted. */
static int run(void (*body)(void), char *got, size_t cap)
{
	int p[2];
	CHECK_OK(pipe(p));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		out_fd = p[1];
		CHECK_OK(atexit(at_exit_handler));
		body();
		exit(3);                   /* return from main: exit with main's value */
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(p[0], got + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	got[n] = 0;
	close(p[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

static void expect(int st, int code, const char *got, const char *want)
{
	if (!WIFEXITED(st) || WEXITSTATUS(st) != code || strcmp(got, want) != 0) {
		fprintf(stderr, "status %#x (want exit %d), output \"%s\" (want \"%s\")\n", st, code,
			got, want);
		exit(1);
	}
}

int main(void)
{
	char got[64];
	int st = run(case_pthread_exit_from_main, got, sizeof got);
	/* J as soon as main has exited, then the sleepers in deadline order */
	expect(st, 0, got, "J123A");

	st = run(case_detached_last, got, sizeof got);
	expect(st, 0, got, "12A");

	st = run(case_exit_from_ut, got, sizeof got);
	expect(st, 7, got, "EA");

	st = run(case_return_from_main, got, sizeof got);
	expect(st, 3, got, "RA");
	return 0;
}
