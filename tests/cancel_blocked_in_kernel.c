/* pthread_cancel ends a cancellation point the UT waits in inside the
 * kernel, off the VP or on it, as NPTL's SIGCANCEL does:
 *   - handed off the VP by a known blocking call: msgrcv on an empty
 *     queue, msgsnd to a full one, lockf(F_LOCK) and fcntl(F_SETLKW) on a
 *     record a child process holds (runtime/handoff.c, the cancellable
 *     bracket);
 *   - taken off the VP by the monitor while it waits: open of a FIFO no
 *     one writes, mq_receive on an empty queue (posix/points.c),
 *     aio_suspend on a read of an empty pipe (posix/aio.c, which also
 *     returns at once for a done operation and EAGAIN after its timeout),
 *     and fgets on an empty pipe, where libc makes its own cancellable
 *     read (the FILE is usable after: its lock was released);
 * Each time the cleanup handler runs, the join returns PTHREAD_CANCELED
 * within a generous bound, and a counting UT went on counting meanwhile.
 * A request made before the call acts before it: the call has no effect
 * (open makes no descriptor).  With cancellation disabled the request
 * interrupts nothing: msgrcv waits on and returns the message (no EINTR
 * leaks from the kick), and the request acts at the next point. */
#include "check.h"
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <weft.h>

static atomic_int handler_ran, entered, counting_stop;
static atomic_long counted;

static void on_cancel(void *arg)
{
	(void)arg;
	handler_ran++;
}

static void *counter(void *arg)
{
	(void)arg;
	while (!counting_stop) {
		counted++;
		sched_yield();
	}
	return NULL;
}

struct msg {
	long type;
	char text[64];
};

static int queue, lock_fd;
static char fifo_path[64];
static mqd_t mq = (mqd_t)-1;

