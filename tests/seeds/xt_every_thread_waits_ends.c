/* The program ends when every thread waits in xthread_wait or
 * xthread_receive and none can run (Xthreads' resched(): no thread ready,
 * exit), and not before: a thread asleep in nanosleep, or ready, or a
 * waiting thread whose event is set, keeps it going; many threads that
 * wait at once (their looks cross on two VPs) end it too.  Each case runs
 * in a child process that must exit 0 promptly with its output complete. */
#include "../check.h"
#include <sys/wait.h>
#include <unistd.h>
#include <weft/xthreads.h>

static Xevent ev, never;
static volatile int stage;

static void waiter(void)
{
	xthread_wait(never);
	_exit(9);                                /* nothing sets it */
}

static void receiver(void)
{
	xthread_receive();
	_exit(9);                                /* nothing is sent */
}

static void sleeper(void)
{
	usleep(50 * 1000);                       /* not waiting in Xthreads */
	stage = 2;
	printf("slept\n");
	fflush(stdout);
}

static void setter(void)
{
	stage = 1;
	xthread_set(ev);
}

/* Run fn in a child; it must exit 0 within `secs` and print `want`. */
static void child_ends(void (*fn)(void), const char *want)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		alarm(20);
		fn();
		_exit(8);                         /* fn never returns */
	}
	close(p[1]);
	char buf[256] = { 0 };
	size_t len = 0;
	ssize_t r;
	while ((r = read(p[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strcmp(buf, want) != 0) {
		fprintf(stderr, "child status %#x, output \"%s\", wanted \"%s\"\n", st, buf, want);
		exit(1);
	}
}

/* Everyone waits: ends at once, with status 0. */
static void all_wait(void)
{
	xthread_t t;
	never = xthread_event();
	CHECK_EQ(xthread_create(&t, NULL, waiter, 0), XTOK);
	CHECK_EQ(xthread_create(&t, NULL, receiver, 0), XTOK);
	printf("waiting\n");
	fflush(stdout);
	xthread_wait(never);
	_exit(9);
}

/* Many threads reach their wait together (on two VPs their last looks
 * cross: each may see another still running): the end is still seen.
 * Twelve rounds, each in its own child. */
static void many_wait_together(void)
{
	xthread_t t;
	never = xthread_event();
	for (int i = 0; i < 8; i++)
		CHECK_EQ(xthread_create(&t, NULL, i % 2 ? waiter : receiver, 0), XTOK);
	printf("many\n");
	fflush(stdout);
	if (stage)
		xthread_receive();
	else
		xthread_wait(never);
	_exit(9);
}

/* A sleeper is not waiting for ever: the end comes after it wakes. */
static void sleeper_keeps_it(void)
{
	xthread_t t;
	never = xthread_event();
	CHECK_EQ(xthread_create(&t, NULL, waiter, 0), XTOK);
	CHECK_EQ(xthread_create(&t, NULL, sleeper, 0), XTOK);
	xthread_receive();
	_exit(9);
}

/* The initial thread ends (as xmain returning does): others run on. */
static void main_exits_others_run(void)
{
	xthread_t t;
	ev = xthread_event();
	never = xthread_event();
	CHECK_EQ(xthread_create(&t, NULL, waiter, 0), XTOK);
	CHECK_EQ(xthread_create(&t, NULL, setter, 0), XTOK);
	xthread_t w;
	CHECK_EQ(xthread_self(&w), XTOK);
	CHECK_EQ(xthread_wait(ev), XTOK);        /* set by `setter` */
	CHECK_EQ(stage, 1);
	CHECK_EQ(xthread_wait(ev), XTOK);        /* still occurred: no wait */
	printf("main done\n");
	fflush(stdout);
	xthread_exit();
}

int main(void)
{
	child_ends(all_wait, "waiting\n");
	for (int i = 0; i < 12; i++) {
		stage = i % 2;
		child_ends(many_wait_together, "many\n");
	}
	stage = 0;
	child_ends(sleeper_keeps_it, "slept\n");
	child_ends(main_exits_others_run, "main done\n");
	return 0;
}
