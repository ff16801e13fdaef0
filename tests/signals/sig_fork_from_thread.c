/*
 * sig_fork_from_thread — fork() from a thread that is not main, with 1,000
 * and then 10,000 other threads alive.
 *
 * Invariant: the child holds only the caller: its pthread_self() equals the
 * parent's handle of that thread and its thread-local values are intact;
 * a counting thread of the parent does not count in the child; under Weft
 * the child counts one live thread; pthread_setaffinity_np on the child's
 * pthread_self() changes the child, not the parent; the child creates and
 * joins 20 threads (their results come back) and exits 0 through exit().
 * The parent's threads are all still there afterwards: every one is woken
 * and joined.
 */
#include "sig_test.h"

#include <semaphore.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int release_all;
static int parked_count;

static void *parked(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	parked_count++;
	while (!release_all)
		CHECK_OK(pthread_cond_wait(&c, &m));
	CHECK_OK(pthread_mutex_unlock(&m));
	return arg;
}

static void *child_worker(void *arg) { return (void *)((intptr_t)arg * 3); }

static __thread long tls_mark;
static pthread_t forker_handle;
static sem_t handle_set;
static struct test_counter ctr;

static void in_child(void)
{
	if (!pthread_equal(pthread_self(), forker_handle)) {
		fprintf(stderr, "child: pthread_self() is not the forking thread's handle\n");
		_exit(10);
	}
	if (tls_mark != 12345) {
		fprintf(stderr, "child: thread-local value lost (%ld)\n", tls_mark);
		_exit(11);
	}
	unsigned long c0 = ctr.count;
	sig_sleep_ms(30);
	for (int i = 0; i < 100; i++)
		sched_yield();
	if (ctr.count != c0) {
		fprintf(stderr, "child: the parent's counting thread runs in the child\n");
		_exit(12);
	}
#ifndef SIG_NPTL
	if (test_stats().threads_live != 1) {
		fprintf(stderr, "child: %llu live threads, want 1\n",
			(unsigned long long)test_stats().threads_live);
		_exit(13);
	}
#endif
	cpu_set_t before, mine;
	if (sched_getaffinity(getppid(), sizeof before, &before) == 0 && CPU_COUNT(&before) > 1) {
		CPU_ZERO(&mine);
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &before)) {
				CPU_SET(cpu, &mine);
				break;
			}
		if (pthread_setaffinity_np(pthread_self(), sizeof mine, &mine) != 0)
			_exit(14);
		cpu_set_t parent_now, child_now;
		if (sched_getaffinity(getppid(), sizeof parent_now, &parent_now) != 0 ||
		    !CPU_EQUAL(&parent_now, &before)) {
			fprintf(stderr, "child: pthread_setaffinity_np changed the parent\n");
			_exit(15);
		}
		if (sched_getaffinity(0, sizeof child_now, &child_now) != 0 || !CPU_EQUAL(&child_now, &mine)) {
			fprintf(stderr, "child: pthread_setaffinity_np did not change the child\n");
			_exit(16);
		}
	}
	pthread_t t[20];
	for (intptr_t i = 0; i < 20; i++)
		if (pthread_create(&t[i], NULL, child_worker, (void *)i) != 0)
			_exit(17);
	for (intptr_t i = 0; i < 20; i++) {
		void *r;
		if (pthread_join(t[i], &r) != 0 || (intptr_t)r != i * 3)
			_exit(18);
	}
	exit(0);
}

static void *forker(void *arg)
{
	tls_mark = 12345;
	CHECK_OK(sem_wait(&handle_set));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		in_child();
	test_reap(pid);    /* the child says why on stderr when it fails */
	CHECK(pthread_equal(pthread_self(), forker_handle));
	CHECK_EQ(tls_mark, 12345);
	return NULL;
}

static void round_with(int n)
{
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	pthread_t *t = calloc((size_t)n, sizeof *t);
	CHECK(t);
	release_all = 0;
	parked_count = 0;
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], &a, parked, (void *)(intptr_t)i));
	for (;;) {     /* all parked */
		CHECK_OK(pthread_mutex_lock(&m));
		int k = parked_count;
		CHECK_OK(pthread_mutex_unlock(&m));
		if (k == n)
			break;
		sig_sleep_ms(1);
	}
	ctr.on = 1;
	ctr.count = 0;
	pthread_t cnt, f;
	CHECK_OK(pthread_create(&cnt, &a, test_counting, &ctr));
	CHECK_OK(pthread_create(&f, &a, forker, NULL));
	forker_handle = f;
	CHECK_OK(sem_post(&handle_set));
	CHECK_OK(pthread_join(f, NULL));
	ctr.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));
	CHECK(ctr.count > 0);
	CHECK_OK(pthread_mutex_lock(&m));
	release_all = 1;
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < n; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK_EQ((intptr_t)r, i);
	}
	free(t);
	CHECK_OK(pthread_attr_destroy(&a));
}

int main(void)
{
	CHECK_OK(sem_init(&handle_set, 0, 0));
	int64_t t0 = test_now_ns();
	round_with(1000);
	round_with(test_iters(10000));
	CHECK(test_now_ns() - t0 < 60000 * SIG_MS);
	return 0;
}
