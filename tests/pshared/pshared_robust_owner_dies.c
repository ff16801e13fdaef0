/*
 * pshared_robust_owner_dies — a robust process-shared mutex whose owner
 * process dies, both ways round:
 *   - the NPTL peer locks it and exits holding it, while a UT here waits
 *     for it in the kernel: the UT gets EOWNERDEAD, makes it consistent,
 *     and the mutex works again; the same with nobody waiting (the next
 *     lock here gets EOWNERDEAD);
 *   - a child of this process (a Weft process) locks it and exits holding
 *     it: the kernel finds it on the child's robust list, in glibc's
 *     format, with the child's TID, and the NPTL peer gets EOWNERDEAD;
 *   - an inconsistent mutex unlocked without pthread_mutex_consistent is
 *     ENOTRECOVERABLE for everyone after, here and in the NPTL peer;
 *   - a UT of this process that exits holding it is a dead owner too.
 */
#include "pshared_test.h"

static void *lock_expect_ownerdead(void *arg)
{
	CHECK_EQ(pthread_mutex_lock(&sh->rm), EOWNERDEAD);
	CHECK_OK(pthread_mutex_consistent(&sh->rm));
	CHECK_EQ(pthread_mutex_consistent(&sh->rm), EINVAL);   /* consistent now */
	CHECK_OK(pthread_mutex_unlock(&sh->rm));
	return arg;
}

static void *lock_and_exit(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&sh->rm));
	return arg;                     /* ends holding it */
}

static void child_dies_holding(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&sh->rm));
	/* the child holds it with its own TID, on its own robust list */
	CHECK_EQ(sh->rm.__data.__lock & 0x3fffffff, getpid());
	CHECK_EQ(sh->rm.__data.__owner, getpid());
	_exit(0);
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	ps_init_all(2);

	/* 1. the NPTL owner dies while a UT here sleeps waiting for it */
	pid_t p = peer_start("hold", 100, 1, 1 | 2);
	while (!__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST))
		ps_nap(1000000);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, lock_expect_ownerdead, NULL));
	CHECK_OK(pthread_join(t, NULL));
	peer_done(p);
	CHECK_OK(pthread_mutex_lock(&sh->rm));
	CHECK_OK(pthread_mutex_unlock(&sh->rm));

	/* 2. ... and with nobody waiting */
	sh->ready = 0;
	peer_run("hold", 0, 1, 1 | 2);
	CHECK(sh->rm.__data.__lock & 0x40000000);        /* FUTEX_OWNER_DIED */
	lock_expect_ownerdead(NULL);

	/* 3. a Weft process dies holding it: the NPTL peer gets EOWNERDEAD */
	char err[512];
	int st = test_in_child(child_dies_holding, NULL, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(sh->rm.__data.__lock & 0x40000000);
	sh->counter2 = 0;
	peer_run("ownerdead", 0, 1, 0);
	CHECK_EQ(sh->counter2, 1);

	/* 4. unlocked while inconsistent: not recoverable, for everyone */
	peer_run("hold", 0, 1, 1 | 2);
	CHECK_EQ(pthread_mutex_lock(&sh->rm), EOWNERDEAD);
	CHECK_OK(pthread_mutex_unlock(&sh->rm));
	CHECK_EQ(pthread_mutex_lock(&sh->rm), ENOTRECOVERABLE);
	CHECK_EQ(pthread_mutex_trylock(&sh->rm), ENOTRECOVERABLE);
	peer_run("notrecoverable", 0, 1, 0);                     /* and there */

	/* 5. a UT of this process exits holding it */
	ps_init_all(2);
	CHECK_OK(pthread_create(&t, NULL, lock_and_exit, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sh->rm.__data.__lock & 0x40000000);
	lock_expect_ownerdead(NULL);
	/* ... and with a UT of this process waiting for it */
	CHECK_OK(pthread_mutex_lock(&sh->rm));
	CHECK_OK(pthread_create(&t, NULL, lock_and_exit, NULL));
	test_settle();
	pthread_t w;
	CHECK_OK(pthread_create(&w, NULL, lock_expect_ownerdead, NULL));
	test_settle();
	CHECK_OK(pthread_mutex_unlock(&sh->rm));      /* t takes it, exits, w gets it */
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_join(w, NULL));
	return 0;
}
