/*
 * sig_setxid_every_kernel_thread — setuid, setgid and setgroups change
 * every thread's credentials, as POSIX says of a process's IDs, while other
 * threads are blocked in the kernel and while kernel threads sit idle.
 *
 * glibc makes these calls process-wide by a broadcast: SIGSETXID (33) to
 * every thread glibc made, each making the same system call in its handler,
 * the caller waiting for all of them.  Under Weft every kernel thread is one
 * of glibc's (the monitor, spares, the VPs' carriers).  Before the fix the
 * process died of signal 33 (glibc's handler was never installed), and a
 * kernel thread that kept signal 33 blocked (a parked spare, one in a call
 * made off the VP) would have made setuid wait for ever.
 *
 * Checked here, as root: with one UT blocked in flock() on a file a child
 * process holds locked (under Weft: a call known to block, made on its own
 * kernel thread off the VP) and a spare parked from an earlier such call,
 * setgroups, setgid and setuid return 0; then every task of the process
 * (/proc/self/task) has the new uid and gid in all four fields and the new
 * groups; the blocked flock() is not ended by the broadcast (flock restarts
 * under SA_RESTART) and returns 0 once the child lets go; kernel threads
 * made after the change (four UTs blocked in semop() at once) have the new
 * IDs too; and
 * setuid(0) then fails with EPERM on every thread alike (glibc aborts on a
 * mismatch).  Before that, seteuid to another uid and back changes the
 * effective uid of every task and nothing else, and seteuid(-1) is EINVAL.
 * Not as root, the same broadcast with the IDs the process has:
 * setuid(getuid()) returns 0, setuid(0) EPERM, every task keeps its uid.
 *
 * Built against NPTL too (the _nptl twin) to prove what Linux does.
 */
#include "sig_test.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/prctl.h>

#define NEW_ID 65534
#define NEW_GROUP 65533
/* UTs blocked in semop after the change; argv[1] may ask for more (the
 * registered 300 copy: more kernel threads than Weft's broadcast keeps on
 * its stack, 256) */
static int late_waiters = 4;

/* A child process that holds an exclusive flock on `path` until told to
 * let go (a byte on its pipe). */
struct holder {
	pid_t pid;
	int go;                           /* write end: a byte lets it go */
};

static struct holder hold(const char *path)
{
	int ready[2], go[2];
	CHECK_OK(pipe(ready));
	CHECK_OK(pipe(go));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], "h", 1) != 1)
			_exit(1);
		char c;
		_exit(read(go[0], &c, 1) == 1 ? 0 : 2);
	}
	char c;
	CHECK_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	return (struct holder){ pid, go[1] };
}

static void let_go(struct holder h)
{
	CHECK_EQ(write(h.go, "g", 1), 1);
	close(h.go);
	int status;
	CHECK_EQ(waitpid(h.pid, &status, 0), h.pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static volatile int locker_in;        /* the locker is about to block */

/* flock(LOCK_EX) on the path arg, through a description of its own: 0 or
 * the errno. */
static void *locker(void *arg)
{
	int fd = open((const char *)arg, O_RDWR);
	if (fd < 0)
		return (void *)(intptr_t)errno;
	__atomic_store_n(&locker_in, 1, __ATOMIC_RELEASE);
	int r = flock(fd, LOCK_EX) == 0 ? 0 : errno;
	close(fd);
	return (void *)(intptr_t)r;
}

static int sem_id;

/* One semop(-1) on the set's semaphore 0: 0 or the errno.  semop is never
 * restarted after a handler (signal(7)), and the IDs' broadcast runs one on
 * every thread: under NPTL it ends with EINTR, as a program must expect. */
static void *sem_waiter(void *arg)
{
	(void)arg;
	struct sembuf down = { 0, -1, 0 };
	while (semop(sem_id, &down, 1) != 0)
		if (errno != EINTR)
			return (void *)(intptr_t)errno;
	return NULL;
}

/* The "Name:\tA\tB\tC\tD" line of a status file: real, effective, saved
 * and filesystem IDs r, e, s and e (the fs ID follows the effective one). */
static bool fields_are(const char *line, long r, long e, long s)
{
	long f[4];
	const char *p = strchr(line, ':');
	if (!p || sscanf(p + 1, "%ld %ld %ld %ld", &f[0], &f[1], &f[2], &f[3]) != 4)
		return false;
	return f[0] == r && f[1] == e && f[2] == s && f[3] == e;
}

/* Every task of the process has uids r, e, s (real, effective, saved), gid
 * `gid` in all four fields (when gid >= 0) and that "Groups:" line (when
 * groups is not NULL).  Returns the number of tasks seen. */
static int every_task_ids(long r, long e, long s, long gid, const char *groups)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	int tasks = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char path[300], line[256];
		snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f) {
			CHECK_EQ(errno, ENOENT);        /* a task that ended meanwhile */
			continue;
		}
		bool uid_ok = false, gid_ok = gid < 0, groups_ok = groups == NULL;
		while (fgets(line, sizeof line, f)) {
			if (!strncmp(line, "Uid:", 4))
				uid_ok = fields_are(line, r, e, s);
			else if (gid >= 0 && !strncmp(line, "Gid:", 4))
				gid_ok = fields_are(line, gid, gid, gid);
			else if (groups && !strncmp(line, "Groups:", 7)) {
				char *end = line + strlen(line);
				while (end > line && (end[-1] == '\n' || end[-1] == ' '))
					*--end = 0;
				groups_ok = strcmp(line + 7 + strspn(line + 7, "\t "), groups) == 0;
			}
		}
		fclose(f);
		if (!uid_ok || !gid_ok || !groups_ok) {
			fprintf(stderr, "task %s: uid %s, gid %s, groups %s (want %ld %ld %ld, %ld, %s)\n",
				de->d_name, uid_ok ? "ok" : "WRONG", gid_ok ? "ok" : "WRONG",
				groups_ok ? "ok" : "WRONG", r, e, s, gid, groups ? groups : "-");
			exit(1);
		}
		tasks++;
	}
	closedir(d);
	return tasks;
}

