/*
 * pshared_sem_spin_nptl_peer — process-shared semaphores (unnamed and
 * named) and spinlocks between this Weft process and an NPTL process.
 *   unnamed: two UTs post N each while two NPTL threads wait N each, then
 *     the other way round on a second semaphore: every token is taken
 *     exactly once and both values end at 0.
 *   named: sem_open in both processes (glibc's sem_open in both: Weft
 *     leaves it alone); the peer posts N, two UTs here wait N/2 each; then
 *     the UTs post and the peer waits.
 *   spinlock: two UTs and two threads add 1 under it N times each.
 */
#include "pshared_test.h"

#include <fcntl.h>

static void sems(void)
{
	int v;
	sh->counter = 0;
	x = 1;
	pid_t p = peer_start("sem", n, 2, 0);          /* the peer waits on s */
	ps_run_threads(2, ps_sem_part, NULL);          /* we post on s */
	peer_done(p);
	CHECK_EQ(sh->counter, 2 * n);
	CHECK_OK(sem_getvalue(&sh->s, &v));
	CHECK_EQ(v, 0);
	sh->counter = 0;
	x = 2;
	p = peer_start("sem", n, 2, 3);                /* the peer posts on s2 */
	ps_run_threads(2, ps_sem_part, NULL);          /* we wait on s2 */
	peer_done(p);
	CHECK_EQ(sh->counter, 2 * n);
	CHECK_OK(sem_getvalue(&sh->s2, &v));
	CHECK_EQ(v, 0);
	CHECK_OK(sem_destroy(&sh->s));
}

static void spins(void)
{
	sh->counter = 0;
	x = 0;
	ps_both("spin", 2, 2, ps_spin_part, NULL);
	CHECK_EQ(sh->counter, 4 * n);
	CHECK_EQ(sh->sp, 1);            /* glibc's x86-64 "free" */
}

static void named(void)
{
	snprintf(sh->name, sizeof sh->name, "/weft-pshared-%d", (int)getpid());
	sem_unlink(sh->name);
	sem_t *s = sem_open(sh->name, O_CREAT | O_EXCL, 0600, 0);
	CHECK(s != SEM_FAILED);
	long saved = n;
	x = 0;
	pid_t p = peer_start("named", 2 * n, 1, 0);    /* it posts 2N */
	x = 1;
	ps_run_threads(2, ps_named_part, NULL);        /* we wait N each */
	peer_done(p);
	int v;
	CHECK_OK(sem_getvalue(s, &v));
	CHECK_EQ(v, 0);
	p = peer_start("named", 2 * n, 1, 1);          /* it waits 2N */
	x = 0;
	ps_run_threads(2, ps_named_part, NULL);        /* we post N each */
	peer_done(p);
	CHECK_OK(sem_getvalue(s, &v));
	CHECK_EQ(v, 0);
	/* a timed wait on it times out, and trywait says EAGAIN */
	struct timespec ts = test_time_in(CLOCK_REALTIME, 20 * 1000000);
	CHECK_EQ(sem_timedwait(s, &ts), -1);
	CHECK_EQ(errno, ETIMEDOUT);
	CHECK_EQ(sem_trywait(s), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_OK(sem_post(s));
	CHECK_OK(sem_trywait(s));
	CHECK_OK(sem_close(s));
	CHECK_OK(sem_unlink(sh->name));
	n = saved;
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	n = test_iters(10000);

	ps_init_all(2);
	/* glibc's struct new_sem: value in the low word, `private` = 128 */
	CHECK_OK(sem_post(&sh->s));
	CHECK_EQ(*(uint64_t *)&sh->s, 1);
	CHECK_EQ(((int *)&sh->s)[2], 128);
	CHECK_OK(sem_trywait(&sh->s));
	sems();
	spins();
	named();

	memset(sh, 0, sizeof *sh);
	peer_run("init", 0, 1, 2);
	sems();
	/* a spinlock NPTL made: this process marks it shared itself */
	CHECK_OK(pthread_spin_init(&sh->sp, PTHREAD_PROCESS_SHARED));
	spins();
	return 0;
}
