/*
 * epilogue_once_per_call — every exported call that can switch, block or
 * wake a UT runs Weft's epilogue (deferred tick, deferred signals, debug
 * switch point, asynchronous cancel) exactly once, whichever way it
 * returns; and every exported name is either such a call or on the list of
 * calls that touch no runtime state.
 *
 * The test runs itself under WEFT_SCHED=rrswitch and WEFT_TIMESLICE=0,
 * where each epilogue is a switch point counted per thread
 * (weft_thread_stats_get), and checks that each call adds exactly one to
 * the caller's count: none would mean a call
 * that never gives the debug schedulers (or a deferred tick) a chance; two,
 * a call that runs it twice (the timed cond wait and join once did).
 * Blocking paths are included: a condition wait woken by a partner, a
 * pause() ended by a signal, a join that waits.  The coverage check reads
 * libweft.so's dynamic symbol table.
 */
#include "check.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <aio.h>
#include <mqueue.h>
#include <termios.h>

/* _FORTIFY_SOURCE's open forms, which <fcntl.h> declares only under it */
extern int __open_2(const char *path, int flags);
extern int __open64_2(const char *path, int flags);
extern int __openat_2(int dirfd, const char *path, int flags);
extern int __openat64_2(int dirfd, const char *path, int flags);

/* Calls that run the epilogue: each must be measured below. */
static const char *switching[] = {
	"pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
	"pthread_mutex_clocklock", "pthread_mutex_unlock", "pthread_mutex_setprioceiling",
	"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
	"pthread_cond_signal", "pthread_cond_broadcast",
	"pthread_rwlock_rdlock", "pthread_rwlock_tryrdlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_clockrdlock", "pthread_rwlock_wrlock", "pthread_rwlock_trywrlock",
	"pthread_rwlock_timedwrlock", "pthread_rwlock_clockwrlock", "pthread_rwlock_unlock",
	"pthread_barrier_wait", "pthread_spin_lock", "pthread_spin_trylock", "pthread_spin_unlock",
	"sem_wait", "sem_trywait", "sem_timedwait", "sem_clockwait", "sem_post",
	"pthread_once", "weft_event_wait", "weft_event_timedwait", "weft_event_set",
	"weft_send", "weft_receive", "weft_recvtime", "weft_yield_to",
	"pthread_create", "pthread_join", "pthread_tryjoin_np", "pthread_timedjoin_np",
	"pthread_clockjoin_np", "pthread_cancel", "pthread_testcancel",
	"sched_yield", "pthread_yield", "pthread_setschedparam", "pthread_setschedprio",
	"sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"nanosleep", "clock_nanosleep", "usleep", "sleep", "pause", "syscall",
	"sigsuspend", "__sigsuspend", "__xpg_sigpause", "__sigpause", "sigpause",
	"pthread_sigmask", "sigprocmask", "sighold", "sigrelse", "sigpending",
	"sigtimedwait", "sigwait", "sigwaitinfo",
	"pthread_kill", "pthread_sigqueue", "raise",
	/* the io layer (src/io) */
	"close", "__close", "close_range", "closefrom", "dup", "dup2", "__dup2", "dup3",
	"fcntl", "fcntl64", "__fcntl", "ioctl", "socket", "socketpair", "pipe", "__pipe", "pipe2",
	"read", "__read", "__read_chk", "readv", "write", "__write", "writev",
	"pread", "pread64", "__pread64", "__pread_chk", "__pread64_chk", "pwrite", "pwrite64",
	"__pwrite64", "preadv", "preadv64", "pwritev", "pwritev64", "preadv2", "preadv64v2",
	"pwritev2", "pwritev64v2",
	"recv", "__recv_chk", "recvfrom", "__recvfrom_chk", "recvmsg", "recvmmsg", "send", "__send",
	"sendto", "sendmsg", "sendmmsg", "accept", "accept4", "connect", "__connect",
	"poll", "__poll", "__poll_chk", "ppoll", "__ppoll_chk", "select", "__select", "pselect",
	"epoll_wait", "epoll_pwait", "epoll_pwait2",
	"wait", "__wait", "waitpid", "__waitpid", "wait3", "wait4", "waitid",
	"sendfile", "sendfile64", "splice", "tee",
	"fclose", "pclose", "freopen", "freopen64",
	/* system (posix/system.c): one call, whose wait for the shell is the io
	 * layer's waitpid without its epilogue */
	"system",
	/* the exec family (posix/exec.c): measured failing, as one that
	 * succeeds does not return */
	"execve", "execv", "execvp", "execvpe", "fexecve", "execveat", "execl", "execle", "execlp",
	/* calls that hand the VP on (runtime/handoff.c, posix/blocking.c) */
	"fsync", "fdatasync", "syncfs", "flock", "lockf", "lockf64", "semop", "semtimedop",
	"msgsnd", "msgrcv",
	/* cancellation points made as takeable calls (posix/points.c) */
	"open", "open64", "openat", "openat64", "creat", "creat64", "__open_2", "__open64_2",
	"__openat_2", "__openat64_2", "msync", "tcdrain", "mq_send", "mq_receive", "mq_timedsend",
	"mq_timedreceive", "aio_suspend", "aio_suspend64",
	/* POSIX timers (posix/timer_thread.c), measured on a SIGEV_THREAD
	 * timer; on the kernel's own timers they are the system call alone */
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	NULL,
};

