/* A task that shares this process's memory but is another process (a
 * clone without CLONE_THREAD), made while every thread of this process is
 * stopped by it, gets Weft's wrapped calls as the plain calls: its pipe and
 * close return at once.  This is what LeakSanitizer's tracer does at exit
 * (it stops every thread with ptrace and then calls pipe); the call used to
 * queue for a VP the stopped carriers could never hand over, and the
 * process hung (runtime/monitor.c, __weft_where_slow).
 *
 * The tracer uses raw system calls for everything but the calls under test:
 * the threads it stops may hold any lock of glibc's. */
#include "check.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

enum { MAX_TIDS = 256, STACK = 256 * 1024 };

static pid_t parent;
static atomic_int stopped;            /* threads the tracer stopped */
static atomic_int pipe_rc = -100, close_rc = -100;
static int fds[2] = { -1, -1 };

static long raw(long nr, long a, long b, long c, long d)
{
	return syscall(nr, a, b, c, d);
}

static int tracer(void *arg)
{
	(void)arg;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)parent);
	int dfd = (int)raw(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return 1;
	pid_t tids[MAX_TIDS];
	int n = 0;
	char buf[4096];
	long got;
	while ((got = raw(SYS_getdents64, dfd, (long)buf, sizeof buf, 0)) > 0)
		for (long off = 0; off < got;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			if (d->d_name[0] != '.' && n < MAX_TIDS)
				tids[n++] = (pid_t)atoi(d->d_name);
			off += d->d_reclen;
		}
	raw(SYS_close, dfd, 0, 0, 0);
	int ok = 0;
	for (int i = 0; i < n; i++) {
		if (raw(SYS_ptrace, PTRACE_SEIZE, tids[i], 0, 0) != 0)
			continue;
		raw(SYS_ptrace, PTRACE_INTERRUPT, tids[i], 0, 0);
		int st;
		if (raw(SYS_wait4, tids[i], (long)&st, __WALL, 0) == tids[i])
			ok++;
		else
			tids[i] = 0;
	}
	atomic_store(&stopped, ok);
	/* the calls under test, Weft's, with every thread of the process stopped */
	atomic_store(&pipe_rc, pipe(fds));
	atomic_store(&close_rc, close(fds[0]) | close(fds[1]));
	for (int i = 0; i < n; i++)
		if (tids[i])
			raw(SYS_ptrace, PTRACE_DETACH, tids[i], 0, 0);
	return 0;
}

static void *sleeper(void *arg)
{
	(void)arg;
	usleep(300000);                   /* a second UT, parked meanwhile */
	return NULL;
}

int main(void)
{
	parent = getpid();
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sleeper, NULL));   /* the monitor starts too */
	char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(stack != MAP_FAILED);
	pid_t child = clone(tracer, stack + STACK, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED | SIGCHLD,
			    NULL);
	if (child < 0 && (errno == EPERM || errno == ENOSYS))
		SKIP("clone refused here");
	CHECK(child > 0);
	int st;
	CHECK_EQ(waitpid(child, &st, __WALL), child);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0 || atomic_load(&stopped) == 0)
		SKIP("could not stop this process's threads with ptrace (yama, a container)");
	CHECK_EQ(atomic_load(&pipe_rc), 0);
	CHECK(fds[0] >= 0 && fds[1] >= 0);
	CHECK_EQ(atomic_load(&close_rc), 0);
	CHECK_OK(pthread_join(t, NULL));
	munmap(stack, STACK);
	return 0;
}
