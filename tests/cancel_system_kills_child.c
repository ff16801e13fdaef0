/*
 * cancel_system_kills_child — system() runs its command blocking only its
 * caller, is a cancellation point that leaves no shell behind, and keeps
 * glibc's SIGINT/SIGQUIT rules across concurrent calls.
 *
 * Invariants checked:
 *  1. system("exit 3") gives a status with WEXITSTATUS 3; system(NULL) is
 *     non-zero (/bin/sh is there); a command the shell cannot find gives
 *     127; the caller's mask is the same after the call (SIGCHLD is
 *     blocked only during it).
 *  2. While one UT waits in system(), another counts; pthread_cancel of
 *     the waiting UT ends it within 2 s with PTHREAD_CANCELED, its cleanup
 *     handler ran, and the shell (which wrote its pid, then exec'd sleep 5)
 *     is gone — killed and reaped: kill(pid, 0) fails with ESRCH — the
 *     program's SIGINT handler is back, and no pidfd is left open (the
 *     wait's is closed).
 *  3. Two UTs inside system() at once: SIGINT is ignored while either is
 *     inside (also after the first one leaves), and once the second leaves
 *     the program's handler, flags and mask are back as they were.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

static char dir[] = "/tmp/weft-system-XXXXXX";
static atomic_int cleaned, returned;

static void on_int(int sig) { (void)sig; }

static void path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static bool exists(const char *name)
{
	char p[64];
	path(p, sizeof p, name);
	return access(p, F_OK) == 0;
}

static void create(const char *name)
{
	char p[64];
	path(p, sizeof p, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_OK(close(fd));
}

/* Park (10 ms at a time) until `name` exists, for at most 10 s. */
static void await_file(const char *name)
{
	for (int64_t end = test_now_ns() + 10000000000ll; !exists(name);) {
		CHECK(test_now_ns() < end);
		usleep(10000);
	}
}

static void basics(void)
{
	sigset_t before, after;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &before));
	int st = system("exit 3");
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 3);
	CHECK(system(NULL) != 0);
	st = system("weft-no-such-command-here 2>/dev/null");
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 127);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &after));
	for (int s = 1; s < NSIG; s++)
		CHECK_EQ(sigismember(&after, s), sigismember(&before, s));
}

/* ---- 2: cancelled while it waits ---- */

static void mark_cleaned(void *arg) { atomic_store(&cleaned, (int)(intptr_t)arg); }

static void *in_system(void *cmd)
{
	pthread_cleanup_push(mark_cleaned, (void *)7);
	int st = system(cmd);
	atomic_store(&returned, st == -1 ? 2 : 1);
	pthread_cleanup_pop(0);
	return NULL;
}

static pid_t read_pid(const char *name)
{
	char p[64], b[32] = "";
	path(p, sizeof p, name);
	for (int64_t end = test_now_ns() + 10000000000ll;; usleep(10000)) {
		CHECK(test_now_ns() < end);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, b, sizeof b - 1);
		CHECK_OK(close(fd));
		if (n > 0 && b[n - 1] == '\n')
			return (pid_t)atol(b);
	}
}

static void cancelled_in_wait(void)
{
	char cmd[512], p[64];
	path(p, sizeof p, "pid");
	snprintf(cmd, sizeof cmd, "echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 5", p, p, p);
	int pidfds = test_open_pidfds();
	struct test_counter ctr = { 1, 0 };
	pthread_t cnt, victim;
	CHECK_OK(pthread_create(&cnt, NULL, test_counting, &ctr));
	CHECK_OK(pthread_create(&victim, NULL, in_system, cmd));
	pid_t pid = read_pid("pid");
	CHECK(pid > 0);
	unsigned long c0 = ctr.count;
	usleep(100000);
	CHECK(ctr.count - c0 >= 10);       /* only the caller waits */
	CHECK_EQ(atomic_load(&returned), 0);

	int64_t t0 = test_now_ns();
	CHECK_OK(pthread_cancel(victim));
	void *r = NULL;
	CHECK_OK(pthread_join(victim, &r));
	CHECK(test_now_ns() - t0 < 2000000000ll);
	CHECK(r == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&cleaned), 7);
	CHECK_EQ(atomic_load(&returned), 0);
	errno = 0;
	CHECK_EQ(kill(pid, 0), -1);         /* killed and reaped: not even a zombie */
	CHECK_EQ(errno, ESRCH);
	ctr.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));
	CHECK_EQ(test_open_pidfds(), pidfds);

	struct sigaction now;
	CHECK_OK(sigaction(SIGINT, NULL, &now));
	CHECK(now.sa_handler == on_int);
}

/* ---- 3: two at once ---- */

static void *run_cmd(void *cmd)
{
	int st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	return NULL;
}

static bool int_ignored(void)
{
	struct sigaction now;
	CHECK_OK(sigaction(SIGINT, NULL, &now));
	return now.sa_handler == SIG_IGN;
}

static void two_at_once(const struct sigaction *set)
{
	char a[512], b[512], ain[64], ago[64], bin[64], bgo[64];
	path(ain, sizeof ain, "a-in");
	path(ago, sizeof ago, "a-go");
	path(bin, sizeof bin, "b-in");
	path(bgo, sizeof bgo, "b-go");
	snprintf(a, sizeof a, ": > %s; while [ ! -e %s ]; do sleep 0.02; done", ain, ago);
	snprintf(b, sizeof b, ": > %s; while [ ! -e %s ]; do sleep 0.02; done", bin, bgo);
	pthread_t ta, tb;
	CHECK_OK(pthread_create(&ta, NULL, run_cmd, a));
	await_file("a-in");
	CHECK(int_ignored());
	CHECK_OK(pthread_create(&tb, NULL, run_cmd, b));
	await_file("b-in");
	create("a-go");
	CHECK_OK(pthread_join(ta, NULL));
	CHECK(int_ignored());               /* the second is still inside */
	create("b-go");
	CHECK_OK(pthread_join(tb, NULL));

	struct sigaction now;
	CHECK_OK(sigaction(SIGINT, NULL, &now));
	CHECK(now.sa_handler == set->sa_handler);
	CHECK_EQ(now.sa_flags & ~0x04000000 /* SA_RESTORER, which NPTL reports */, set->sa_flags);
	for (int s = 1; s < NSIG; s++)
		CHECK_EQ(sigismember(&now.sa_mask, s), sigismember(&set->sa_mask, s));
}

static void cleanup_dir(void)
{
	const char *names[] = { "pid", "pid.tmp", "a-in", "a-go", "b-in", "b-go" };
	char p[64];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		path(p, sizeof p, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	atexit(cleanup_dir);
	if (access("/bin/sh", X_OK) != 0)
		SKIP("no /bin/sh");
	struct sigaction set;
	memset(&set, 0, sizeof set);
	set.sa_handler = on_int;
	set.sa_flags = SA_RESTART;
	sigemptyset(&set.sa_mask);
	sigaddset(&set.sa_mask, SIGUSR2);
	CHECK_OK(sigaction(SIGINT, &set, NULL));

	basics();
	cancelled_in_wait();
	two_at_once(&set);
	return 0;
}