/* Calls that touch no runtime state (attributes, object set-up, getters,
 * identity, signal actions) or never return (exit, unwinding). */
static const char *exempt[] = {
	"pthread_attr_destroy", "pthread_attr_getaffinity_np", "pthread_attr_getdetachstate",
	"pthread_attr_getguardsize", "pthread_attr_getinheritsched", "pthread_attr_getschedparam",
	"pthread_attr_getschedpolicy", "pthread_attr_getscope", "pthread_attr_getsigmask_np",
	"pthread_attr_getstack", "pthread_attr_getstackaddr", "pthread_attr_getstacksize",
	"pthread_attr_init", "pthread_attr_setaffinity_np", "pthread_attr_setdetachstate",
	"pthread_attr_setguardsize", "pthread_attr_setinheritsched", "pthread_attr_setschedparam",
	"pthread_attr_setschedpolicy", "pthread_attr_setscope", "pthread_attr_setsigmask_np",
	"pthread_attr_setstack", "pthread_attr_setstackaddr", "pthread_attr_setstacksize",
	"pthread_getattr_default_np", "pthread_setattr_default_np", "pthread_getattr_np",
	"weft_attr_setstackmode", "weft_attr_getstackmode",
	"pthread_barrier_destroy", "pthread_barrier_init", "pthread_barrierattr_destroy",
	"pthread_barrierattr_getpshared", "pthread_barrierattr_init", "pthread_barrierattr_setpshared",
	"pthread_cond_destroy", "pthread_cond_init", "pthread_condattr_destroy",
	"pthread_condattr_getclock", "pthread_condattr_getpshared", "pthread_condattr_init",
	"pthread_condattr_setclock", "pthread_condattr_setpshared",
	"pthread_mutex_consistent", "pthread_mutex_destroy", "pthread_mutex_getprioceiling",
	"pthread_mutex_init", "pthread_mutexattr_destroy",
	"pthread_mutexattr_getprioceiling", "pthread_mutexattr_getprotocol",
	"pthread_mutexattr_getpshared", "pthread_mutexattr_getrobust", "pthread_mutexattr_gettype",
	"pthread_mutexattr_init", "pthread_mutexattr_setprioceiling", "pthread_mutexattr_setprotocol",
	"pthread_mutexattr_setpshared", "pthread_mutexattr_setrobust", "pthread_mutexattr_settype",
	"pthread_rwlock_destroy", "pthread_rwlock_init", "pthread_rwlockattr_destroy",
	"pthread_rwlockattr_getkind_np", "pthread_rwlockattr_getpshared", "pthread_rwlockattr_init",
	"pthread_rwlockattr_setkind_np", "pthread_rwlockattr_setpshared",
	"pthread_spin_destroy", "pthread_spin_init", "sem_destroy", "sem_getvalue", "sem_init",
	"weft_event_clear", "weft_event_destroy", "weft_event_init", "weft_recvclr", "weft_ping",
	"pthread_key_create", "pthread_key_delete", "pthread_getspecific", "pthread_setspecific",
	"pthread_self", "pthread_equal", "pthread_getconcurrency", "pthread_setconcurrency",
	/* the process's IDs (posix/setxid.c): the caller's kernel thread waits
	 * for the others' handlers, no UT switches */
	"setuid", "setgid", "seteuid", "setegid", "setreuid", "setregid", "setresuid", "setresgid",
	"setgroups", "initgroups",
	/* explicit FILE locks (posix/stdio_lock.c): each forwards to the
	 * pthread mutex call of the FILE's own lock, which runs the epilogue
	 * (stdio_flockfile_excludes_uts) */
	"flockfile", "ftrylockfile", "funlockfile",
	"pthread_getname_np", "pthread_setname_np", "pthread_getschedparam",
	"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
	"pthread_detach", "pthread_setcancelstate", "pthread_setcanceltype",
	"pthread_getaffinity_np", "pthread_setaffinity_np", "pthread_getcpuclockid",
	"pthread_exit", "__pthread_unwind_next", "__pthread_register_cancel",
	"__pthread_unregister_cancel", "_pthread_cleanup_push", "_pthread_cleanup_pop",
	"_pthread_cleanup_push_defer", "_pthread_cleanup_pop_restore",
	"sigaction", "__sigaction", "signal", "bsd_signal", "sysv_signal", "__sysv_signal",
	"sigset", "siginterrupt", "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
	/* the loader (posix/dlopen.c): each forwards to the pthread mutex
	 * calls of the loader's own lock, which run the epilogue */
	"dlopen", "dlmopen", "dlclose",
	"weft_version", "weft_stats_get", "weft_thread_stats_get", "weft_timeslice_get",
	"weft_timeslice_set", "weft_vps_set", "weft_ras_register", "setsockopt", "clock_gettime", "clock_getres", "sigaltstack",
	/* C11 <threads.h> (posix/c11threads.c): each forwards to the pthread
	 * call, which runs the epilogue once (c11_threads_are_uts) */
	"thrd_create", "thrd_join", "thrd_detach", "thrd_current", "thrd_equal", "thrd_yield", "thrd_exit",
	"thrd_sleep", "mtx_init", "mtx_lock", "mtx_trylock", "mtx_unlock", "mtx_destroy", "mtx_timedlock",
	"cnd_init", "cnd_signal", "cnd_broadcast", "cnd_destroy", "cnd_wait", "cnd_timedwait", "tss_create",
	"tss_delete", "tss_get", "tss_set", "call_once",
	/* ptrace (io/child.c): the kernel's call; it only marks the process
	 * as one whose waits for children are the kernel's own */
	"ptrace",
	/* namespaces (posix/namespace.c): the kernel's call, and at most a
	 * wait for the monitor's end; no UT switches, none is woken */
	"unshare", "setns",
	/* vfork (arch/<isa>/vfork.S, runtime/vfork.c): the child returns
	 * into the program without touching the runtime, and the parent
	 * comes back from its system call as from any plain call */
	"vfork",
	NULL,
};

