/*
 * sched_process_scope — sched_setscheduler, sched_setparam, sched_getparam
 * and sched_getscheduler on the process's own pid act on Weft's scheduling
 * of the calling thread (0 or its kernel thread's tid) or of the main
 * thread (getpid()), as Linux's per-thread semantics would for NPTL, with
 * no privilege and without touching the kernel thread's own policy; the
 * same through syscall(); a protocol's boost shows in what they read back;
 * errors are POSIX's; other pids are the kernel's.
 */
#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int kernel_policy(void)
{
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"((long)SYS_sched_getscheduler), "D"(0L)
			 : "rcx", "r11", "memory");
	return (int)r;
}

static int prio_of(pid_t pid)
{
	struct sched_param sp;
	CHECK_OK(sched_getparam(pid, &sp));
	return sp.sched_priority;
}

static int base_prio(int *policy)
{
	struct sched_param sp;
	CHECK_OK(pthread_getschedparam(pthread_self(), policy, &sp));
	return sp.sched_priority;
}

static void *child(void *arg)
{
	int policy;
	/* inherited from main (PTHREAD_INHERIT_SCHED is the default) */
	CHECK_EQ(base_prio(&policy), 5);
	CHECK_EQ(policy, SCHED_FIFO);
	/* getpid() names the main thread, 0 this one */
	CHECK_EQ(prio_of(getpid()), *(int *)arg);
	struct sched_param sp = { .sched_priority = 3 };
	CHECK_OK(sched_setparam(0, &sp));
	CHECK_EQ(prio_of(0), 3);
	CHECK_EQ(base_prio(&policy), 3);
	return NULL;
}

int main(void)
{
	int policy;
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	CHECK_EQ(prio_of(0), 0);

	struct sched_param sp = { .sched_priority = 5 };
	CHECK_OK(sched_setscheduler(0, SCHED_FIFO, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_FIFO);
	CHECK_EQ(sched_getscheduler(getpid()), SCHED_FIFO);
	CHECK_EQ(base_prio(&policy), 5);
	CHECK_EQ(policy, SCHED_FIFO);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	CHECK_EQ(prio_of(tid), 5);
	CHECK_EQ(prio_of(getpid()), 5);
	CHECK_OK(syscall(SYS_sched_getparam, tid, &sp));
	CHECK_EQ(sp.sched_priority, 5);
	CHECK_EQ(syscall(SYS_sched_getscheduler, 0), SCHED_FIFO);
	/* the kernel thread under the VP keeps its own */
	CHECK_EQ(kernel_policy(), SCHED_OTHER);

	/* a ceiling's boost is what sched_getparam reads, the base what
	 * pthread_getschedparam reads (glibc's tst-tpp.h checks both) */
	pthread_mutexattr_t ma;
	pthread_mutex_t m;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT));
	CHECK_OK(pthread_mutexattr_setprioceiling(&ma, 10));
	CHECK_OK(pthread_mutex_init(&m, &ma));
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_EQ(prio_of(0), 10);
	CHECK_OK(syscall(SYS_sched_getparam, tid, &sp));
	CHECK_EQ(sp.sched_priority, 10);
	CHECK_EQ(base_prio(&policy), 5);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_EQ(prio_of(0), 5);

	/* setparam keeps the policy; through syscall() too */
	sp.sched_priority = 7;
	CHECK_OK(sched_setparam(0, &sp));
	CHECK_EQ(base_prio(&policy), 7);
	sp.sched_priority = 5;
	CHECK_OK(syscall(SYS_sched_setparam, 0, &sp));
	CHECK_EQ(base_prio(&policy), 5);

	int main_prio = 5;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, child, &main_prio));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(prio_of(0), 5);

	/* POSIX's errors */
	sp.sched_priority = 200;
	errno = 0;
	CHECK_EQ(sched_setparam(0, &sp), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(sched_setscheduler(0, SCHED_FIFO, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(sched_getparam(-1, &sp), -1);
	CHECK_EQ(errno, EINVAL);
	sp.sched_priority = 1;
	errno = 0;
	CHECK_EQ(sched_setscheduler(0, SCHED_OTHER, &sp), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(base_prio(&policy), 5);

	/* another process is the kernel's to answer: init runs SCHED_OTHER */
	CHECK_EQ(sched_getscheduler(1) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);

	/* back to SCHED_OTHER */
	sp.sched_priority = 0;
	CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	CHECK_EQ(base_prio(&policy), 0);
	CHECK_EQ(policy, SCHED_OTHER);
	return 0;
}
