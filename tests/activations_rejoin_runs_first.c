/*
 * activations_rejoin_runs_first — a SCHED_OTHER UT back from a call that
 * blocked on another kernel thread runs as soon as the carrier hears of
 * it, not after the compute-bound UTs of its level have used their slices.
 *
 * Asserts: with two UTs spinning in the program's own code under a 100 ms
 * time slice, a third UT makes 40 calls to semtimedop (a covered call: the
 * VP is handed on while it waits) that each time out after 1 ms; all 40
 * return EAGAIN, and together they take well under what a slice per call
 * would cost (40 x 100 ms = 4 s): less than 1 s (the calls alone: 40 ms).
 * The spinners kept running meanwhile (each counted).
 */
#include "check.h"

#include <errno.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>

#define CALLS 40

static volatile int spinning = 1;
static volatile unsigned long spins[2];

static void *spinner(void *arg)
{
	volatile unsigned long *c = arg;
	while (spinning)
		*c = *c + 1;
	return NULL;
}

int main(void)
{
	const char *act = getenv("WEFT_ACTIVATIONS");
	if (act && strcmp(act, "off") == 0)
		SKIP("WEFT_ACTIVATIONS=off: the VP is not handed on");
	CHECK_OK(weft_timeslice_set(100000000));
	int id = semget(IPC_PRIVATE, 1, 0600);
	if (id < 0)
		SKIP("no SysV semaphores here");
	pthread_t s[2];
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&s[i], NULL, spinner, (void *)&spins[i]));
	sched_yield();
	struct sembuf down = { 0, -1, 0 };
	struct timespec ms = { 0, 1000000 };
	int64_t t0 = test_now_ns();
	for (int i = 0; i < CALLS; i++) {
		errno = 0;
		CHECK_EQ(semtimedop(id, &down, 1, &ms), -1);
		CHECK_EQ(errno, EAGAIN);
	}
	int64_t took = test_now_ns() - t0;
	spinning = 0;
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(s[i], NULL));
	CHECK_OK(semctl(id, 0, IPC_RMID));
	CHECK(took < 1000000000);
	CHECK(spins[0] > 0 && spins[1] > 0);
	struct weft_stats st = test_stats();
	CHECK(st.handoffs >= CALLS);
	return 0;
}
