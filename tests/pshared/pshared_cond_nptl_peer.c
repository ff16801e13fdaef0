/*
 * pshared_cond_nptl_peer — process-shared condition variables between this
 * Weft process and an NPTL process: a bounded queue of 4 items under a
 * process-shared mutex, producers on one side and consumers on the other,
 * two of each per side, in both directions; with signal (a condition per
 * direction, one of them on CLOCK_MONOTONIC) and with broadcast (one
 * condition for both).  Every item produced is consumed exactly once and
 * nobody is left waiting: the counts come out exact and the queue empty.
 */
#include "pshared_test.h"

static void round_trip(void)
{
	for (x = 1; x >= 0; x--) {                  /* signal, then broadcast */
		sh->produced = sh->consumed = sh->items = 0;
		ps_both("consume", 2, 2, ps_produce, NULL);     /* Weft produces */
		CHECK_EQ(sh->produced, 2 * n);
		CHECK_EQ(sh->consumed, 2 * n);
		CHECK_EQ(sh->items, 0);
		sh->produced = sh->consumed = 0;
		ps_both("produce", 2, 2, ps_consume, NULL);     /* Weft consumes */
		CHECK_EQ(sh->produced, 2 * n);
		CHECK_EQ(sh->consumed, 2 * n);
		CHECK_EQ(sh->items, 0);
		/* both sides at both ends */
		sh->produced = sh->consumed = 0;
		pid_t p = peer_start("produce", n, 1, x);
		pid_t q = peer_start("consume", n, 1, x);
		pthread_t t[2];
		CHECK_OK(pthread_create(&t[0], NULL, ps_produce, NULL));
		CHECK_OK(pthread_create(&t[1], NULL, ps_consume, NULL));
		CHECK_OK(pthread_join(t[0], NULL));
		CHECK_OK(pthread_join(t[1], NULL));
		peer_done(p);
		peer_done(q);
		CHECK_EQ(sh->produced, 2 * n);
		CHECK_EQ(sh->consumed, 2 * n);
	}
	x = 0;
	CHECK_OK(pthread_cond_destroy(&sh->c));
	CHECK_OK(pthread_cond_destroy(&sh->c2));
}

int main(int argc, char **argv)
{
	ps_setup(argc, argv);
	n = test_iters(5000);

	ps_init_all(2);
	/* glibc's __wrefs: bit 0 process-shared, bit 1 CLOCK_MONOTONIC */
	CHECK_EQ(sh->c.__data.__wrefs, 1);
	CHECK_EQ(sh->c2.__data.__wrefs, 3);
	pthread_condattr_t a;
	int v;
	clockid_t clk;
	CHECK_OK(pthread_condattr_init(&a));
	CHECK_OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
	CHECK_OK(pthread_condattr_getpshared(&a, &v));
	CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
	CHECK_OK(pthread_condattr_getclock(&a, &clk));
	CHECK_EQ(clk, CLOCK_MONOTONIC);
	round_trip();

	memset(sh, 0, sizeof *sh);
	peer_run("init", 0, 1, 2);
	round_trip();
	return 0;
}
