/* A stack the program supplies with pthread_attr_setstack is the program's:
 * its low page may be PROT_NONE (a guard the program made itself).  Several
 * UTs on such stacks use a good part of them and switch hundreds of times;
 * nothing is reported and all of them finish.  A fault in such a guard that
 * the program does not handle kills the process with SIGSEGV, and Weft does
 * not call it an overflow of one of its stacks. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NTHREADS = 4, STACK_BYTES = 128 * 1024, SWITCHES = 300 };

static volatile unsigned long sink;

static void use_stack(size_t n)
{
	volatile char buf[2048];
	buf[0] = (char)n;
	buf[sizeof buf - 1] = (char)n;
	sink += buf[0];
	if (n > sizeof buf)
		use_stack(n - sizeof buf);
	sink += buf[sizeof buf - 1];
}

static void *worker(void *arg)
{
	for (int i = 0; i < SWITCHES; i++) {
		if (i % 100 == 0)
			use_stack(STACK_BYTES / 2);
		CHECK_OK(sched_yield());
	}
	return arg;
}

static void *touch_guard(void *guard)
{
	sched_yield();
	*(volatile char *)guard = 1;
	return NULL;
}

/* A stack of STACK_BYTES from mmap whose lowest page is PROT_NONE. */
static pthread_attr_t guarded_stack_attr(char **low_page)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_OK(mprotect(m, (size_t)ps, PROT_NONE));
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstack(&a, m, STACK_BYTES));
	if (low_page)
		*low_page = m;
	return a;
}

/* In the child: a UT on a user stack writes below its low page. */
static void touch_guard_child(void *unused)
{
	(void)unused;
	char *guard;
	pthread_attr_t g = guarded_stack_attr(&guard);
	pthread_t v;
	CHECK_OK(pthread_create(&v, &g, touch_guard, guard));
	pthread_join(v, NULL);
}

int main(void)
{
	pthread_t t[NTHREADS];
	pthread_attr_t a[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = guarded_stack_attr(NULL);
		CHECK_OK(pthread_create(&t[i], &a[i], worker, (void *)(intptr_t)i));
	}
	for (int i = 0; i < NTHREADS; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK(r == (void *)(intptr_t)i);
		CHECK_OK(pthread_attr_destroy(&a[i]));
	}

	static char err[8192];
	int st = test_in_child(touch_guard_child, NULL, err, sizeof err);
	CHECK(strstr(err, "weft:") == NULL);
#ifndef WEFT_TEST_SANITIZE
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
#else
	CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 0);
#endif
	return 0;
}
