/*
 * guest_fork — kernel threads Weft did not make call fork (glibc's, which
 * Weft does not wrap: its atfork handlers run on the caller): one from
 * glibc's own pthread_create, one a raw clone that shares main's thread
 * block, each after it has been a guest (a mutex taken through Weft).
 *
 * Invariant:
 *  - each fork's child runs and exits with the status it chose, after a
 *    mutex lock and unlock of its own (its calls are the plain ones: its
 *    one kernel thread is not Weft's), and getpid names it; pthread_self
 *    there is what the forking thread's was before the fork, and (the
 *    glibc thread's child) pthread_getattr_np of it gives the stack the
 *    child runs on;
 *  - the parent goes on: the UTs that counted under the shared mutex
 *    meanwhile kept counting, the total is exact, and afterwards a UT
 *    still forks (its child a Weft child: pthread_create and join work
 *    there) and creates and joins threads.
 * Under ASan the child's _exit (a no-return call) needs ASan's record of
 * the child's thread, which it keeps in a per-kernel-thread key: the
 * child now takes over the forking thread's values (sync/key.c); it died
 * of SIGSEGV or an ASan CHECK on pthread_getattr_np when it could not, and
 * pthread_self there named the UT the VP ran in the parent.
 * Before the fix the forking thread's prepare handler took the VP word it
 * read for its own and loaded that VP's carrier's thread block (under two
 * VPs the child faulted in most runs, and without FSGSBASE the parent's
 * main UT could read another VP's word).
 */
#include "foreign.h"

#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 6
#define LOCKS 400

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;
static atomic_int stop;
static atomic_int bad_child;

/* The child's thread is the forking one: pthread_self names it as it did
 * in the parent, and (a thread of glibc's, whose stack glibc recorded; a
 * raw clone's is not known) pthread_getattr_np gives the stack it runs
 * on. */
static int child_self_ok(pthread_t before, bool stack_known)
{
	pthread_t me = pthread_self();
	if (!pthread_equal(me, before))
		return 0;
	if (!stack_known)
		return 1;
	pthread_attr_t a;
	if (pthread_getattr_np(me, &a) != 0)
		return 0;
	void *lo = NULL;
	size_t size = 0;
	int ok = pthread_attr_getstack(&a, &lo, &size) == 0 && TEST_HERE() > (char *)lo &&
		 TEST_HERE() < (char *)lo + size;
	pthread_attr_destroy(&a);
	return ok;
}

/* Fork once: the child locks a mutex of its own and exits 40 + i. */
static int fork_once(int i, bool glibc)
{
	pid_t parent = getpid();
	pthread_t before = pthread_self();
	pid_t p = fork();
	if (p == 0) {
		pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
		if (getpid() == parent || pthread_mutex_lock(&own) != 0 || pthread_mutex_unlock(&own) != 0)
			_exit(1);
		if (!child_self_ok(before, glibc))
			_exit(2);
		_exit(40 + i);
	}
	if (p < 0)
		return 0;
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 40 + i) {
		fprintf(stderr, "fork %d: child status %#x (exit %d, signal %d)\n", i, st,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		return 0;
	}
	return 1;
}

/* Lock through Weft (a guest for the moment), then fork between locks. */
static void foreign_work(bool glibc)
{
	for (int i = 0; i < LOCKS; i++) {
		if (pthread_mutex_lock(&m) != 0)
			atomic_store(&bad_child, 100);
		total++;
		pthread_mutex_unlock(&m);
		if (i % (LOCKS / FORKS) == 0 && i / (LOCKS / FORKS) < FORKS && !fork_once(i / (LOCKS / FORKS), glibc))
			atomic_fetch_add(&bad_child, 1);
	}
}

static void *glibc_thread(void *arg)
{
	foreign_work(true);
	return arg;
}

static atomic_int clone_done;
static volatile pid_t clone_tid;

static __attribute__((unused)) int clone_body(void *arg)
{
	(void)arg;
	foreign_work(false);
	atomic_store(&clone_done, 1);
	return 0;
}

static long counted[2];

static void *counter(void *arg)
{
	long *n = arg;
	while (!atomic_load(&stop)) {
		CHECK_OK(pthread_mutex_lock(&m));
		total++;
		(*n)++;
		CHECK_OK(pthread_mutex_unlock(&m));
		sched_yield();
	}
	return NULL;
}

static void *nothing(void *arg) { return arg; }

int main(void)
{
	FOREIGN_SETUP(glibc_create, glibc_join);

	pthread_t c[2];
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&c[i], NULL, counter, &counted[i]));

	pthread_t g;
	CHECK_OK(glibc_create(&g, NULL, glibc_thread, NULL));
#ifdef WEFT_TEST_SANITIZE
	/* as guest_foreign_threads: AddressSanitizer cannot run a raw clone
	 * that shares main's thread block */
	const long clones = 0;
	atomic_store(&clone_done, 1);
	char *stack = NULL;
	size_t stack_size = 0;
#else
	const long clones = 1;
	size_t stack_size = 256 << 10;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	CHECK(stack != MAP_FAILED);
	/* the kernel clears clone_tid when the clone has exited: then its
	 * stack may go */
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		    CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	CHECK(clone(clone_body, stack + stack_size, flags, NULL, &clone_tid, NULL, &clone_tid) > 0);
#endif
	CHECK_OK(glibc_join(g, NULL));
	while (!atomic_load(&clone_done))
		sched_yield();
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(c[i], NULL));

	CHECK_EQ(atomic_load(&bad_child), 0);
	CHECK_EQ(total, counted[0] + counted[1] + (1 + clones) * LOCKS);
	CHECK(counted[0] > 0 && counted[1] > 0);

	/* the runtime goes on: a UT's fork is a Weft child, and threads
	 * are made and joined on both sides */
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, &total) != 0)
			_exit(2);
		void *r;
		if (pthread_join(t, &r) != 0 || r != &total)
			_exit(3);
		_exit(0);
	}
	test_reap(p);
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, nothing, &total));
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == &total);
#ifndef WEFT_TEST_SANITIZE
	int64_t end = test_now_ns() + 10000000000ll;
	while (clone_tid != 0 && test_now_ns() < end)
		sched_yield();
	CHECK_EQ(clone_tid, 0);
	CHECK_OK(munmap(stack, stack_size));
#else
	(void)stack;
	(void)stack_size;
#endif
	return 0;
}
