/* A program that manages the low end of its threads' stacks itself, as the
 * JVM does, is never taken for an overflow.  Threads created with
 * guardsize 0 replace the low pages of their own stack (mmap MAP_FIXED, as
 * the JVM commits its guard zones) and mprotect them PROT_NONE, then switch
 * hundreds of times and take faults in those pages with the program's own
 * SIGSEGV handler: Weft says nothing and everything runs.  Threads with a
 * default stack that protect pages inside it fare the same.  And when such
 * a fault is not handled, the process dies of the SIGSEGV with no line from
 * Weft calling it an overflow (it is the program's own guard). */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ZONE_PAGES = 3, NTHREADS = 6, SWITCHES = 200 };

static __thread sigjmp_buf *recover;  /* the faulting UT's, while it probes (per
				       * thread: on several VPs UTs probe at once) */
static volatile int faults_seen;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	if (!recover)
		_exit(3);
	__atomic_fetch_add(&faults_seen, 1, __ATOMIC_RELAXED);
	siglongjmp(*recover, 1);
}

/* The low pages of the caller's stack, made its own PROT_NONE zone. */
static char *protect_low_zone(bool replace)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	long ps = sysconf(_SC_PAGESIZE);
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_destroy(&a));
	if (replace)
		CHECK(mmap(lo, ZONE_PAGES * ps, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == lo);
	CHECK_OK(mprotect(lo, ZONE_PAGES * ps, PROT_NONE));
	return lo;
}

static void *zone_thread(void *arg)
{
	bool replace = arg != NULL;
	char *zone = protect_low_zone(replace);
	for (int i = 0; i < SWITCHES; i++) {
		CHECK_OK(sched_yield());
		if (i % 50 == 0) {
			sigjmp_buf env;
			if (sigsetjmp(env, 0) == 0) {
				recover = &env;
				*(volatile char *)(zone + i) = 1;   /* the program's guard */
				CHECK(0);
			}
			recover = NULL;
		}
	}
	/* give the zone back, as the JVM does when a thread ends; the last
	 * thread leaves it protected: its stack is unmapped all the same */
	if (replace)
		CHECK_OK(mprotect(zone, ZONE_PAGES * sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE));
	return NULL;
}

static void run_threads(size_t guard, bool default_guard, void *replace)
{
	pthread_t t[NTHREADS];
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	if (!default_guard)
		CHECK_OK(pthread_attr_setguardsize(&a, guard));
	for (int i = 0; i < NTHREADS; i++) {
		if (i == NTHREADS / 2)
			CHECK_OK(pthread_attr_setstacksize(&a, 1u << 20));
		CHECK_OK(pthread_create(&t[i], &a, zone_thread, replace));
	}
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void *unhandled(void *arg)
{
	char *zone = protect_low_zone(true);
	sched_yield();
	*(volatile char *)zone = 1;
	return NULL;
}

/* Run fn in a forked child; its wait status, its stderr in err. */
static void call_body(void *fn)
{
	((void (*)(void))fn)();
}

static int in_child(void (*fn)(void), char *err, size_t errsz)
{
	return test_in_child(call_body, (void *)fn, err, errsz);
}

static void handled_faults(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	CHECK_OK(sigaction(SIGSEGV, &sa, NULL));
	run_threads(0, false, (void *)1);      /* guardsize 0, JVM style */
	run_threads(0, false, NULL);           /* guardsize 0, mprotect only */
	run_threads(0, true, NULL);            /* Weft's guard below, the program's above */
	CHECK_EQ(faults_seen, 3 * NTHREADS * (SWITCHES / 50));
}

static void unhandled_fault(void)
{
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setguardsize(&a, 0));
	CHECK_OK(pthread_create(&t, &a, unhandled, NULL));
	pthread_join(t, NULL);
	_exit(0);                              /* survived: the parent fails */
}

int main(void)
{
	static char err[8192];
	int st = in_child(handled_faults, err, sizeof err);
	/* (ASan may warn about the siglongjmp from the handler's stack) */
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(err, "weft:")) {
		fprintf(stderr, "handled faults: child status %#x, stderr:\n%s\n", st, err);
		CHECK(0);
	}
	st = in_child(unhandled_fault, err, sizeof err);
	CHECK(strstr(err, "weft:") == NULL);
#ifndef WEFT_TEST_SANITIZE
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
		fprintf(stderr, "unhandled fault: child status %#x, stderr:\n%s\n", st, err);
		CHECK(0);
	}
#else
	CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 0);   /* ASan reports it and exits 1 */
#endif
	return 0;
}