static bool measured[sizeof switching / sizeof switching[0]];

/* glibc's header maps pthread_yield to sched_yield; old binaries still
 * import the name itself, which Weft exports. */
int pthread_yield_itself(void) __asm__("pthread_yield");

static uint64_t my_points(void)
{
	struct weft_thread_stats s;
	CHECK_OK(weft_thread_stats_get(pthread_self(), &s, sizeof s));
	return s.switch_points;
}

static void mark(const char *name, uint64_t before)
{
	uint64_t d = my_points() - before;
	if (d != 1) {
		fprintf(stderr, "%s ran the epilogue %llu times, not once\n", name, (unsigned long long)d);
		exit(1);
	}
	for (int i = 0; switching[i]; i++)
		if (strcmp(switching[i], name) == 0)
			measured[i] = true;
}

/* Measure one call: exactly one switch point for the caller. */
#define ONE(name, call)                                  \
	do {                                             \
		uint64_t b_ = my_points();               \
		(void)(call);                            \
		mark(name, b_);                          \
	} while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t cmd;
static atomic_int partner_job;
static volatile sig_atomic_t got_usr1;
static int wake_pipe[2];

static void on_usr1(int sig) { (void)sig; got_usr1 = 1; }

/* Wakes main out of a blocking call after main has had time to block. */
static void *partner(void *arg)
{
	for (;;) {
		while (sem_wait(&cmd) != 0)
			;
		usleep(2000);
		switch (partner_job) {
		case 1:
			pthread_mutex_lock(&m);
			pthread_cond_signal(&c);
			pthread_mutex_unlock(&m);
			break;
		case 2:
			kill(getpid(), SIGUSR1);
			break;
		case 3:
			if (write(wake_pipe[1], "w", 1) != 1)
				abort();
			break;
		default:
			return arg;
		}
	}
}

static void *quick(void *arg) { return arg; }

int __sigsuspend(const sigset_t *mask);
int __sigpause(int sig_or_mask, int is_sig);
int __xpg_sigpause(int sig);
int bsd_sigpause(int mask) __asm__("sigpause");
static void on_timer(union sigval v) { (void)v; }

static pthread_t zombie(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, quick, NULL));
	while (weft_ping(t) == 0)
		usleep(100);
	return t;
}

static void once_init(void) {}

