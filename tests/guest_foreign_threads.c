/*
 * guest_foreign_threads — kernel threads Weft did not make (one from
 * glibc's own pthread_create, found with dlvsym as jemalloc finds it, one
 * from a raw clone that shares its creator's thread pointer) lock and
 * unlock a Weft mutex shared with UTs, wait on a Weft condition variable
 * in turn with a UT, and call pthread_self: every count exact, each
 * foreign thread's handle stable and its own, its priority readable, the
 * clone's errno set by a failed call, and the UTs run on while the
 * foreign threads block outside Weft.  Under two VPs the clone's calls
 * must not write its VP into main's thread block (guest.c).
 */
#include "foreign.h"

#include <errno.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define LOCKS 20000
#define FOREIGN_LOCKS 2000       /* each of a foreign thread's calls costs two handoffs */
#define ROUNDS 300

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long total;
static int turn;                     /* 0: the UT's turn, 1: the foreign thread's */

static void *locker(void *arg)
{
	for (int i = 0; i < LOCKS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		total++;
		CHECK_OK(pthread_mutex_unlock(&m));
		if (i % 64 == 0)
			sched_yield();
	}
	return arg;
}

/* The UT side of the turn-taking. */
static void *ut_turns(void *arg)
{
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		while (turn != 0)
			CHECK_OK(pthread_cond_wait(&cv, &m));
		turn = 1;
		CHECK_OK(pthread_cond_broadcast(&cv));
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	return arg;
}

struct foreign_result {
	pthread_t self_first, self_last;
	int policy;
	int ok;
};

static void *glibc_thread(void *arg)
{
	struct foreign_result *r = arg;
	r->self_first = pthread_self();
	for (int i = 0; i < FOREIGN_LOCKS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		total++;
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		while (turn != 1)
			CHECK_OK(pthread_cond_wait(&cv, &m));
		turn = 0;
		CHECK_OK(pthread_cond_broadcast(&cv));
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	/* blocking outside Weft stops nobody: 50 ms asleep in the kernel */
	struct timespec ts = { 0, 50000000 };
	syscall(SYS_nanosleep, &ts, NULL);
	struct sched_param sp;
	CHECK_OK(pthread_getschedparam(pthread_self(), &r->policy, &sp));
	r->self_last = pthread_self();
	r->ok = 1;
	return NULL;
}

/* ---- a raw clone: no TLS of its own, no glibc thread ---- */

static atomic_int clone_done;

static sem_t empty;                  /* never posted */

static __attribute__((unused)) int clone_body(void *arg)
{
	(void)arg;
	for (int i = 0; i < FOREIGN_LOCKS; i++) {
		if (pthread_mutex_lock(&m) != 0)
			syscall(SYS_exit_group, 3);
		total++;
		pthread_mutex_unlock(&m);
		/* a call that fails with errno: Weft runs it on a thread
		 * block of its own (the clone shares main's), and the errno
		 * must come back to the block the clone runs on */
		if (i % 100 == 0) {
			errno = 0;
			if (sem_trywait(&empty) != -1 || errno != EAGAIN)
				syscall(SYS_exit_group, 4);
		}
	}
	atomic_store(&clone_done, 1);
	return 0;
}


int main(void)
{
	FOREIGN_SETUP(glibc_create, glibc_join);

	struct weft_stats s0 = test_stats();
	pthread_t u1, u2, u3;
	CHECK_OK(pthread_create(&u1, NULL, locker, NULL));
	CHECK_OK(pthread_create(&u2, NULL, locker, NULL));
	CHECK_OK(pthread_create(&u3, NULL, ut_turns, NULL));

	struct foreign_result r = { 0 };
	pthread_t g;
	CHECK_OK(glibc_create(&g, NULL, glibc_thread, &r));

	CHECK_OK(sem_init(&empty, 0, 0));
#ifdef WEFT_TEST_SANITIZE
	/* Printed, not hidden: the raw clone shares main's thread block, so
	 * AddressSanitizer's per-thread words in it (its fake-stack pointer)
	 * would be two threads' at once, and ASan has no record of a clone
	 * it did not see made: no thread it can run, with or without Weft. */
	fprintf(stderr, "guest_foreign_threads: the raw clone not run under AddressSanitizer\n");
	atomic_store(&clone_done, 1);
	const long clones = 0;
#else
	const long clones = 1;
	size_t stack_size = 256 << 10;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	CHECK(stack != MAP_FAILED);
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	CHECK(clone(clone_body, stack + stack_size, flags, NULL) > 0);
#endif

	/* the UTs run on meanwhile: a counter counts while the foreign thread
	 * sleeps in the kernel, and main itself waits in Weft */
	struct test_counter c = { 1, 0 };
	pthread_t cnt;
	CHECK_OK(pthread_create(&cnt, NULL, test_counting, &c));
	CHECK_OK(pthread_join(u1, NULL));
	CHECK_OK(pthread_join(u2, NULL));
	CHECK_OK(pthread_join(u3, NULL));
	CHECK_OK(glibc_join(g, NULL));
	while (!atomic_load(&clone_done))
		sched_yield();
	c.on = 0;
	CHECK_OK(pthread_join(cnt, NULL));

	CHECK_EQ(total, 2L * LOCKS + (1 + clones) * FOREIGN_LOCKS);
	CHECK(r.ok);
	CHECK(pthread_equal(r.self_first, r.self_last));
	CHECK(!pthread_equal(r.self_first, pthread_self()));
	CHECK(!pthread_equal(r.self_first, u1));
	CHECK_EQ(r.policy, SCHED_OTHER);
	CHECK(c.count > 100);
	struct weft_stats s1 = test_stats();
	CHECK(s1.threads_created >= s0.threads_created + 5);    /* four UTs and at least one guest */
#ifndef WEFT_TEST_SANITIZE
	CHECK_OK(munmap(stack, stack_size));
#endif
	return 0;
}
