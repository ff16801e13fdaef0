/*
 * pshared_mutex_nptl_peer — process-shared mutexes between this Weft
 * process and an NPTL process, under contention: two UTs here and two
 * threads there each add 1 to a shared counter N times under the mutex;
 * the count must come out exact.  Normal, errorcheck and robust mutexes;
 * initialised here once and by the NPTL peer once, since either side may
 * make the object the other uses.
 */
#include "pshared_test.h"

static void contend(void)
{
	sh->counter = sh->counter2 = 0;
	x = 0;
	ps_both("mutex", 2, 2, ps_mutex_part, &sh->m);
	CHECK_EQ(sh->counter, 4 * n);
	sh->counter = 0;
	x = 1;
	ps_both("mutex", 2, 2, ps_mutex_part, &sh->em);
	CHECK_EQ(sh->counter, 4 * n);
	ps_both("robust", 2, 2, ps_robust_part, NULL);
	CHECK_EQ(sh->counter2, 4 * n);
	CHECK_EQ(sh->m.__data.__lock, 0);
	CHECK_EQ(sh->rm.__data.__lock, 0);
	CHECK_OK(pthread_mutex_destroy(&sh->m));
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	n = test_iters(100000);

	/* made by Weft: glibc's own bits in glibc's own place */
	ps_init_all(2);
	CHECK_EQ(sh->m.__data.__kind, 128);
	CHECK_EQ(sh->em.__data.__kind, 128 | PTHREAD_MUTEX_ERRORCHECK);
	CHECK_EQ(sh->rm.__data.__kind, 128 | 16);
	contend();

	/* made by NPTL */
	memset(sh, 0, sizeof *sh);
	peer_run("init", 0, 1, 2);
	contend();
	return 0;
}
