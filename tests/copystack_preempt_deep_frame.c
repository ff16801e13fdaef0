/*
 * copystack_preempt_deep_frame — the tick preempts copy-stack UTs deep in
 * their frames (a fake call onto the run stack, then a switch through the
 * mover: runtime/copystack.c), and every register and local survives:
 * four SCHED_RR copy-stack UTs recurse 200 frames deep and then spin on
 * values held in callee-saved registers and on their stacks, with no
 * call into Weft, until each has been preempted several times.
 */
#include "check.h"

#define DEPTH 200
#define WORDS 16

#define NRUN 4
static volatile int stop;
static volatile long spins[NRUN];

static long pattern_of(long id, int depth, int i) { return id * 7777 + depth * 131 + i; }

/* Spin with live values in registers (the loop's) and on the stack. */
static __attribute__((noinline)) long spin(long id)
{
	register unsigned long a = id * 3 + 1, b = id * 5 + 2, c = id * 7 + 3, d = id * 11 + 4;
	long n = 0;
	while (!stop) {
		a = a * 6364136223846793005UL + 1442695040888963407UL;
		b ^= a >> 7;
		c += b | 1;
		d -= c >> 3;
		n++;
		spins[id] = n;
	}
	/* recompute from the start: the same sequence, so the same values */
	register unsigned long a2 = id * 3 + 1, b2 = id * 5 + 2, c2 = id * 7 + 3, d2 = id * 11 + 4;
	for (long i = 0; i < n; i++) {
		a2 = a2 * 6364136223846793005UL + 1442695040888963407UL;
		b2 ^= a2 >> 7;
		c2 += b2 | 1;
		d2 -= c2 >> 3;
	}
	return a == a2 && b == b2 && c == c2 && d == d2;
}

static long nest(long id, int depth)
{
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of(id, depth, i);
	long ok = depth ? nest(id, depth - 1) : spin(id);
	for (int i = 0; i < WORDS; i++)
		if (mine[i] != pattern_of(id, depth, i))
			ok = 0;
	return ok;
}

static void *runner(void *arg)
{
	return (void *)nest((long)arg, DEPTH);
}

int main(void)
{
	if (weft_timeslice_get() == 0)
		SKIP("time slicing is off here (libweft.a, or WEFT_TIMESLICE=0)");
	/* main outranks them: its sleeps end on time, and it stops them */
	struct sched_param mp = { .sched_priority = 20 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &mp));
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = 10 };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(weft_attr_setstackmode(&a, WEFT_STACK_COPY));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_RR));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	struct weft_stats before = test_stats();
	pthread_t t[NRUN];
	for (long i = 0; i < NRUN; i++)
		CHECK_OK(pthread_create(&t[i], &a, runner, (void *)i));
	int64_t until = test_now_ns() + 5000000000LL;
	while (test_now_ns() < until) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		struct weft_stats s = test_stats();
		if (s.preemptions - before.preemptions >= 20 &&
		    (s.vps > 1 || s.stack_saves - before.stack_saves >= 20))
			break;
	}
	stop = 1;
	for (int i = 0; i < NRUN; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK_EQ((long)r, 1);
		CHECK(spins[i] > 0);
	}
	struct weft_stats s = test_stats();
	/* with a VP for every runner (WEFT_VPS=8) nothing needs preempting */
	if (s.vps < NRUN)
		CHECK(s.preemptions - before.preemptions >= 20);
	/* one VP: every preemption moves frames (several: a VP may keep
	 * running the UTs of a run stack of its own) */
	if (s.vps == 1)
		CHECK(s.stack_saves - before.stack_saves >= 20);
	return 0;
}