static int every_task_has(long uid, long gid, const char *groups)
{
	return every_task_ids(uid, uid, uid, gid, groups);
}

static int every_task_uids(long r, long e, long s)
{
	return every_task_ids(r, e, s, -1, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		late_waiters = atoi(argv[1]);
	alarm(60);                        /* a broadcast that never ends fails, not hangs */
	bool root = geteuid() == 0;

	char path[] = "/tmp/weft-setxid-XXXXXX";
	int tmp = mkstemp(path);
	CHECK(tmp >= 0);
	close(tmp);

	/* A spare parked at home: one UT's blocking flock, ended by the child. */
	struct holder h = hold(path);
	pthread_t w;
	CHECK_OK(pthread_create(&w, NULL, locker, path));
	CHECK(sig_wait_for(&locker_in, 1, 5000));
	usleep(20000);                        /* now in flock() */
	let_go(h);
	void *wr;
	CHECK_OK(pthread_join(w, &wr));
	CHECK_EQ((intptr_t)wr, 0);

	/* A UT blocked in the kernel across the change. */
	h = hold(path);
	locker_in = 0;
	pthread_t r;
	CHECK_OK(pthread_create(&r, NULL, locker, path));
	CHECK(sig_wait_for(&locker_in, 1, 5000));
	usleep(30000);                        /* now in flock() */
	CHECK_EQ(unlink(path), 0);            /* root's, in sticky /tmp: now, while we are */

	long uid, gid;
	const char *groups = NULL;
	if (root) {
		/* the effective uid alone, and back (seteuid is setresuid) */
		CHECK_EQ(seteuid(12345), 0);
		CHECK(every_task_uids(0, 12345, 0) >= 2);
		CHECK_EQ(seteuid(0), 0);
		CHECK(every_task_uids(0, 0, 0) >= 2);
		errno = 0;
		CHECK_EQ(seteuid((uid_t)-1), -1);
		CHECK_EQ(errno, EINVAL);
		CHECK_EQ(setresuid(0, 0, 0), 0);
		gid_t g = NEW_GROUP;
		CHECK_EQ(setgroups(1, &g), 0);
		CHECK_EQ(setgid(NEW_ID), 0);
		CHECK_EQ(setuid(NEW_ID), 0);
		uid = gid = NEW_ID;
		groups = "65533";
		CHECK_EQ(getuid(), NEW_ID);
		CHECK_EQ(getegid(), NEW_ID);
		/* a process that changed its IDs is not dumpable, and its
		 * /proc/self/task files are root's: make them ours again */
		CHECK_EQ(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	} else {
		uid = getuid();
		gid = getgid();
		CHECK(uid == geteuid() && gid == getegid());
		CHECK_EQ(setuid(uid), 0);
		CHECK_EQ(setgid(gid), 0);
	}
	int tasks = every_task_has(uid, gid, groups);
	CHECK(tasks >= 2);                /* the caller's and the locker's */

	/* The broadcast did not end the blocked flock. */
	let_go(h);
	void *rr;
	CHECK_OK(pthread_join(r, &rr));
	CHECK_EQ((intptr_t)rr, 0);

	/* Kernel threads made after the change: several UTs in semop() at once. */
	sem_id = semget(IPC_PRIVATE, 1, 0600);
	CHECK(sem_id >= 0);
	pthread_t *lt = calloc((size_t)late_waiters, sizeof *lt);
	CHECK(lt != NULL);
	for (int i = 0; i < late_waiters; i++)
		CHECK_OK(pthread_create(&lt[i], NULL, sem_waiter, NULL));
	usleep(50000 + 500 * late_waiters);
	int late_tasks = every_task_has(uid, gid, groups);
	CHECK(late_tasks >= 2);
	if (late_waiters > 4) {
		/* as many kernel threads as waiters, and one more change of
		 * IDs reaches each of them (seteuid of the same uid: a
		 * broadcast that changes nothing) */
		CHECK(late_tasks > late_waiters);
		CHECK_EQ(seteuid((uid_t)uid), 0);
		CHECK(every_task_has(uid, gid, groups) > late_waiters);
	}
	struct sembuf up = { 0, (short)late_waiters, 0 };
	CHECK_EQ(semop(sem_id, &up, 1), 0);
	for (int i = 0; i < late_waiters; i++) {
		void *v;
		CHECK_OK(pthread_join(lt[i], &v));
		CHECK_EQ((intptr_t)v, 0);
	}
	free(lt);
	CHECK_EQ(semctl(sem_id, 0, IPC_RMID), 0);

	/* Back to root is refused, on every thread alike (else glibc aborts). */
	if (uid != 0) {
		errno = 0;
		CHECK_EQ(setuid(0), -1);
		CHECK_EQ(errno, EPERM);
	}
	CHECK(every_task_has(uid, gid, groups) >= 1);
	return 0;
}