/* glibc's other names for the same calls, which no header declares */
extern ssize_t __read(int, void *, size_t);
extern ssize_t __write(int, const void *, size_t);
extern ssize_t __read_chk(int, void *, size_t, size_t);
extern ssize_t __pread64(int, void *, size_t, off_t);
extern ssize_t __pwrite64(int, const void *, size_t, off_t);
extern ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
extern ssize_t __pread64_chk(int, void *, size_t, off_t, size_t);
extern ssize_t __recv_chk(int, void *, size_t, size_t, int);
extern ssize_t __recvfrom_chk(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
extern ssize_t __send(int, const void *, size_t, int);
extern int __connect(int, const struct sockaddr *, socklen_t);
extern int __poll(struct pollfd *, nfds_t, int);
extern int __poll_chk(struct pollfd *, nfds_t, int, size_t);
extern int __ppoll_chk(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
extern int __select(int, fd_set *, fd_set *, fd_set *, struct timeval *);
extern int __close(int);
extern int __dup2(int, int);
extern int __fcntl(int, int, ...);
extern int __pipe(int[2]);
extern pid_t __wait(int *);
extern pid_t __waitpid(pid_t, int *, int);
extern int fcntl64(int, int, ...);
extern ssize_t preadv64(int, const struct iovec *, int, off_t);
extern ssize_t pwritev64(int, const struct iovec *, int, off_t);
extern ssize_t preadv64v2(int, const struct iovec *, int, off_t, int);
extern ssize_t pwritev64v2(int, const struct iovec *, int, off_t, int);
extern ssize_t sendfile64(int, int, off_t *, size_t);

static pid_t exited_child(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	return pid;
}

/* The io layer: each call completes at once except the one read that waits
 * for the partner to write. */
static void run_io_calls(void)
{
	char b[64];
	int p[2], q[2], sv[2];
	struct iovec v = { b, 1 };
	ONE("pipe", pipe(p));
	ONE("__pipe", __pipe(q));
	close(q[0]);
	close(q[1]);
	ONE("pipe2", pipe2(q, O_CLOEXEC));
	ONE("write", write(p[1], "abcdefghijklmnopqrstuvwxyz", 26));
	ONE("__write", __write(p[1], "ab", 2));
	ONE("writev", writev(p[1], &v, 1));
	ONE("read", read(p[0], b, 1));
	ONE("__read", __read(p[0], b, 1));
	ONE("__read_chk", __read_chk(p[0], b, 1, sizeof b));
	ONE("readv", readv(p[0], &v, 1));
	wake_pipe[0] = p[0];
	wake_pipe[1] = p[1];
	while (read(p[0], b, sizeof b) == sizeof b)
		;
	partner_job = 3;
	sem_post(&cmd);
	ONE("read", read(p[0], b, 1));          /* waits for the partner's write */
	ONE("pread", pread(p[0], b, 1, 0));      /* ESPIPE, at once */
	ONE("pread64", pread64(p[0], b, 1, 0));
	ONE("__pread64", __pread64(p[0], b, 1, 0));
	ONE("__pread_chk", __pread_chk(p[0], b, 1, 0, sizeof b));
	ONE("__pread64_chk", __pread64_chk(p[0], b, 1, 0, sizeof b));
	ONE("pwrite", pwrite(p[1], b, 1, 0));
	ONE("pwrite64", pwrite64(p[1], b, 1, 0));
	ONE("__pwrite64", __pwrite64(p[1], b, 1, 0));
	ONE("preadv", preadv(p[0], &v, 1, 0));
	ONE("preadv64", preadv64(p[0], &v, 1, 0));
	ONE("pwritev", pwritev(p[1], &v, 1, 0));
	ONE("pwritev64", pwritev64(p[1], &v, 1, 0));
	ONE("pwritev2", pwritev2(p[1], &v, 1, -1, 0));
	ONE("pwritev64v2", pwritev64v2(p[1], &v, 1, -1, 0));
	ONE("preadv2", preadv2(p[0], &v, 1, -1, 0));
	ONE("preadv64v2", preadv64v2(p[0], &v, 1, -1, 0));
	struct pollfd pf = { p[0], POLLIN, 0 };
	struct timespec zero = { 0, 0 };
	ONE("poll", poll(&pf, 1, 0));
	ONE("__poll", __poll(&pf, 1, 0));
	ONE("__poll_chk", __poll_chk(&pf, 1, 0, sizeof pf));
	ONE("ppoll", ppoll(&pf, 1, &zero, NULL));
	ONE("__ppoll_chk", __ppoll_chk(&pf, 1, &zero, NULL, sizeof pf));
	fd_set rs;
	struct timeval tz = { 0, 0 };
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	ONE("select", select(p[0] + 1, &rs, NULL, NULL, &tz));
	ONE("__select", __select(p[0] + 1, &rs, NULL, NULL, &tz));
	ONE("pselect", pselect(p[0] + 1, &rs, NULL, NULL, &zero, NULL));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	ONE("epoll_wait", epoll_wait(ep, &out, 1, 0));
	ONE("epoll_pwait", epoll_pwait(ep, &out, 1, 0, NULL));
	ONE("epoll_pwait2", epoll_pwait2(ep, &out, 1, &zero, NULL));
	close(ep);
	int d;
	ONE("dup", d = dup(p[0]));
	ONE("dup2", dup2(p[0], d));
	ONE("__dup2", __dup2(p[0], d));
	ONE("dup3", dup3(p[0], d, O_CLOEXEC));
	ONE("fcntl", fcntl(d, F_GETFL));
	ONE("fcntl64", fcntl64(d, F_GETFL));
	ONE("__fcntl", __fcntl(d, F_GETFL));
	int nb = 0;
	ONE("ioctl", ioctl(d, FIONBIO, &nb));
	ONE("close", close(d));
	d = dup(p[0]);
	ONE("__close", __close(d));
	d = dup(p[0]);
	ONE("close_range", close_range((unsigned)d, (unsigned)d, 0));
	ONE("tee", tee(p[0], q[1], 1, SPLICE_F_NONBLOCK));
	ONE("splice", splice(p[0], NULL, q[1], NULL, 1, SPLICE_F_NONBLOCK));

	ONE("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ONE("send", send(sv[0], "abcdefgh", 8, 0));
	ONE("__send", __send(sv[0], "abcdefgh", 8, 0));
	ONE("sendto", sendto(sv[0], "abcdefgh", 8, 0, NULL, 0));
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	ONE("sendmsg", sendmsg(sv[0], &m, 0));
	struct mmsghdr mm = { .msg_hdr = m };
	ONE("sendmmsg", sendmmsg(sv[0], &mm, 1, 0));
	ONE("recv", recv(sv[1], b, 1, 0));
	ONE("__recv_chk", __recv_chk(sv[1], b, 1, sizeof b, 0));
	ONE("recvfrom", recvfrom(sv[1], b, 1, 0, NULL, NULL));
	ONE("__recvfrom_chk", __recvfrom_chk(sv[1], b, 1, sizeof b, 0, NULL, NULL));
	ONE("recvmsg", recvmsg(sv[1], &m, 0));
	ONE("recvmmsg", recvmmsg(sv[1], &mm, 1, 0, NULL));
	int tf = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	off_t off = 0;
	ONE("sendfile", sendfile(sv[0], tf, &off, 10));
	ONE("sendfile64", sendfile64(sv[0], tf, &off, 10));
	close(tf);
	close(sv[0]);
	close(sv[1]);

	int l;
	ONE("socket", l = socket(AF_INET, SOCK_STREAM, 0));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
	CHECK_OK(listen(l, 4));
	CHECK_OK(getsockname(l, (struct sockaddr *)&a, &alen));
	int c1 = socket(AF_INET, SOCK_STREAM, 0), c2 = socket(AF_INET, SOCK_STREAM, 0);
	ONE("connect", connect(c1, (struct sockaddr *)&a, sizeof a));
	ONE("__connect", __connect(c2, (struct sockaddr *)&a, sizeof a));
	int a1, a2;
	ONE("accept", a1 = accept(l, NULL, NULL));
	ONE("accept4", a2 = accept4(l, NULL, NULL, SOCK_CLOEXEC));
	close(a1);
	close(a2);
	close(c1);
	close(c2);
	close(l);

	int st;
	siginfo_t si;
	pid_t kid = exited_child();
	ONE("waitpid", waitpid(kid, &st, 0));
	kid = exited_child();
	ONE("__waitpid", __waitpid(kid, &st, 0));
	kid = exited_child();
	ONE("wait", wait(&st));
	kid = exited_child();
	ONE("__wait", __wait(&st));
	kid = exited_child();
	ONE("wait3", wait3(&st, 0, NULL));
	kid = exited_child();
	ONE("wait4", wait4(kid, &st, 0, NULL));
	kid = exited_child();
	ONE("waitid", waitid(P_PID, (id_t)kid, &si, WEXITED));
	FILE *fp = fdopen(dup(p[0]), "r");
	ONE("freopen", freopen("/dev/null", "r", fp) ? 0 : -1);
	ONE("freopen64", freopen64("/dev/null", "r", fp) ? 0 : -1);
	ONE("fclose", fclose(fp));
	fp = popen("true", "r");
	ONE("pclose", pclose(fp));
	ONE("system", system("exit 0"));     /* parks while the shell runs */
	{
		static char nowhere[] = "/nonexistent/weft-no-such-program";
		char *const xargv[] = { nowhere, NULL };
		char *const xenv[] = { NULL };
		ONE("execve", execve(nowhere, xargv, xenv));
		ONE("execv", execv(nowhere, xargv));
		ONE("execvp", execvp(nowhere, xargv));
		ONE("execvpe", execvpe(nowhere, xargv, xenv));
		ONE("fexecve", fexecve(-1, xargv, xenv));
		ONE("execveat", execveat(AT_FDCWD, nowhere, xargv, xenv, 0));
		ONE("execl", execl(nowhere, nowhere, (char *)NULL));
		ONE("execle", execle(nowhere, nowhere, (char *)NULL, xenv));
		ONE("execlp", execlp(nowhere, nowhere, (char *)NULL));
	}
	ONE("closefrom", (closefrom(q[1]), 0));   /* q[1] is the highest of the program's own */
	close(p[0]);
	close(p[1]);
	close(q[0]);
}

static void run_calls(void)
{
	struct timespec past = { 0, 0 }, zero = { 0, 0 };
	struct timespec future = test_time_in(CLOCK_REALTIME, 50000000);
	pthread_t self = pthread_self();

	ONE("pthread_mutex_lock", pthread_mutex_lock(&m));
	ONE("pthread_mutex_unlock", pthread_mutex_unlock(&m));
	ONE("pthread_mutex_trylock", pthread_mutex_trylock(&m));
	pthread_mutex_unlock(&m);
	ONE("pthread_mutex_timedlock", pthread_mutex_timedlock(&m, &future));
	pthread_mutex_unlock(&m);
	ONE("pthread_mutex_clocklock", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past));
	pthread_mutex_unlock(&m);
	/* The priority protocols' paths (they may switch: a ceiling given
	 * back, a waiter handed the mutex) */
	for (int protocol = PTHREAD_PRIO_INHERIT; protocol <= PTHREAD_PRIO_PROTECT; protocol++) {
		pthread_mutexattr_t ma;
		pthread_mutex_t pm;
		int old;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setprotocol(&ma, protocol);
		pthread_mutexattr_setprioceiling(&ma, 99);
		pthread_mutex_init(&pm, &ma);
		ONE("pthread_mutex_lock", pthread_mutex_lock(&pm));
		ONE("pthread_mutex_unlock", pthread_mutex_unlock(&pm));
		ONE("pthread_mutex_trylock", pthread_mutex_trylock(&pm));
		pthread_mutex_unlock(&pm);
		if (protocol == PTHREAD_PRIO_PROTECT)
			ONE("pthread_mutex_setprioceiling", pthread_mutex_setprioceiling(&pm, 98, &old));
		pthread_mutex_destroy(&pm);
		pthread_mutexattr_destroy(&ma);
	}

	pthread_mutex_lock(&m);
	ONE("pthread_cond_timedwait", pthread_cond_timedwait(&c, &m, &past));
	ONE("pthread_cond_clockwait", pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past));
	partner_job = 1;
	sem_post(&cmd);
	ONE("pthread_cond_wait", pthread_cond_wait(&c, &m));   /* blocks until the partner signals */
	pthread_mutex_unlock(&m);
	ONE("pthread_cond_signal", pthread_cond_signal(&c));
	ONE("pthread_cond_broadcast", pthread_cond_broadcast(&c));

	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	ONE("pthread_rwlock_rdlock", pthread_rwlock_rdlock(&rw));
	ONE("pthread_rwlock_unlock", pthread_rwlock_unlock(&rw));
	ONE("pthread_rwlock_tryrdlock", pthread_rwlock_tryrdlock(&rw));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_timedrdlock", pthread_rwlock_timedrdlock(&rw, &future));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_clockrdlock", pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &past));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_wrlock", pthread_rwlock_wrlock(&rw));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_trywrlock", pthread_rwlock_trywrlock(&rw));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_timedwrlock", pthread_rwlock_timedwrlock(&rw, &future));
	pthread_rwlock_unlock(&rw);
	ONE("pthread_rwlock_clockwrlock", pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &past));
	pthread_rwlock_unlock(&rw);

	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 1);
	ONE("pthread_barrier_wait", pthread_barrier_wait(&bar));
	pthread_barrier_destroy(&bar);

	pthread_spinlock_t sp;
	pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
	ONE("pthread_spin_lock", pthread_spin_lock(&sp));
	ONE("pthread_spin_unlock", pthread_spin_unlock(&sp));
	ONE("pthread_spin_trylock", pthread_spin_trylock(&sp));
	pthread_spin_unlock(&sp);

	sem_t s;
	sem_init(&s, 0, 0);
	ONE("sem_post", sem_post(&s));
	ONE("sem_wait", sem_wait(&s));
	sem_post(&s);
	ONE("sem_trywait", sem_trywait(&s));
	ONE("sem_timedwait", sem_timedwait(&s, &past));
	ONE("sem_clockwait", sem_clockwait(&s, CLOCK_MONOTONIC, &past));

	pthread_once_t once = PTHREAD_ONCE_INIT;
	ONE("pthread_once", pthread_once(&once, once_init));

	weft_event_t ev = WEFT_EVENT_INITIALIZER;
	ONE("weft_event_set", weft_event_set(&ev));
	ONE("weft_event_wait", weft_event_wait(&ev));
	ONE("weft_event_timedwait", weft_event_timedwait(&ev, CLOCK_MONOTONIC, &past));

	uintptr_t msg;
	ONE("weft_send", weft_send(self, 7));
	ONE("weft_receive", weft_receive(&msg));
	weft_send(self, 8);
	ONE("weft_recvtime", weft_recvtime(&msg, &zero));
	ONE("weft_yield_to", weft_yield_to(self));

	pthread_t t;
	ONE("pthread_create", pthread_create(&t, NULL, quick, NULL));
	ONE("pthread_join", pthread_join(t, NULL));        /* waits for it to run */
	t = zombie();
	ONE("pthread_tryjoin_np", pthread_tryjoin_np(t, NULL));
	t = zombie();
	ONE("pthread_timedjoin_np", pthread_timedjoin_np(t, NULL, &future));
	t = zombie();
	ONE("pthread_clockjoin_np", pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, &future));
	t = zombie();
	ONE("pthread_cancel", pthread_cancel(t));
	pthread_join(t, NULL);
	ONE("pthread_testcancel", (pthread_testcancel(), 0));

	struct sched_param prm = { 0 };
	ONE("sched_yield", sched_yield());
	ONE("pthread_yield", pthread_yield_itself());
	ONE("pthread_setschedparam", pthread_setschedparam(self, SCHED_OTHER, &prm));
	ONE("pthread_setschedprio", pthread_setschedprio(self, 0));
	{
		struct sched_param sp0 = { 0 };
		ONE("sched_getparam", sched_getparam(0, &sp0));
		ONE("sched_setparam", sched_setparam(0, &sp0));
		ONE("sched_getscheduler", sched_getscheduler(0));
		ONE("sched_setscheduler", sched_setscheduler(0, SCHED_OTHER, &sp0));
	}

	ONE("nanosleep", nanosleep(&zero, NULL));
	ONE("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL));
	ONE("usleep", usleep(0));
	ONE("sleep", sleep(0));
	partner_job = 2;
	sem_post(&cmd);
	ONE("pause", pause());                 /* ended by the partner's signal */
	CHECK(got_usr1);

	/* the signal-waiting family: each ended by the partner's signal */
	sigset_t none, usr2, was;
	sigemptyset(&none);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	got_usr1 = 0;
	partner_job = 2;
	sem_post(&cmd);
	ONE("sigsuspend", sigsuspend(&none));
	CHECK(got_usr1);
	got_usr1 = 0;
	partner_job = 2;
	sem_post(&cmd);
	ONE("__sigsuspend", __sigsuspend(&none));
	CHECK(got_usr1);
	got_usr1 = 0;
	partner_job = 2;
	sem_post(&cmd);
	ONE("__xpg_sigpause", __xpg_sigpause(SIGUSR2));
	CHECK(got_usr1);
	got_usr1 = 0;
	partner_job = 2;
	sem_post(&cmd);
	ONE("__sigpause", __sigpause(SIGUSR2, 1));
	CHECK(got_usr1);
	got_usr1 = 0;
	partner_job = 2;
	sem_post(&cmd);
	ONE("sigpause", bsd_sigpause(0));
	CHECK(got_usr1);
	/* the masks, and waits for a signal already pending */
	ONE("pthread_sigmask", pthread_sigmask(SIG_BLOCK, &usr2, &was));
	ONE("sigprocmask", sigprocmask(SIG_BLOCK, &usr2, NULL));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	ONE("sighold", sighold(SIGUSR2));
	ONE("sigrelse", sigrelse(SIGUSR2));
	ONE("sighold", sighold(SIGUSR2));
#pragma GCC diagnostic pop
	sigset_t pend;
	ONE("sigpending", sigpending(&pend));
	struct timespec none_left = { 0, 0 };
	ONE("sigtimedwait", sigtimedwait(&usr2, NULL, &none_left));   /* EAGAIN */
	int got_sig;
	CHECK_OK(pthread_kill(self, SIGUSR2));
	ONE("sigwait", sigwait(&usr2, &got_sig));
	CHECK_EQ(got_sig, SIGUSR2);
	CHECK_OK(pthread_kill(self, SIGUSR2));
	ONE("sigwaitinfo", sigwaitinfo(&usr2, NULL));
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &was, NULL));

	uint32_t word = 0;
	ONE("syscall", syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
	ONE("pthread_kill", pthread_kill(self, 0));
	ONE("pthread_sigqueue", pthread_sigqueue(self, 0, (union sigval){ 0 }));
	ONE("raise", raise(0));
	run_io_calls();

	/* blocking calls that hand the VP on (runtime/handoff.c) */
	char path[] = "/tmp/weft-epilogue-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "x", 1), 1);
	ONE("fsync", fsync(fd));
	ONE("fdatasync", fdatasync(fd));
	ONE("syncfs", syncfs(fd));
	ONE("flock", flock(fd, LOCK_EX));
	ONE("flock", flock(fd, LOCK_UN));
	ONE("lockf", lockf(fd, F_LOCK, 0));
	ONE("lockf64", lockf64(fd, F_ULOCK, 0));
	close(fd);
	int sem = semget(IPC_PRIVATE, 1, 0600);
	CHECK(sem >= 0);
	struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };
	struct timespec second = { 1, 0 };
	ONE("semop", semop(sem, &up, 1));
	ONE("semtimedop", semtimedop(sem, &down, 1, &second));
	semctl(sem, 0, IPC_RMID);
	int q = msgget(IPC_PRIVATE, 0600);
	CHECK(q >= 0);
	struct { long type; char text[8]; } note = { 1, "hello" }, got;
	ONE("msgsnd", msgsnd(q, &note, sizeof note.text, 0));
	ONE("msgrcv", (int)msgrcv(q, &got, sizeof got.text, 0, 0));
	CHECK(strcmp(got.text, "hello") == 0);
	msgctl(q, IPC_RMID, NULL);

	/* cancellation points made as takeable calls (posix/points.c) */
	char made[] = "/tmp/weft-epilogue-open-XXXXXX";
	int mfd = mkstemp(made);
	CHECK(mfd >= 0);
	close(mfd);
	int fds[10], nf = 0;
	ONE("open", fds[nf++] = open(made, O_RDONLY | O_CLOEXEC));
	ONE("open64", fds[nf++] = open64(made, O_RDONLY | O_CLOEXEC));
	ONE("openat", fds[nf++] = openat(AT_FDCWD, made, O_RDONLY | O_CLOEXEC));
	ONE("openat64", fds[nf++] = openat64(AT_FDCWD, made, O_RDONLY | O_CLOEXEC));
	ONE("creat", fds[nf++] = creat(made, 0600));
	ONE("creat64", fds[nf++] = creat64(made, 0600));
	ONE("__open_2", fds[nf++] = __open_2(made, O_RDONLY | O_CLOEXEC));
	ONE("__open64_2", fds[nf++] = __open64_2(made, O_RDONLY | O_CLOEXEC));
	ONE("__openat_2", fds[nf++] = __openat_2(AT_FDCWD, made, O_RDONLY | O_CLOEXEC));
	ONE("__openat64_2", fds[nf++] = __openat64_2(AT_FDCWD, made, O_RDONLY | O_CLOEXEC));
	for (int i = 0; i < nf; i++) {
		CHECK(fds[i] >= 0);
		close(fds[i]);
	}
	unlink(made);
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	ONE("msync", msync(page, 4096, MS_SYNC));
	munmap(page, 4096);
	ONE("tcdrain", tcdrain(wake_pipe[0]));          /* ENOTTY: still one call */
	/* a queue where /dev/mqueue exists; else the calls fail (EBADF) just the same */
	struct mq_attr qa = { .mq_maxmsg = 2, .mq_msgsize = 8 };
	mqd_t mq = mq_open("/weft-epilogue", O_RDWR | O_CREAT | O_EXCL, 0600, &qa);
	mq_unlink("/weft-epilogue");
	char qmsg[8] = "hi";
	unsigned qprio;
	struct timespec qsoon;
	clock_gettime(CLOCK_REALTIME, &qsoon);
	qsoon.tv_sec += 1;
	ONE("mq_send", mq_send(mq, qmsg, 3, 1));
	ONE("mq_timedsend", mq_timedsend(mq, qmsg, 3, 1, &qsoon));
	ONE("mq_receive", (int)mq_receive(mq, qmsg, sizeof qmsg, &qprio));
	ONE("mq_timedreceive", (int)mq_timedreceive(mq, qmsg, sizeof qmsg, &qprio, &qsoon));
	if (mq != (mqd_t)-1)
		mq_close(mq);
	/* aio_suspend (posix/aio.c) on an operation already done */
	static char abuf[1];
	int ap[2];
	CHECK_OK(pipe(ap));
	struct aiocb acb;
	memset(&acb, 0, sizeof acb);
	acb.aio_fildes = ap[1];
	acb.aio_buf = abuf;
	acb.aio_nbytes = 1;
	CHECK_OK(aio_write(&acb));
	const struct aiocb *alist[1] = { &acb };
	while (aio_error(&acb) == EINPROGRESS)
		ONE("aio_suspend", aio_suspend(alist, 1, NULL));
	ONE("aio_suspend", aio_suspend(alist, 1, NULL));
	ONE("aio_suspend64", aio_suspend64((const struct aiocb64 *const *)alist, 1, NULL));
	CHECK_EQ(aio_return(&acb), 1);
	close(ap[0]);
	close(ap[1]);

	/* a SIGEV_THREAD timer: its delete waits for the timer's own UT */
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = on_timer;
	timer_t tm;
	struct itimerspec its = { .it_value = { 100, 0 } }, cur;
	ONE("timer_create", timer_create(CLOCK_MONOTONIC, &sev, &tm));
	ONE("timer_settime", timer_settime(tm, 0, &its, NULL));
	ONE("timer_gettime", timer_gettime(tm, &cur));
	ONE("timer_getoverrun", timer_getoverrun(tm));
	ONE("timer_delete", timer_delete(tm));
}