static void *in_msgrcv(void *arg)
{
	(void)arg;
	struct msg m;
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	ssize_t r = msgrcv(queue, &m, sizeof m.text, 0, 0);
	fprintf(stderr, "msgrcv returned %zd (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *in_msgsnd(void *arg)
{
	(void)arg;
	struct msg m = { 1, "x" };
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	for (;;) {                        /* fill the queue, then wait in the full one */
		if (msgsnd(queue, &m, sizeof m.text, 0) != 0) {
			fprintf(stderr, "msgsnd failed (errno %d)\n", errno);
			break;
		}
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void *in_lockf(void *arg)
{
	(void)arg;
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	int r = lockf(lock_fd, F_LOCK, 0);
	fprintf(stderr, "lockf returned %d (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *in_setlkw(void *arg)
{
	(void)arg;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	int r = fcntl(lock_fd, F_SETLKW, &fl);
	fprintf(stderr, "fcntl(F_SETLKW) returned %d (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

static __attribute__((unused)) void *in_fifo_open(void *arg)
{
	(void)arg;
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	int r = open(fifo_path, O_RDONLY);
	fprintf(stderr, "open of the FIFO returned %d (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

static int aio_pipe[2];
static FILE *stdio_in;

static __attribute__((unused)) void *in_fgets(void *arg)
{
	(void)arg;
	char line[64];
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	char *r = fgets(line, sizeof line, stdio_in);
	fprintf(stderr, "fgets returned %p\n", (void *)r);
	pthread_cleanup_pop(0);
	return NULL;
}

static __attribute__((unused)) void *in_aio_suspend(void *arg)
{
	(void)arg;
	/* static, not on the stack: the read is still pending when the UT
	 * is cancelled, and completes (glibc's aio thread writes its result
	 * into cb) after the UT's frames are gone — with ASan's fake stacks,
	 * into a fake stack freed with the UT */
	static char buf[16];
	static struct aiocb cb;
	memset(&cb, 0, sizeof cb);
	cb.aio_fildes = aio_pipe[0];
	cb.aio_buf = buf;
	cb.aio_nbytes = sizeof buf;
	CHECK_OK(aio_read(&cb));
	const struct aiocb *list[1] = { &cb };
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	int r = aio_suspend(list, 1, NULL);
	fprintf(stderr, "aio_suspend returned %d (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

static __attribute__((unused)) void *in_mq_receive(void *arg)
{
	(void)arg;
	char buf[64];
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	ssize_t r = mq_receive(mq, buf, sizeof buf, NULL);
	fprintf(stderr, "mq_receive returned %zd (errno %d)\n", r, errno);
	pthread_cleanup_pop(0);
	return NULL;
}

/* Run fn in a UT until it waits in the kernel, cancel it, join it. */
static void cancel_in(const char *what, void *(*fn)(void *))
{
	handler_ran = 0;
	entered = 0;
	counting_stop = 0;
	counted = 0;
	pthread_t c, t;
	/* a stack of its own: under WEFT_STACK_MODE=copy a call the monitor
	 * takes off the VP keeps the run stack, and the copy-stack UTs of it
	 * wait (docs/runtime.md, "Copy-stack threads") */
	pthread_attr_t own;
	CHECK_OK(pthread_attr_init(&own));
	CHECK_OK(weft_attr_setstackmode(&own, WEFT_STACK_SEPARATE));
	CHECK_OK(pthread_create(&c, &own, counter, NULL));
	CHECK_OK(pthread_attr_destroy(&own));
	CHECK_OK(pthread_create(&t, NULL, fn, NULL));
	while (!entered)
		sched_yield();
	/* long enough for the call to block and, where the monitor hands the
	 * VP on, for it to have done so (the counter runs meanwhile) */
	long before = counted;
	int64_t t0 = test_now_ns();
	while (counted - before < 1000 && test_now_ns() - t0 < 10 * 1000000000LL)
		usleep(1000);
	if (counted - before < 1000)
		fprintf(stderr, "%s: the counter stopped\n", what);
	CHECK(counted - before >= 1000);
	usleep(20000);
	CHECK_OK(pthread_cancel(t));
	void *res;
	t0 = test_now_ns();
	CHECK_OK(pthread_join(t, &res));
	int64_t took = test_now_ns() - t0;
	counting_stop = 1;
	CHECK_OK(pthread_join(c, NULL));
	if (res != PTHREAD_CANCELED || handler_ran != 1)
		fprintf(stderr, "%s: not cancelled\n", what);
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(handler_ran, 1);
	CHECK(took < 2 * 1000000000LL);
}

/* A child that holds a write lock on the whole of fd's file until it is
 * killed; returns once the lock is held. */
static pid_t lock_holder(int fd)
{
	int p[2];
	CHECK_OK(pipe(p));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		if (fcntl(fd, F_SETLK, &fl) != 0)
			_exit(1);
		char c = 'x';
		if (write(p[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static void *early(void *arg)
{
	int *fd_out = arg;
	pthread_cleanup_push(on_cancel, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	*fd_out = open("/dev/null", O_RDONLY);  /* acts before: no descriptor */
	pthread_cleanup_pop(0);
	return NULL;
}

static atomic_int disabled_got;

static void *disabled_msgrcv(void *arg)
{
	(void)arg;
	struct msg m;
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL));
	pthread_cleanup_push(on_cancel, NULL);
	entered = 1;
	ssize_t r = msgrcv(queue, &m, sizeof m.text, 0, 0);
	disabled_got = r == (ssize_t)sizeof m.text && strcmp(m.text, "late") == 0 ? 1 : -1;
	if (r < 0)
		fprintf(stderr, "msgrcv with cancellation disabled: errno %d\n", errno);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
	pthread_testcancel();
	pthread_cleanup_pop(0);
	return NULL;
}

int main(void)
{
	queue = msgget(IPC_PRIVATE, 0600 | IPC_CREAT);
	CHECK(queue >= 0);
	cancel_in("msgrcv", in_msgrcv);
	/* a small queue, so that msgsnd waits soon */
	struct msqid_ds ds;
	CHECK_OK(msgctl(queue, IPC_STAT, &ds));
	ds.msg_qbytes = 256;
	CHECK_OK(msgctl(queue, IPC_SET, &ds));
	cancel_in("msgsnd", in_msgsnd);
	CHECK_OK(msgctl(queue, IPC_RMID, NULL));

	char path[] = "/tmp/weft-cancel-lock-XXXXXX";
	lock_fd = mkstemp(path);
	CHECK(lock_fd >= 0);
	unlink(path);
	CHECK_EQ(write(lock_fd, "0123456789", 10), 10);
	pid_t holder = lock_holder(lock_fd);
	cancel_in("lockf", in_lockf);
	cancel_in("fcntl(F_SETLKW)", in_setlkw);
	CHECK_OK(kill(holder, SIGKILL));
	int st;
	CHECK_EQ(waitpid(holder, &st, 0), holder);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(lock_fd);

	snprintf(fifo_path, sizeof fifo_path, "/tmp/weft-cancel-fifo-%d", (int)getpid());
	CHECK_OK(mkfifo(fifo_path, 0600));
	cancel_in("open of a FIFO", in_fifo_open);
	unlink(fifo_path);

	struct mq_attr qa = { .mq_maxmsg = 2, .mq_msgsize = 64 };
	char qname[64];
	snprintf(qname, sizeof qname, "/weft-cancel-%d", (int)getpid());
	mq = mq_open(qname, O_RDWR | O_CREAT | O_EXCL, 0600, &qa);
	if (mq == (mqd_t)-1) {
		/* printed, not hidden: a machine without /dev/mqueue */
		fprintf(stderr, "cancel_blocked_in_kernel: mq_receive case not run: mq_open: %s\n",
			strerror(errno));
	} else {
		mq_unlink(qname);
		cancel_in("mq_receive", in_mq_receive);
		mq_close(mq);
	}

	/* fgets on an empty pipe: glibc's own read, a cancellation point Weft
	 * does not wrap, ended where it waits off the VP (runtime/preempt.c,
	 * away_cancel); the unwind releases the FILE's lock, so another UT
	 * reads the same FILE afterwards */
	int sp[2];
	CHECK_OK(pipe(sp));
	stdio_in = fdopen(sp[0], "r");
	CHECK(stdio_in != NULL);
	cancel_in("fgets", in_fgets);
	CHECK_EQ(write(sp[1], "after\n", 6), 6);
	char again_line[16];
	CHECK(fgets(again_line, sizeof again_line, stdio_in) == again_line);
	CHECK(strcmp(again_line, "after\n") == 0);
	fclose(stdio_in);
	close(sp[1]);

	/* aio_suspend on a read of an empty pipe: cancelled in its wait;
	 * then it returns at once for a done read, and EAGAIN after its
	 * timeout for one that stays pending */
	CHECK_OK(pipe(aio_pipe));
	cancel_in("aio_suspend", in_aio_suspend);
	CHECK_EQ(write(aio_pipe[1], "d", 1), 1);     /* completes the cancelled UT's read */
	static char abuf[4];
	struct aiocb cb;
	memset(&cb, 0, sizeof cb);
	cb.aio_fildes = aio_pipe[0];
	cb.aio_buf = abuf;
	cb.aio_nbytes = 1;
	const struct aiocb *list[1] = { &cb };
	CHECK_OK(aio_read(&cb));
	struct timespec tenth = { 0, 100 * 1000000 };
	int64_t t0 = test_now_ns();
	errno = 0;
	CHECK_EQ(aio_suspend(list, 1, &tenth), -1);
	CHECK_EQ(errno, EAGAIN);
	int64_t waited = test_now_ns() - t0;
	CHECK(waited >= 100 * 1000000LL && waited < 1000 * 1000000LL);
	CHECK_EQ(write(aio_pipe[1], "e", 1), 1);
	CHECK_OK(aio_suspend(list, 1, NULL));
	CHECK_EQ(aio_return(&cb), 1);
	CHECK_EQ(abuf[0], 'e');
	close(aio_pipe[0]);
	close(aio_pipe[1]);

	/* a request made before the call: it acts first, the call does nothing */
	int probe = open("/dev/null", O_RDONLY);
	CHECK(probe >= 0);
	close(probe);
	int got_fd = -2;
	handler_ran = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, early, &got_fd));
	void *res;
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(handler_ran, 1);
	CHECK_EQ(got_fd, -2);
	int again = open("/dev/null", O_RDONLY);
	CHECK_EQ(again, probe);             /* the lowest number was never taken */
	close(again);

	/* cancellation disabled: the call is not interrupted; the request
	 * waits for the next cancellation point after it is enabled again */
	queue = msgget(IPC_PRIVATE, 0600 | IPC_CREAT);
	CHECK(queue >= 0);
	handler_ran = 0;
	entered = 0;
	CHECK_OK(pthread_create(&t, NULL, disabled_msgrcv, NULL));
	while (!entered)
		sched_yield();
	usleep(100000);
	CHECK_OK(pthread_cancel(t));
	usleep(100000);
	CHECK_EQ(disabled_got, 0);          /* still waiting */
	struct msg late = { 1, "late" };
	CHECK_OK(msgsnd(queue, &late, sizeof late.text, 0));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(disabled_got, 1);
	CHECK_EQ(handler_ran, 1);
	CHECK_OK(msgctl(queue, IPC_RMID, NULL));
	return 0;
}
