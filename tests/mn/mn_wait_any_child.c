/*
 * mn_wait_any_child — a wait for any child takes a child that a UT forked
 * on another kernel thread.
 *
 * Linux lists a child under the kernel thread that forked it
 * (/proc/<pid>/task/<tid>/children), while any thread of the process may
 * wait for it.  Two UTs meet while both run (with two VPs: on two kernel
 * threads at once); one forks a child that exits after 20 ms, then the other
 * calls wait(), waitpid(-1), wait3 or waitid(P_ALL).  Each round asserts the
 * call returns that child with its exit status (a wait that looked only at
 * its own kernel thread's children parked for good).  With two VPs at least
 * one round must have forked and waited on two different kernel threads.
 */
#include "mn_test.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ROUNDS = 24 };

static volatile int arrived, forked_flag;
static int vps;
static volatile pid_t child;
static volatile pid_t fork_tid, wait_tid;

/* Both UTs spin until both have arrived: with two VPs they then run at
 * once, on two kernel threads.  With one VP the spinner yields so that the
 * other can arrive; with two it does not (a yield would let both meet on one
 * VP before the second VP's kernel thread has woken, which on a loaded
 * machine happened in every round), and the spin is bounded so that a VP
 * that never comes still ends the test. */
static void meet(void)
{
	__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
	for (long i = 0; i < 2000000000L && __atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2; i++)
		if (vps < 2 ? i % 1024 == 1023 : i % (1L << 26) == (1L << 26) - 1)
			sched_yield();
}

static void *forker(void *arg)
{
	meet();
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		usleep(20000);
		_exit(40 + (int)(intptr_t)arg % 8);
	}
	fork_tid = gettid();
	child = p;
	__atomic_store_n(&forked_flag, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *waiter(void *arg)
{
	int how = (int)(intptr_t)arg % 4;
	meet();
	for (long i = 0; !__atomic_load_n(&forked_flag, __ATOMIC_ACQUIRE); i++)
		if (i % 1024 == 1023)
			sched_yield();
	wait_tid = gettid();
	int st = 0;
	pid_t r;
	if (how == 0) {
		r = wait(&st);
	} else if (how == 1) {
		r = waitpid(-1, &st, 0);
	} else if (how == 2) {
		r = wait3(&st, 0, NULL);
	} else {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		CHECK_OK(waitid(P_ALL, 0, &si, WEXITED));
		r = si.si_pid;
		st = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : -1;
	}
	CHECK_EQ(r, child);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 40 + (int)(intptr_t)arg % 8);
	return NULL;
}

int main(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	vps = (int)s.vps;
	int apart = 0;
	for (intptr_t round = 0; round < ROUNDS; round++) {
		arrived = forked_flag = 0;
		child = 0;
		pthread_t f, w;
		CHECK_OK(pthread_create(&w, NULL, waiter, (void *)round));
		CHECK_OK(pthread_create(&f, NULL, forker, (void *)round));
		CHECK_OK(pthread_join(f, NULL));
		CHECK_OK(pthread_join(w, NULL));
		if (fork_tid != wait_tid)
			apart++;
	}
	if (s.vps >= 2)
		CHECK(apart >= 1);
	return 0;
}
