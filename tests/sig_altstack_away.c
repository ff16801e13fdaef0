/*
 * sig_altstack_away — sigaltstack answers for the UT that asks, also while
 * that UT is away from its VP: the monitor took the VP while the UT sat in
 * a blocking call Weft does not wrap (a `syscall` instruction), and the UT
 * asks before it makes any call into Weft.  sigaltstack makes no entry
 * (the sanitizers call it at any moment: ASan's no-return hook before
 * every UT's exit), so it must find the asker by its kernel thread, not by
 * the VP, whose running UT is by then another one (here a UT with an
 * alternate stack of its own) or none (a NULL UT read there was a UBSan
 * report, whose pthread_self went home holding the runtime lock: every VP
 * waited for good, mn_sync_across_vps under ASan).
 *
 * Asserts: the takeover happened; the stack reported away is the asker's
 * own, with its size and flags; so it is after the asker's next call into
 * Weft; the other UT reports its own throughout; a stack set while away is
 * the asker's from then on.
 */
#include "check.h"
#include "weft.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ALT_SIZE (64 * 1024)

static volatile int counting = 1;
static volatile unsigned long counted;
static char *alt_blocker, *alt_blocker2, *alt_counter;

static void set_alt(char *base)
{
	stack_t ss = { .ss_sp = base, .ss_size = ALT_SIZE, .ss_flags = 0 };
	CHECK_OK(sigaltstack(&ss, NULL));
}

static void expect_alt(const char *who, const char *base)
{
	stack_t o;
	memset(&o, 0xa5, sizeof o);
	CHECK_OK(sigaltstack(NULL, &o));
	if (o.ss_sp != base || o.ss_size != ALT_SIZE || o.ss_flags != 0) {
		fprintf(stderr, "%s: sigaltstack says {%p, %zu, %d}, its own is {%p, %d, 0}\n", who, o.ss_sp,
			o.ss_size, o.ss_flags, (const void *)base, ALT_SIZE);
		CHECK(o.ss_sp == base && o.ss_size == ALT_SIZE && o.ss_flags == 0);
	}
}

static void *counter(void *arg)
{
	(void)arg;
	set_alt(alt_counter);
	while (counting) {
		counted = counted + 1;
		if ((counted & 1023) == 0)
			expect_alt("counter", alt_counter);
		sched_yield();
	}
	expect_alt("counter", alt_counter);
	return NULL;
}

struct job {
	int fd;
	long got;
	stack_t away, away_after_set;
};

static void *blocker(void *arg)
{
	struct job *j = arg;
	set_alt(alt_blocker);
	unsigned char byte = 0;
	/* blocks 300 ms where no wrapper of Weft's sees it: the monitor takes
	 * the VP; back from the kernel, the UT is away until its next entry
	 * (or the monitor's kick, a period later) */
	j->got = test_raw_read(j->fd, &byte, 1);
	CHECK_OK(sigaltstack(NULL, &j->away));
	stack_t ss = { .ss_sp = alt_blocker2, .ss_size = ALT_SIZE, .ss_flags = 0 };
	CHECK_OK(sigaltstack(&ss, NULL));
	CHECK_OK(sigaltstack(NULL, &j->away_after_set));
	sched_yield();                    /* an entry: back on a VP */
	expect_alt("blocker, back on a VP", alt_blocker2);
	return NULL;
}

int main(void)
{
	alt_blocker = malloc(ALT_SIZE);
	alt_blocker2 = malloc(ALT_SIZE);
	alt_counter = malloc(ALT_SIZE);
	CHECK(alt_blocker && alt_blocker2 && alt_counter);
	int p[2];
	CHECK_OK(pipe(p));
	struct weft_stats s0 = test_stats();
	pid_t w = fork();
	CHECK(w >= 0);
	if (w == 0) {
		struct timespec d = { 0, 300 * 1000 * 1000 };
		nanosleep(&d, NULL);
		_exit(write(p[1], "x", 1) == 1 ? 0 : 3);
	}
	struct job j = { .fd = p[0] };
	pthread_t c, b;
	CHECK_OK(pthread_create(&c, NULL, counter, NULL));
	CHECK_OK(pthread_create(&b, NULL, blocker, &j));
	CHECK_OK(pthread_join(b, NULL));
	counting = 0;
	CHECK_OK(pthread_join(c, NULL));
	test_reap(w);
	struct weft_stats s1 = test_stats();
	CHECK_EQ(j.got, 1);
	CHECK(s1.takeovers > s0.takeovers);
	if (j.away.ss_sp != alt_blocker || j.away.ss_size != ALT_SIZE || j.away.ss_flags != 0) {
		fprintf(stderr, "away: sigaltstack said {%p, %zu, %d}, the blocker's is %p (the counter's %p)\n",
			j.away.ss_sp, j.away.ss_size, j.away.ss_flags, (void *)alt_blocker, (void *)alt_counter);
		CHECK(j.away.ss_sp == alt_blocker);
	}
	CHECK(j.away_after_set.ss_sp == alt_blocker2 && j.away_after_set.ss_size == ALT_SIZE &&
	      j.away_after_set.ss_flags == 0);
	/* the counter ran while the blocker waited */
	CHECK(counted > 100);
	free(alt_blocker);
	free(alt_blocker2);
	free(alt_counter);
	return 0;
}
