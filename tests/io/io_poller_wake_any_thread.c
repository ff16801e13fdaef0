/*
 * io_poller_wake_any_thread — the poller's wake(vp) (rt.h, struct
 * weft_poller) makes a VP asleep in the poller return at once, from a
 * kernel thread that is not the VP's and that runs no Weft code but wake
 * itself; and a wake made just before the VP goes to sleep is not lost
 * (the VP's next wait returns at once).
 *
 * The VP sleeps in the poller for ever: a reader UT waits in read() on a
 * pipe nobody writes yet, and main waits to join it; no timer is set.  A
 * kernel thread made with raw clone() (no TLS of its own, so it calls
 * nothing but raw system calls and wake) waits for the VP to be idle, wakes
 * it, and checks that the VP's count of kernel sleeps goes up (it woke,
 * found nothing to run, and slept again), five times; then it writes the
 * byte the reader waits for.  Before all that, main itself calls wake and
 * then parks: the VP's first wait must return at once, so two sleeps are
 * counted in quick succession.  Registered with slicing off
 * (WEFT_TIMESLICE=0): an idle spell that begins with the tick armed is cut
 * once by it (runtime/preempt.c, __weft_preempt_idle), a kernel sleep more.
 */
#include "runtime/rt.h"
#include "arch/arch.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAKES 5
#define SHORT_NS 200000000ll           /* a wake must be seen well within this */

static int p[2];
static volatile int result = -1;       /* the kernel thread's verdict */

static long raw(long nr, long a, long b, long c)
{
	return __weft_raw_syscall6(nr, a, b, c, 0, 0, 0);
}

static int64_t raw_now(void)
{
	struct timespec ts;
	raw(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void raw_nap(void)
{
	struct timespec ts = { 0, 1000000 };
	raw(SYS_nanosleep, (long)&ts, 0, 0);
}

static uint64_t sleeps(void) { return __atomic_load_n(&__weft_vps[0].stat.idle_sleeps, __ATOMIC_RELAXED); }
static int idle(void) { return __atomic_load_n(&__weft_vps[0].idle, __ATOMIC_RELAXED); }

/* Wait until the VP has slept `want` times and is asleep again. */
static bool await_sleeps(uint64_t want)
{
	int64_t end = raw_now() + SHORT_NS;
	while (raw_now() < end) {
		if (sleeps() >= want && idle())
			return true;
		raw_nap();
	}
	return false;
}

static int foreign(void *arg)
{
	(void)arg;
	const struct weft_poller *pl = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
	int verdict = 0;
	/* the VP went to sleep in the poller */
	int64_t end = raw_now() + 5 * 1000000000ll;
	while (!(idle() && pl) && raw_now() < end) {
		raw_nap();
		pl = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
	}
	if (!pl || !idle())
		verdict = 1;
	for (int i = 0; i < WAKES && !verdict; i++) {
		uint64_t before = sleeps();
		pl->wake(&__weft_vps[0]);
		if (!await_sleeps(before + 1))
			verdict = 2 + i;
	}
	result = verdict;
	char c = 'x';
	raw(SYS_write, p[1], (long)&c, 1);
	raw(SYS_exit, 0, 0, 0);
	return 0;
}

static void *reader(void *arg)
{
	char c;
	long n = read(p[0], &c, 1);
	return (void *)n;
}

int main(void)
{
	CHECK_OK(pipe(p));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, reader, NULL));
	sched_yield();                         /* the reader parks: the poller exists */
	const struct weft_poller *pl = __atomic_load_n(&__weft_poller, __ATOMIC_ACQUIRE);
	CHECK(pl != NULL && pl->wake != NULL);

	/* a wake before the sleep is kept: with it, a 50 ms sleep takes two
	 * kernel sleeps (one cut short at once, one to the timer); without
	 * it, one */
	struct timespec nap = { 0, 50000000 };
	uint64_t before = sleeps();
	nanosleep(&nap, NULL);
	CHECK_EQ(sleeps() - before, 1);
	before = sleeps();
	pl->wake(&__weft_vps[0]);
	int64_t t0 = test_now_ns();
	nanosleep(&nap, NULL);
	CHECK(test_now_ns() - t0 >= 50000000);
	CHECK_EQ(sleeps() - before, 2);

	size_t sz = 1 << 16;
	char *stk = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	CHECK(stk != MAP_FAILED);
	long tid = clone(foreign, stk + sz, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
				     CLONE_SYSVSEM, NULL);
	CHECK(tid > 0);
	void *n;
	CHECK_OK(pthread_join(t, &n));
	CHECK_EQ((long)n, 1);
	if (result != 0) {
		fprintf(stderr, "the foreign thread's wake %d was not seen (verdict %d)\n", result - 2, result);
		return 1;
	}
	return 0;
}
