/*
 * mn_fifo_priorities — SCHED_FIFO priorities decide which UTs hold the
 * virtual processors: with N VPs the N highest-priority ready UTs run, and
 * a lower one never does while they are ready.
 *
 * main raises itself to SCHED_FIFO 50 (Weft needs no privilege for that,
 * docs/priority.md) and makes three CPU-bound UTs at explicit SCHED_FIFO
 * priorities 30, 20 and 10 (highest first: a VP that is idle while main
 * creates must not be handed 10 before the others exist).  Each spins on
 * its own progress counter, never calling Weft, until a stop flag; when
 * its "block" flag is set it says so and waits on a semaphore.  Then:
 *  1. main sleeps 300 ms (nanosleep parks main alone).  With 2 VPs, 30 and
 *     20 must both have advanced and 10 must still be at exactly 0; with 1
 *     VP only 30 runs: 20 and 10 stay at 0.
 *  2. main sets 30's block flag and waits (sleeping) until 30 is parked,
 *     then sleeps 300 ms more.  With 2 VPs, 20 and 10 both advance (10 runs
 *     on the VP 30 gave up); with 1 VP only 20 runs and 10 stays at 0.
 *     30 does not move.
 *  3. stop, post the semaphore, join.
 * The mode comes from weft_stats_get's `vps`, the VPs in force, not from
 * WEFT_VPS (before M:N a WEFT_VPS=2 warns and runs 1).  main's wake-ups
 * preempt a spinning UT (a higher priority made ready by a timer), which
 * needs time slicing: with libweft.a the test is skipped.
 */
#include "preempt_test.h"

#include <errno.h>
#include <semaphore.h>
#include <stdbool.h>

#define NSPIN 3
static const int prio[NSPIN] = { 30, 20, 10 };

struct spinner {
	int prio;
	volatile unsigned long progress;
	volatile int block;             /* main: go and wait on `sem` */
	volatile int parked;            /* the spinner: I am about to wait */
};

static struct spinner sp[NSPIN];
static volatile int stop;
static sem_t sem;
static int64_t t_start;

static void *spin(void *arg)
{
	struct spinner *me = arg;
	unsigned long n = 0;
	while (!stop) {
		if (me->block) {
			me->parked = 1;
			while (sem_wait(&sem) != 0)
				CHECK_EQ(errno, EINTR);
			me->block = 0;
			continue;
		}
		me->progress = me->progress + 1;
		/* a safety net so a broken scheduler ends the test, not the run */
		if ((++n & 0xfffff) == 0 && test_now_ns() - t_start > 60LL * 1000 * 1000 * 1000) {
			fprintf(stderr, "spinner %d: still spinning after 60 s\n", me->prio);
			exit(1);
		}
	}
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&d, &d) != 0)
		CHECK_EQ(errno, EINTR);
}

static void snapshot(unsigned long out[NSPIN])
{
	for (int i = 0; i < NSPIN; i++)
		out[i] = sp[i].progress;
}

static void report(const char *when, const unsigned long before[NSPIN], const unsigned long after[NSPIN])
{
	fprintf(stderr, "%s: progress of 30/20/10: %lu/%lu/%lu -> %lu/%lu/%lu\n", when,
		before[0], before[1], before[2], after[0], after[1], after[2]);
}

int main(void)
{
	preempt_test_slice(10 * 1000 * 1000);   /* the default: skip if slicing cannot run */
	t_start = test_now_ns();
	unsigned vps = (unsigned)test_stats().vps;
	CHECK(vps >= 1);
	if (vps > 2)
		SKIP("written for 1 or 2 VPs");
	CHECK_OK(sem_init(&sem, 0, 0));

	struct sched_param p50 = { .sched_priority = 50 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &p50));

	pthread_t t[NSPIN];
	for (int i = 0; i < NSPIN; i++) {
		sp[i].prio = prio[i];
		t[i] = test_spawn_sched(SCHED_FIFO, prio[i], spin, &sp[i]);
	}

	/* 1: main sleeps; the highest `vps` spinners run. */
	unsigned long c0[NSPIN], c1[NSPIN];
	snapshot(c0);
	sleep_ms(300);
	snapshot(c1);
	bool ok1 = c1[0] > c0[0] && c1[2] == 0 && (vps == 2 ? c1[1] > c0[1] : c1[1] == 0);
	if (!ok1) {
		report(vps == 2 ? "2 VPs, main asleep (want 30 and 20 moving, 10 at 0)"
				: "1 VP, main asleep (want 30 moving, 20 and 10 at 0)", c0, c1);
		CHECK(ok1);
	}

	/* 2: 30 parks; the next ones take its place. */
	sp[0].block = 1;
	for (int i = 0; !sp[0].parked; i++) {
		CHECK(i < 10000);                     /* 10 s */
		sleep_ms(1);
	}
	sleep_ms(10);                                 /* 30 is inside sem_wait */
	unsigned long c2[NSPIN], c3[NSPIN];
	snapshot(c2);
	sleep_ms(300);
	snapshot(c3);
	bool ok2 = c3[0] == c2[0] && c3[1] > c2[1] &&
		   (vps == 2 ? c3[2] > c2[2] : c3[2] == 0);
	if (!ok2) {
		report(vps == 2 ? "2 VPs, 30 blocked (want 20 and 10 moving, 30 still)"
				: "1 VP, 30 blocked (want 20 moving, 30 still, 10 at 0)", c2, c3);
		CHECK(ok2);
	}

	/* 3: end. */
	stop = 1;
	CHECK_OK(sem_post(&sem));
	for (int i = 0; i < NSPIN; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(sem_destroy(&sem));
	return 0;
}
