/*
 * copystack_blocking_calls — a copy-stack UT's call known to block is made
 * by its kernel thread off the run stack (runtime/handoff.c, detached
 * calls), so the other copy-stack UTs run meanwhile — also the one it
 * waits for — with the call's memory on the caller's stack copied off it:
 *   - msgrcv into a buffer on the receiver's stack, of a message another
 *     copy-stack UT sends from its stack, both ways, many times;
 *   - semop with its operations on the caller's stack: a ping-pong
 *     between two copy-stack UTs on two SysV semaphores;
 *   - lockf and flock that wait for another copy-stack UT's lock on the
 *     same file (another open file description);
 * and a counting copy-stack UT counts while each waits.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>

static struct test_counter counter = { 1, 0 };

/* ---- message queues: each side's buffer on its own stack ---- */

static int qid;
#define MSGS 200
struct msg {
	long type;
	char text[64];
};

static void *msg_side(void *arg)
{
	long me = (long)arg, other = 3 - me;
	for (int i = 0; i < MSGS; i++) {
		struct msg out = { .type = other };
		snprintf(out.text, sizeof out.text, "from %ld #%d", me, i);
		struct msg in;
		memset(&in, 0x55, sizeof in);
		if (me == 1) {
			CHECK_OK(msgsnd(qid, &out, sizeof out.text, 0));
			CHECK_EQ(msgrcv(qid, &in, sizeof in.text, me, 0), (long)sizeof in.text);
		} else {
			CHECK_EQ(msgrcv(qid, &in, sizeof in.text, me, 0), (long)sizeof in.text);
			CHECK_OK(msgsnd(qid, &out, sizeof out.text, 0));
		}
		char want[64];
		snprintf(want, sizeof want, "from %ld #%d", other, i);
		CHECK_EQ(in.type, me);
		CHECK(strcmp(in.text, want) == 0);
	}
	return NULL;
}

/* ---- SysV semaphores: operations on the caller's stack ---- */

static int sid;
#define ROUNDS 200

static void *sem_side(void *arg)
{
	long me = (long)arg;
	for (int i = 0; i < ROUNDS; i++) {
		struct sembuf wait_mine = { (unsigned short)me, -1, 0 };
		struct sembuf post_other = { (unsigned short)(1 - me), 1, 0 };
		if (me == 0) {
			CHECK_OK(semop(sid, &post_other, 1));
			CHECK_OK(semop(sid, &wait_mine, 1));
		} else {
			struct timespec ts = { 5, 0 };
			CHECK_OK(semtimedop(sid, &wait_mine, 1, &ts));
			CHECK_OK(semop(sid, &post_other, 1));
		}
	}
	return NULL;
}

/* ---- file locks: two descriptions of one file ---- */

static char path[] = "/tmp/weft-copystack-lockXXXXXX";
static volatile int held, release, waited;

static void *lock_holder(void *arg)
{
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_OK(flock(fd, LOCK_EX));
	CHECK_OK(lockf(fd, F_LOCK, 0));
	held = 1;
	while (!release)
		sched_yield();
	CHECK_OK(lockf(fd, F_ULOCK, 0));
	CHECK_OK(flock(fd, LOCK_UN));
	close(fd);
	return NULL;
}

static void *lock_waiter(void *arg)
{
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	while (!held)
		sched_yield();
	release = 1;      /* the holder lets go only once this one waits */
	CHECK_OK(flock(fd, LOCK_EX));           /* waits for the holder's flock */
	CHECK_OK(flock(fd, LOCK_UN));
	waited = 1;
	close(fd);
	return NULL;
}

/* Two copy-stack UTs, fn(a) and fn(b), which wait for each other. */
static void run_pair(void *(*fn)(void *), long a, long b)
{
	pthread_t t1 = test_spawn_copy(fn, (void *)a, 0), t2 = test_spawn_copy(fn, (void *)b, 0);
	CHECK_OK(pthread_join(t1, NULL));
	CHECK_OK(pthread_join(t2, NULL));
}

int main(void)
{
	qid = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	if (qid < 0)
		SKIP("no SysV message queues here");
	pthread_t c = test_spawn_copy(test_counting, &counter, 0);
	struct weft_stats before = test_stats();
	unsigned long counted = counter.count;

	run_pair(msg_side, 1, 2);
	CHECK_OK(msgctl(qid, IPC_RMID, NULL));

	sid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	CHECK(sid >= 0);
	run_pair(sem_side, 0, 1);
	CHECK_OK(semctl(sid, 0, IPC_RMID));

	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	pthread_t h = test_spawn_copy(lock_holder, NULL, 0), w = test_spawn_copy(lock_waiter, NULL, 0);
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_join(w, NULL));
	CHECK(waited);
	unlink(path);

	/* the waits were made off the VP (activations on), and the counter
	 * ran meanwhile */
	struct weft_stats after = test_stats();
	if (!getenv("WEFT_ACTIVATIONS"))
		CHECK(after.handoffs > before.handoffs);
	CHECK(counter.count > counted);
	counter.on = 0;
	CHECK_OK(pthread_join(c, NULL));
	return 0;
}
