/*
 * Two properties of the protocols beyond the paper's figures:
 *   - robust and inheriting at once: an owner boosted by its waiters that
 *     dies holding the mutex passes it, marked EOWNERDEAD, to the highest
 *     waiter, and the others still wait, above the medium UT;
 *   - no privilege: a process the kernel refuses SCHED_FIFO (an unprivileged
 *     user with RLIMIT_RTPRIO 0) still gives its UTs SCHED_FIFO priorities
 *     and priority inheritance, since they are Weft's, not the kernel's.
 */
#include "prio_test.h"

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m;

static void *dies_holding(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t w = pt_spawn(25, arg, "W");           /* waits: we run at 25 */
	pthread_t h = pt_spawn(30, arg, "H");           /* waits: we run at 30 */
	pthread_t md = pt_spawn(20, pt_logs, "M");         /* must wait for them all */
	CHECK_OK(pthread_detach(h));
	CHECK_OK(pthread_detach(w));
	CHECK_OK(pthread_detach(md));
	pt_event("O:exits");
	return NULL;                                    /* still holding m */
}

static void *robust_waiter(void *name)
{
	int r = pthread_mutex_lock(&m);
	if (r == EOWNERDEAD) {
		pt_event("H:ownerdead");
		CHECK_OK(pthread_mutex_consistent(&m));
	} else {
		CHECK_OK(r);
		pt_event(strcmp(name, "W") == 0 ? "W:got" : "?");
	}
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void robust_inheriting_owner_dies(void)
{
	pt_reset();
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	CHECK_OK(pthread_mutex_init(&m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
	pt_set_self_fifo(5);
	pthread_t o = pt_spawn(10, dies_holding, (void *)robust_waiter);
	CHECK_OK(pthread_join(o, NULL));
	/* H got it (EOWNERDEAD) over W; W and then M; main, at 5, last. */
	PT_EXPECT("O:exits", "H:ownerdead", "W:got", "M");
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_destroy(&m));
}

/* Figure 5(b) in brief: L holds, H waits, M must wait for both. */
static void *low(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t h = pt_spawn(30, arg, "H");
	pthread_t md = pt_spawn(20, pt_logs, "M");
	pt_event("L:unlocks");
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_join(md, NULL));
	return NULL;
}

static void *locks_and_logs(void *name)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pt_event(name);
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static int unprivileged_child(void)
{
	if (geteuid() == 0) {
		/* nobody, with no real-time allowance */
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			return 77;
	}
	struct rlimit rl = { 0, 0 };
	setrlimit(RLIMIT_RTPRIO, &rl);
	/* The kernel says no (this is the premise; skip if it does not) ... */
	struct sched_param sp = { .sched_priority = 50 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
		return 77;
	CHECK_EQ(errno, EPERM);
	/* ... Weft says yes. */
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
	int policy;
	CHECK_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	CHECK_EQ(policy, SCHED_FIFO);
	CHECK_EQ(sp.sched_priority, 50);
	pt_reset();
	pt_mutex_init(&m, PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_NORMAL);
	CHECK_OK(pthread_join(pt_spawn(10, low, (void *)locks_and_logs), NULL));
	PT_EXPECT("L:unlocks", "H", "M");
	return 0;
}

static void unprivileged_fifo_and_inheritance(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(unprivileged_child());
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		fprintf(stderr, "note: the kernel grants SCHED_FIFO here; the no-privilege case was not run\n");
	else
		CHECK_EQ(WEXITSTATUS(st), 0);
}

int main(void)
{
	robust_inheriting_owner_dies();
	unprivileged_fifo_and_inheritance();
	return 0;
}
