/*
 * pshared_rwlock_barrier_nptl_peer — process-shared rwlocks and barriers
 * between this Weft process and an NPTL process, under contention.
 *   rwlock: two UTs here, two threads there, each N operations, one write
 *     in four: a writer moves two counters apart and back in step (with a
 *     yield between), a reader must always find them equal; the counters
 *     end at exactly the number of writes.  Every kind of rwlock.
 *   barrier: two UTs and two threads, N rounds of two waits: nobody leaves
 *     a round before all four arrived, and each wait has exactly one
 *     PTHREAD_BARRIER_SERIAL_THREAD among the four.
 * Made here once and by the NPTL peer once.
 */
#include "pshared_test.h"

static void rwlock_round(int kind)
{
	pthread_rwlockattr_t a;
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, kind));
	int v;
	CHECK_OK(pthread_rwlockattr_getpshared(&a, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	CHECK_OK(pthread_rwlock_init(&sh->rw, &a));
	CHECK_EQ(sh->rw.__data.__shared, 1);
	CHECK_EQ(sh->rw.__data.__flags, kind);
}

static void contend(void)
{
	sh->counter = sh->counter2 = 0;
	ps_both("rwlock", 2, 2, ps_rw_part, NULL);
	long writes = 4 * ((n + 3) / 4);
	CHECK_EQ(sh->counter, writes);
	CHECK_EQ(sh->counter2, writes);
	CHECK_EQ(sh->rw.__data.__readers & ~7u, 0);     /* nobody holds it */

	sh->counter = 0;
	sh->serial = 0;
	long rounds = n / 20 + 1;
	long saved = n;
	n = rounds;
	x = 4;
	ps_both("barrier", 2, 2, ps_barrier_part, NULL);
	n = saved;
	x = 0;
	CHECK_EQ(sh->counter, 4 * rounds);
	CHECK_EQ(sh->serial, 2 * rounds);
	CHECK_OK(pthread_barrier_destroy(&sh->b));
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	n = test_iters(40000);

	ps_init_all(4);
	pthread_barrierattr_t ba;
	int v;
	CHECK_OK(pthread_barrierattr_init(&ba));
	CHECK_OK(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_barrierattr_getpshared(&ba, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	contend();
	for (int kind = PTHREAD_RWLOCK_PREFER_WRITER_NP;
	     kind <= PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP; kind++) {
		ps_init_all(4);
		rwlock_round(kind);
		contend();
	}

	memset(sh, 0, sizeof *sh);
	peer_run("init", 0, 1, 4);
	contend();
	return 0;
}
