/*
 * mn_kept_call_lets_go — a known blocking call that cannot hand its VP on
 * (no spare kernel thread to be had: WEFT_MAX_KTHREADS=1, which the second
 * VP's carrier uses up) blocks its own VP only: the UTs of the other VP go
 * on calling into Weft meanwhile.
 *
 * Until the twenty-fourth stop such a call was made holding the runtime
 * lock, so every other VP stopped at its next Weft call until the call
 * returned: with a flock held by another process, a counter that yields
 * on the other VP counted 0 to 1 in 200 ms (activations_known_calls under
 * WEFT_MAX_KTHREADS=1 and two VPs).  Here the lock is one the counter
 * itself lets go, so the old runtime deadlocked (alarm ends it).
 *
 * Cases, with two VPs (the two UTs first meet spinning, with slicing off,
 * so they run on the two VPs):
 *   - flock(LOCK_EX) on a second open file description of a file the
 *     counter holds: the counter yields 200 ms, counting, then unlocks;
 *     the blocked UT saw thousands of counts during its call, the call
 *     returned 0, and no handoff was made (the call was kept);
 *   - msgrcv, a cancellation point: kept too, and pthread_cancel from the
 *     other VP ends it (the join returns PTHREAD_CANCELED);
 *   - msgrcv again, ended by a message the other VP sends.
 * Registered under two VPs only: with one, a kept call blocks the only VP
 * by design (M:1's rule), and whether the one spare is back in time to
 * carry the next call is a race, so the cases could deadlock there.
 */
#include "mn_test.h"

#include <weft.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <unistd.h>

#define HOLD_NS (200LL * 1000 * 1000)
#define MEET_LIMIT_NS (10LL * 1000 * 1000 * 1000)

static int vps;
static volatile unsigned long count;
static volatile int arrived[2];
static char path[] = "/tmp/weft-mn-kept-XXXXXX";
static int fd_a, fd_b, q;

struct msg {
	long type;
	char text[8];
};

static void meet(int me)
{
	__atomic_store_n(&arrived[me], 1, __ATOMIC_RELEASE);
	int64_t t0 = test_now_ns();
	while (!__atomic_load_n(&arrived[1 - me], __ATOMIC_ACQUIRE)) {
		__builtin_ia32_pause();
		CHECK(test_now_ns() - t0 < MEET_LIMIT_NS);
	}
}

static void count_for(int64_t ns)
{
	int64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < ns) {
		count++;
		sched_yield();
	}
}

/* ---- flock ---- */

static volatile int holding;

static void *holder(void *arg)
{
	(void)arg;
	CHECK_OK(flock(fd_a, LOCK_EX));
	__atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
	meet(0);
	count_for(HOLD_NS);
	CHECK_OK(flock(fd_a, LOCK_UN));
	return NULL;
}

static void *flocker(void *arg)
{
	unsigned long *counted = arg;
	while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
		sched_yield();
	meet(1);
	unsigned long before = count;
	errno = 0;
	CHECK_EQ(flock(fd_b, LOCK_EX), 0);
	CHECK_EQ(errno, 0);
	*counted = count - before;
	CHECK_OK(flock(fd_b, LOCK_UN));
	return NULL;
}

static void flock_case(void)
{
	struct weft_stats s0, s1;
	unsigned long counted = 0;
	arrived[0] = arrived[1] = 0;
	holding = 0;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	pthread_t h, f;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	CHECK_OK(pthread_create(&f, NULL, flocker, &counted));
	CHECK_OK(pthread_join(f, NULL));
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	if (counted <= 1000)
		fprintf(stderr, "the other VP counted %lu during the kept flock\n", counted);
	CHECK(counted > 1000);
	CHECK_EQ(s1.handoffs, s0.handoffs);      /* kept on its VP */
	CHECK_EQ(s1.rejoins - s0.rejoins, s1.handoffs - s0.handoffs);
	CHECK_EQ(s1.threads_off_vp, 0);
}

/* ---- msgrcv: cancelled, then answered ---- */

static volatile int waiting;
static pthread_t receiver_thread;
static bool cancel_it;

static void *receiver(void *arg)
{
	long *got = arg;
	meet(1);
	__atomic_store_n(&waiting, 1, __ATOMIC_RELEASE);
	struct msg m;
	long r = msgrcv(q, &m, sizeof m.text, 0, 0);
	*got = r == (long)sizeof m.text && strcmp(m.text, "go") == 0 ? 1 : -errno;
	return NULL;
}

static void *sender(void *arg)
{
	(void)arg;
	meet(0);
	while (!__atomic_load_n(&waiting, __ATOMIC_ACQUIRE))
		sched_yield();
	count_for(HOLD_NS / 4);              /* the receiver is in msgrcv by now */
	if (cancel_it) {
		CHECK_OK(pthread_cancel(receiver_thread));
	} else {
		struct msg m = { 1, "go" };
		CHECK_OK(msgsnd(q, &m, sizeof m.text, 0));
	}
	return NULL;
}

static void msgrcv_case(bool cancel)
{
	long got = 0;
	cancel_it = cancel;
	arrived[0] = arrived[1] = 0;
	waiting = 0;
	pthread_t st;
	CHECK_OK(pthread_create(&receiver_thread, NULL, receiver, &got));
	CHECK_OK(pthread_create(&st, NULL, sender, NULL));
	void *ret = NULL;
	CHECK_OK(pthread_join(receiver_thread, &ret));
	CHECK_OK(pthread_join(st, NULL));
	if (cancel) {
		CHECK(ret == PTHREAD_CANCELED);
		CHECK_EQ(got, 0);                /* it never returned from msgrcv */
	} else {
		CHECK(ret == NULL);
		CHECK_EQ(got, 1);
	}
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	vps = (int)s.vps;
	if (vps < 2) {
		fprintf(stderr, "needs two VPs in force (WEFT_VPS=2), has %d\n", vps);
		return 77;
	}
	alarm(60);                           /* the old runtime deadlocked here */
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	fd_a = open(path, O_RDWR);
	fd_b = open(path, O_RDWR);           /* its own open file description */
	CHECK(fd_a >= 0 && fd_b >= 0);
	unlink(path);
	q = msgget(IPC_PRIVATE, 0600);
	CHECK(q >= 0);
	for (int i = 0; i < 3; i++)
		flock_case();
	for (int i = 0; i < 3; i++) {
		msgrcv_case(true);
		msgrcv_case(false);
	}
	msgctl(q, IPC_RMID, NULL);
	close(fd_a);
	close(fd_b);
	CHECK_OK(weft_stats_get(&s, sizeof s));
	CHECK_EQ(s.vps, (unsigned)vps);
	return 0;
}
