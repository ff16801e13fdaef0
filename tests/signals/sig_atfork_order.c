/*
 * sig_atfork_order — pthread_atfork handlers run in POSIX order.
 *
 * Invariant: with handlers registered as A, B, C, a fork from a thread other
 * than main runs the prepare handlers C, B, A before the fork, then in the
 * parent A, B, C and in the child A, B, C (the child checks its own
 * record); each handler runs on the forking thread; the same for a second
 * fork from main.
 */
#include "sig_test.h"

static char log_[64];
static int nlog;
static volatile int wrong_thread;
static pthread_t forking;

#define H(name, ch)                                                         \
	static void name(void)                                              \
	{                                                                   \
		if (!pthread_equal(pthread_self(), forking))               \
			wrong_thread = 1;                                   \
		log_[nlog++] = ch;                                          \
	}
H(prep_a, 'a') H(prep_b, 'b') H(prep_c, 'c')
H(par_a, 'A') H(par_b, 'B') H(par_c, 'C')
H(kid_a, '1') H(kid_b, '2') H(kid_c, '3')

static void *do_fork(void *arg)
{
	forking = pthread_self();
	nlog = 0;
	memset(log_, 0, sizeof log_);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* prepare ran before the fork, then the child's handlers */
		_exit(strcmp(log_, "cba123") == 0 && !wrong_thread ? 0 : 1);
	}
	test_reap(pid);
	if (strcmp(log_, "cbaABC") != 0) {
		fprintf(stderr, "parent saw \"%s\", want \"cbaABC\"\n", log_);
		exit(1);
	}
	CHECK_EQ(wrong_thread, 0);
	return NULL;
}

int main(void)
{
	CHECK_OK(pthread_atfork(prep_a, par_a, kid_a));
	CHECK_OK(pthread_atfork(prep_b, par_b, kid_b));
	CHECK_OK(pthread_atfork(prep_c, par_c, kid_c));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, do_fork, NULL));
	CHECK_OK(pthread_join(t, NULL));
	do_fork(NULL);
	return 0;
}
