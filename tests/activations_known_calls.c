/*
 * activations_known_calls — a UT that blocks in the kernel in a call Weft
 * knows (flock, lockf, SysV semop and msgrcv, fsync) gives the VP to a
 * spare kernel thread (and fcntl(F_SETLKW), and reading a file that is not
 * in the page cache): a counting UT keeps counting all the while, the
 * blocked call returns its result with errno intact, and the UT runs on
 * afterwards with its own thread-local storage.  Then: several UTs blocked
 * at once, more than WEFT_MAX_KTHREADS allows (the rest are kept on their
 * VPs, as in M:1, and nothing is lost), and a forked child that does it
 * again.
 *
 * Invariant it keeps: what a case expects of a blocking call follows from
 * the cap and the VPs in force (expectation()), never from what happened.
 * Spares come out of WEFT_MAX_KTHREADS, and under M:N every VP but the
 * first is carried by one of them, so with the cap plus one VPs or more
 * (WEFT_VPS=4 under the registration's cap of 3; WEFT_VPS=8 starts only
 * 4 then) no spare is left and every call is kept on its VP:
 *
 *   HANDED        a spare is left: handoffs counted (rejoins as many), the
 *                 counter counts on meanwhile
 *   KEPT_BESIDE   no spare, several VPs: no handoff counted, and the
 *                 counter counts on meanwhile, on the other VPs (a kept
 *                 call blocks its own VP only and lets the runtime lock
 *                 go, docs/mn.md)
 *   KEPT_ALONE    no spare, one VP: no handoff, the counter stands still
 *
 * and in every one the call returns its result with errno intact.
 *
 *   activations_known_calls          every case
 *   activations_known_calls off      under WEFT_ACTIVATIONS=off, which also
 *                                    means one VP: KEPT_ALONE
 */
#include "check.h"
#include "weft.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MS 200

/* WEFT_MAX_KTHREADS's default and range (docs/activations.md); a value out
 * of range is replaced by the default. */
#define MAX_KTHREADS_DEFAULT 64
#define MAX_KTHREADS_LIMIT 4096

enum expect { HANDED, KEPT_BESIDE, KEPT_ALONE };
static const char *const expect_name[] = { "handed", "kept beside", "kept alone" };

static volatile int counting;
static volatile unsigned long count;
static __thread int tls_mark;

static void *counter(void *arg)
{
	(void)arg;
	while (counting) {
		count++;
		sched_yield();
	}
	return NULL;
}

static struct weft_stats stats(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static unsigned long kthread_cap(void)
{
	const char *v = getenv("WEFT_MAX_KTHREADS");
	if (!v || !*v)
		return MAX_KTHREADS_DEFAULT;
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (*end || errno || n < 1 || n > MAX_KTHREADS_LIMIT)
		return MAX_KTHREADS_DEFAULT;
	return n;
}

static void *nothing(void *arg)
{
	return arg;
}

/* What a blocking call does here.  The VPs start at the second UT
 * (docs/mn.md; in a forked child, again at its next one), so one is made
 * first: then `vps` is the number in force (fewer than WEFT_VPS when the
 * cap cannot carry them all) and their carriers exist.  The VP that
 * starts them keeps the kernel thread it runs on; every other VP's
 * carrier is a spare Weft made, counted against WEFT_MAX_KTHREADS
 * (src/runtime/mn.c, __weft_mn_start).  That rule is checked here, as
 * the expectation rests on it: what the cap leaves beyond the carriers
 * is what a blocking call may hand its VP to, and with none left (or
 * activations off) the call is kept on its VP (docs/activations.md). */
static enum expect expectation(bool off)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, nothing, NULL));
	CHECK_OK(pthread_join(t, NULL));
	struct weft_stats s = stats();
	unsigned long cap = kthread_cap();
	CHECK(s.vps >= 1);
	CHECK_EQ(s.kthreads_made, s.vps - 1);
	CHECK(s.kthreads_made <= cap);        /* no more VPs than the cap carries */
	if (!off && cap > s.vps - 1)
		return HANDED;
	return s.vps > 1 ? KEPT_BESIDE : KEPT_ALONE;
}

/* A child process that holds something for HOLD_MS, then lets go. */
enum hold { HOLD_FLOCK, HOLD_LOCKF, HOLD_SEM, HOLD_MSG, HOLD_FCNTL };

struct job {
	enum hold kind;
	int fd, sem, q;
	long result;
	int err;
	unsigned long counted;        /* what the counter did meanwhile */
};

static void *blocker(void *arg)
{
	struct job *j = arg;
	tls_mark = (int)j->kind + 100;
	unsigned long before = count;
	errno = 0;
	switch (j->kind) {
	case HOLD_FLOCK:
		j->result = flock(j->fd, LOCK_EX);
		break;
	case HOLD_LOCKF:
		j->result = lockf(j->fd, F_LOCK, 0);
		break;
	case HOLD_FCNTL: {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		j->result = fcntl(j->fd, F_SETLKW, &fl);
		break;
	}
	case HOLD_SEM: {
		struct sembuf down = { 0, -1, 0 };
		j->result = semop(j->sem, &down, 1);
		break;
	}
	case HOLD_MSG: {
		struct { long type; char text[16]; } m;
		j->result = msgrcv(j->q, &m, sizeof m.text, 0, 0);
		if (j->result > 0 && strcmp(m.text, "released") != 0)
			j->result = -2;
		break;
	}
	}
	j->err = errno;
	j->counted = count - before;
	CHECK_EQ(tls_mark, (int)j->kind + 100);       /* its own TLS, wherever it runs now */
	return NULL;
}