/* Every name libweft.so exports, from its dynamic symbol table. */
static void check_coverage(void)
{
	Dl_info di;
	if (!dladdr((void *)weft_version, &di) || !di.dli_fname || !strstr(di.dli_fname, ".so"))
		return;           /* libweft.a linked in (sanitizer build): no table to read */
	int fd = open(di.dli_fname, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	struct stat st;
	CHECK_OK(fstat(fd, &st));
	const unsigned char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(f != MAP_FAILED);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	int missing = 0, names = 0;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
		const char *str = (const char *)(f + sh[sh[i].sh_link].sh_offset);
		size_t n = sh[i].sh_size / sizeof *sym;
		for (size_t k = 0; k < n; k++) {
			if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
			    ELF64_ST_BIND(sym[k].st_info) == STB_LOCAL)
				continue;
			const char *name = str + sym[k].st_name;
			if (strncmp(name, "__weft_", 7) == 0)
				continue;     /* old-ABI versions of listed names */
			names++;
			bool listed = false;
			for (int j = 0; switching[j] && !listed; j++)
				listed = strcmp(switching[j], name) == 0;
			for (int j = 0; exempt[j] && !listed; j++)
				listed = strcmp(exempt[j], name) == 0;
			if (!listed) {
				fprintf(stderr, "exported %s is neither a switching call nor exempt\n", name);
				missing++;
			}
		}
	}
	CHECK(names > 100);
	CHECK_EQ(missing, 0);
}

int main(int argc, char **argv)
{
	/* No time slicing: a tick that finds this UT in its own code runs the
	 * trampoline's epilogue, a switch point of its own (preempt.c); one
	 * that fell between a call's two readings counted two for the call
	 * (epoll_wait, once, in a loaded debug run of ci138). */
	const char *sched = getenv("WEFT_SCHED"), *slice = getenv("WEFT_TIMESLICE");
	if (!sched || strcmp(sched, "rrswitch") != 0 || !slice || strcmp(slice, "0") != 0) {
		setenv("WEFT_SCHED", "rrswitch", 1);
		setenv("WEFT_TIMESLICE", "0", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	(void)argc;
	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);
	CHECK_OK(sem_init(&cmd, 0, 0));
	pthread_t p;
	CHECK_OK(pthread_create(&p, NULL, partner, NULL));
	run_calls();
	partner_job = 0;
	sem_post(&cmd);
	CHECK_OK(pthread_join(p, NULL));
	int unmeasured = 0;
	for (int i = 0; switching[i]; i++)
		if (!measured[i]) {
			fprintf(stderr, "%s was not measured\n", switching[i]);
			unmeasured++;
		}
	CHECK_EQ(unmeasured, 0);
	check_coverage();
	return 0;
}
