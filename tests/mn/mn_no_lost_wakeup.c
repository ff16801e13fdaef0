/*
 * mn_no_lost_wakeup — no wake-up is lost when UTs on several virtual
 * processors hand a token round a ring, under a 100 us time slice and a
 * random debug schedule (ctest sets WEFT_VPS, WEFT_TIMESLICE=100us and
 * WEFT_SCHED=random:SEED).
 *
 * A ring is the harshest shape for lost wake-ups: at any moment exactly one
 * UT may go on, and all the others are parked, so one wake-up that is lost
 * (a broadcast between a waiter's check and its park, a post that a VP
 * going idle misses) stops the whole program for good rather than slowing
 * it.  Two rings of 8 UTs, 50,000 passes each:
 *  - mutex + condition: each UT waits until token == its id, sets
 *    token = (id + 1) % 8 and broadcasts;
 *  - semaphores: one per UT; each waits on its own and posts the next one's.
 * Every pass checks that the previous one was made by the UT before it in
 * the ring, and at the end every UT made exactly 50,000 / 8 passes.  The
 * program must finish: alarm(60) is a watchdog whose handler says which
 * ring hung and how far it got, and fails the test.
 *
 * The debug schedule (docs/debugging.md) switches UTs at random returns
 * from Weft's calls; whether it is in force with several VPs or not, the
 * assertions are the same (a refused WEFT_SCHED only warns, config.c), so
 * the test is valid either way.  Registered with WEFT_VPS=2 and 1.
 */
#include "mn_test.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>

#define RING 8
#define PASSES 50000L
#define WATCHDOG_S 60

static long per_ut;                     /* passes each UT makes */

/* Where the rings stand, for the watchdog's message. */
static const char *volatile stage = "start";
static volatile long progress;

static void watchdog(int sig)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg,
			 "mn_no_lost_wakeup: hung for %d s in the %s ring after %ld passes: a lost wake-up\n",
			 WATCHDOG_S, stage, progress);
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	_exit(1);
}

/* UT `id`, holding its ring's token, makes a pass: the previous one must
 * have been made by the UT before it. */
static void take_pass(const char *ring, int id, int *last, long *by, long *passes)
{
	if (*last != (id + RING - 1) % RING) {
		fprintf(stderr, "%s ring: %d took the token after %d\n", ring, id, *last);
		CHECK_EQ(*last, (id + RING - 1) % RING);
	}
	*last = id;
	by[id]++;
	progress = ++*passes;
}

/* ---- mutex + condition ring ------------------------------------------- */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int token;
static int last = RING - 1;             /* who passed last */
static long cond_passes, cond_by[RING];

static void *cond_member(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (long i = 0; i < per_ut; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		while (token != id)
			CHECK_OK(pthread_cond_wait(&c, &m));
		take_pass("cond", id, &last, cond_by, &cond_passes);
		token = (id + 1) % RING;
		CHECK_OK(pthread_cond_broadcast(&c));
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	return NULL;
}

/* ---- semaphore ring ------------------------------------------------------ */

static sem_t s[RING];
static int sem_last = RING - 1;
static long sem_passes;
static long sem_by[RING];

static void *sem_member(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (long i = 0; i < per_ut; i++) {
		while (sem_wait(&s[id]) != 0)
			CHECK_EQ(errno, EINTR);
		/* Only the holder of the token runs here: the semaphores order
		 * these plain accesses across VPs. */
		take_pass("sem", id, &sem_last, sem_by, &sem_passes);
		CHECK_OK(sem_post(&s[(id + 1) % RING]));
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = watchdog;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	alarm(WATCHDOG_S);

	per_ut = test_iters(PASSES) / RING;
	CHECK(per_ut > 0);

	stage = "mutex+condition";
	progress = 0;
	mn_run_uts(RING, cond_member);
	CHECK_EQ(cond_passes, per_ut * RING);
	for (int i = 0; i < RING; i++)
		CHECK_EQ(cond_by[i], per_ut);
	CHECK_EQ(token, 0);
	CHECK_EQ(last, RING - 1);

	stage = "semaphore";
	progress = 0;
	CHECK_OK(sem_init(&s[0], 0, 1));
	for (int i = 1; i < RING; i++)
		CHECK_OK(sem_init(&s[i], 0, 0));
	mn_run_uts(RING, sem_member);
	CHECK_EQ(sem_passes, per_ut * RING);
	for (int i = 0; i < RING; i++)
		CHECK_EQ(sem_by[i], per_ut);
	CHECK_EQ(sem_last, RING - 1);
	for (int i = 0; i < RING; i++) {
		int v;
		CHECK_OK(sem_getvalue(&s[i], &v));
		CHECK_EQ(v, i == 0);    /* the token is back at 0 */
		CHECK_OK(sem_destroy(&s[i]));
	}

	alarm(0);
	return 0;
}