/* The child takes the thing, says so on `ready`, holds it, lets go. */
static pid_t holder(struct job *j, const char *path, int ready)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid)
		return pid;
	int fd = path ? open(path, O_RDWR) : -1;
	if (j->kind == HOLD_FLOCK)
		CHECK_OK(flock(fd, LOCK_EX));
	if (j->kind == HOLD_LOCKF)
		CHECK_OK(lockf(fd, F_LOCK, 0));
	if (j->kind == HOLD_FCNTL) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		CHECK_OK(fcntl(fd, F_SETLK, &fl));
	}
	CHECK_EQ(write(ready, "r", 1), 1);
	sleep_ms(HOLD_MS);
	if (j->kind == HOLD_SEM) {
		struct sembuf up = { 0, 1, 0 };
		CHECK_OK(semop(j->sem, &up, 1));
	}
	if (j->kind == HOLD_MSG) {
		struct { long type; char text[16]; } m = { 1, "released" };
		CHECK_OK(msgsnd(j->q, &m, sizeof m.text, 0));
	}
	_exit(0);
}

static void one_case(enum hold kind, enum expect e)
{
	char path[] = "/tmp/weft-act-XXXXXX";
	struct job j;
	memset(&j, 0, sizeof j);
	j.kind = kind;
	j.fd = mkstemp(path);
	CHECK(j.fd >= 0);
	j.sem = semget(IPC_PRIVATE, 1, 0600);
	j.q = msgget(IPC_PRIVATE, 0600);
	CHECK(j.sem >= 0 && j.q >= 0);
	int p[2];
	CHECK_OK(pipe(p));
	pid_t child = holder(&j, path, p[1]);
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	struct weft_stats s0 = stats();
	counting = 1;
	pthread_t tc, tb;
	CHECK_OK(pthread_create(&tc, NULL, counter, NULL));
	CHECK_OK(pthread_create(&tb, NULL, blocker, &j));
	CHECK_OK(pthread_join(tb, NULL));
	counting = 0;
	CHECK_OK(pthread_join(tc, NULL));
	int status;
	CHECK_EQ(waitpid(child, &status, 0), child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct weft_stats s1 = stats();
	CHECK(j.result >= 0);
	CHECK_EQ(j.err, 0);
	if (e == KEPT_ALONE) {
		CHECK(j.counted < 10);        /* the only VP was blocked with it */
	} else {
		/* ~HOLD_MS of counting, on the VP handed on or on another VP
		 * while the kept call's VP waits: thousands of yields at the
		 * very least */
		if (j.counted <= 1000)
			fprintf(stderr, "case %d (%s): the counter counted %lu meanwhile\n", (int)kind,
				expect_name[e], j.counted);
		CHECK(j.counted > 1000);
	}
	if (e == HANDED)
		CHECK(s1.handoffs > s0.handoffs);
	else
		CHECK_EQ(s1.handoffs, s0.handoffs);
	CHECK_EQ(s1.rejoins - s0.rejoins, s1.handoffs - s0.handoffs);
	CHECK_EQ(s1.threads_off_vp, 0);
	close(j.fd);
	unlink(path);
	semctl(j.sem, 0, IPC_RMID);
	msgctl(j.q, IPC_RMID, NULL);
	close(p[0]);
	close(p[1]);
}

/* fsync of a file with 8 MiB of dirty pages: the caller's count of the
 * counter's progress is not asserted (a fast disk may finish at once),
 * only that it returns 0 and the books balance. */
static void fsync_case(void)
{
	char path[] = "/tmp/weft-act-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	static char block[1 << 20];
	memset(block, 'w', sizeof block);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(write(fd, block, sizeof block), (ssize_t)sizeof block);
	counting = 1;
	pthread_t tc;
	CHECK_OK(pthread_create(&tc, NULL, counter, NULL));
	CHECK_OK(fsync(fd));
	CHECK_OK(fdatasync(fd));
	counting = 0;
	CHECK_OK(pthread_join(tc, NULL));
	close(fd);
	CHECK_EQ(stats().threads_off_vp, 0);
}

/* A 32 MiB file dropped from the page cache, read in 1 MiB pieces: each
 * read tries RWF_NOWAIT, and what must come from the device is read off
 * the VP.  Every byte arrives; on a file system that keeps files in memory
 * (tmpfs) nothing is ever handed on, which is right, so only a real one is
 * asked for handoffs. */
static void file_read_case(enum expect e)
{
	char path[] = "weft-act-read-XXXXXX";       /* the build tree: a real disk, not /tmp */
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	static char block[1 << 20];
	enum { MIB = 32 };
	for (int i = 0; i < MIB; i++) {
		memset(block, 'a' + i % 26, sizeof block);
		CHECK_EQ(write(fd, block, sizeof block), (ssize_t)sizeof block);
	}
	CHECK_OK(fdatasync(fd));
	CHECK_OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	struct statfs sfs;
	CHECK_OK(fstatfs(fd, &sfs));
	bool in_memory = sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
	struct weft_stats s0 = stats();
	counting = 1;
	pthread_t tc;
	CHECK_OK(pthread_create(&tc, NULL, counter, NULL));
	CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	for (int i = 0; i < MIB; i++) {
		size_t got = 0;
		while (got < sizeof block) {
			ssize_t n = read(fd, block + got, sizeof block - got);
			CHECK(n > 0);
			got += (size_t)n;
		}
		CHECK(block[0] == 'a' + i % 26 && block[sizeof block - 1] == 'a' + i % 26);
	}
	counting = 0;
	CHECK_OK(pthread_join(tc, NULL));
	struct weft_stats s1 = stats();
	if (e == HANDED && !in_memory)
		CHECK(s1.handoffs > s0.handoffs);
	if (e != HANDED)
		CHECK_EQ(s1.handoffs, s0.handoffs);
	CHECK_EQ(s1.threads_off_vp, 0);
	close(fd);
}

/* Many UTs blocked at once in flock on files a child holds, released one
 * by one: every one returns, the books balance, and no more kernel
 * threads are made than WEFT_MAX_KTHREADS (set to 3 by the test's
 * registration) allows.  With no spare left every call is kept, each on
 * its VP: the child lets go of every file on its own, so all return even
 * when every VP waits in one. */
#define MANY 8
static void many_case(enum expect e)
{
	char paths[MANY][32];
	struct job jobs[MANY];
	int p[2];
	CHECK_OK(pipe(p));
	for (int i = 0; i < MANY; i++) {
		strcpy(paths[i], "/tmp/weft-act-XXXXXX");
		memset(&jobs[i], 0, sizeof jobs[i]);
		jobs[i].kind = HOLD_FLOCK;
		jobs[i].fd = mkstemp(paths[i]);
		CHECK(jobs[i].fd >= 0);
	}
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		int fds[MANY];
		for (int i = 0; i < MANY; i++) {
			fds[i] = open(paths[i], O_RDWR);
			CHECK_OK(flock(fds[i], LOCK_EX));
		}
		CHECK_EQ(write(p[1], "r", 1), 1);
		for (int i = 0; i < MANY; i++) {
			sleep_ms(20);
			close(fds[i]);
		}
		_exit(0);
	}
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	struct weft_stats s0 = stats();
	counting = 1;
	pthread_t tc, tb[MANY];
	CHECK_OK(pthread_create(&tc, NULL, counter, NULL));
	for (int i = 0; i < MANY; i++)
		CHECK_OK(pthread_create(&tb[i], NULL, blocker, &jobs[i]));
	for (int i = 0; i < MANY; i++)
		CHECK_OK(pthread_join(tb[i], NULL));
	counting = 0;
	CHECK_OK(pthread_join(tc, NULL));
	CHECK_EQ(waitpid(child, NULL, 0), child);
	struct weft_stats s1 = stats();
	for (int i = 0; i < MANY; i++) {
		CHECK_EQ(jobs[i].result, 0);
		close(jobs[i].fd);
		unlink(paths[i]);
	}
	if (e == HANDED)
		CHECK(s1.handoffs > s0.handoffs);
	else
		CHECK_EQ(s1.handoffs, s0.handoffs);
	CHECK_EQ(s1.rejoins - s0.rejoins, s1.handoffs - s0.handoffs);
	CHECK_EQ(s1.threads_off_vp, 0);
	CHECK(s1.kthreads_made <= kthread_cap());
	/* every one parked again, but those that carry the other VPs (M:N).
	 * With several VPs the last blocker's kernel thread may still be on
	 * its way home when its UT, run by another VP, has been joined: the
	 * books balance once it parks (generously bounded) */
	for (int i = 0; i < 2000 && s1.kthreads_spare + (s1.vps - 1) != s1.kthreads_made; i++) {
		sleep_ms(1);
		s1 = stats();
	}
	CHECK_EQ(s1.kthreads_spare + (s1.vps - 1), s1.kthreads_made);
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	bool off = argc > 1 && strcmp(argv[1], "off") == 0;
	enum expect e = expectation(off);
	one_case(HOLD_FLOCK, e);
	one_case(HOLD_LOCKF, e);
	one_case(HOLD_SEM, e);
	one_case(HOLD_MSG, e);
	one_case(HOLD_FCNTL, e);
	file_read_case(e);
	if (off)
		return 0;
	fsync_case();
	many_case(e);
	/* a forked child has no spare of the parent's: it makes its own
	 * carriers and spares again, within the same cap */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		one_case(HOLD_FLOCK, expectation(false));
		_exit(0);
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "forked child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 0;
}
