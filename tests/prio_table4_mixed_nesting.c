/*
 * Mueller's Table 4: a PRIO_INHERIT mutex `inht` and a PRIO_PROTECT mutex
 * `ceil` nested in one UT, both ways round.  Paper priorities 0, 1, 2 are
 * here 10 (the UT's own), 11 (ceil's ceiling) and 12 (a UT contending for
 * inht).  At step 4, unlock(ceil), a ceiling stack would restore 10 while
 * the contender still waits; the priority must stay 12 until step 5.
 *
 * The UT's priority is read by probes: a probe made ready at level L runs
 * at once (and logs) if and only if L is above the priority the UT runs
 * at, so "probe L ran before the next event" means "priority < L".
 */
#include "prio_test.h"

enum { BASE = 10, CEIL = 11, HIGH = 12, DRIVER = 50 };

static pthread_mutex_t inht, ceilm;

/* Make a probe ready at `level`: it logs `name` when it runs. */
static pthread_t probe(int level, const char *name)
{
	return pt_spawn(level, pt_logs, (void *)name);
}

static void *contender(void *arg)
{
	pt_event("H:wants-inht");
	CHECK_OK(pthread_mutex_lock(&inht));
	pt_event("H:got-inht");
	CHECK_OK(pthread_mutex_unlock(&inht));
	return arg;
}

/* Inheritance outside, ceiling inside: Table 4 as printed. */
static void *inherit_then_ceiling(void *arg)
{
	pthread_t p[4], h;
	CHECK_OK(pthread_mutex_lock(&inht));            /* 1: priority 10 */
	p[0] = probe(CEIL, "probe11@1");                 /* 11 > 10: runs now */
	CHECK_OK(pthread_mutex_lock(&ceilm));            /* 2: the ceiling, 11 */
	p[1] = probe(CEIL, "probe11@2");                 /* 11 = 11: waits */
	h = pt_spawn(HIGH, contender, NULL);            /* 3: blocks on inht; we inherit 12 */
	pt_event("3");
	CHECK_OK(pthread_mutex_unlock(&ceilm));          /* 4: still 12, not 10 */
	p[2] = probe(CEIL, "probe11@4");                 /* 11 < 12: waits */
	pt_event("4");
	CHECK_OK(pthread_mutex_unlock(&inht));          /* 5: back to 10; H runs */
	pt_event("5");
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	CHECK_OK(pthread_join(h, NULL));
	return arg;
}

/* Ceiling outside, inheritance inside: unlocking inht while ceil is held
 * keeps the ceiling; the contender's 12 lasts only while it waits. */
static void *ceiling_then_inherit(void *arg)
{
	pthread_t p[3], h;
	CHECK_OK(pthread_mutex_lock(&ceilm));            /* 11 */
	CHECK_OK(pthread_mutex_lock(&inht));            /* 11 */
	h = pt_spawn(HIGH, contender, NULL);            /* blocks on inht: 12 */
	p[0] = probe(HIGH, "probe12@inherit");           /* 12 = 12: waits */
	pt_event("locked-both");
	CHECK_OK(pthread_mutex_unlock(&inht));          /* H gets it and runs; we drop to 11 */
	p[1] = probe(CEIL, "probe11@ceil");              /* 11 = 11: waits */
	pt_event("unlocked-inht");
	CHECK_OK(pthread_mutex_unlock(&ceilm));          /* 10: both probes run */
	pt_event("unlocked-ceil");
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	CHECK_OK(pthread_join(h, NULL));
	return arg;
}

static void scenario(void *(*fn)(void *))
{
	pt_reset();
	pt_mutex_init(&inht, PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_ERRORCHECK);
	pt_mutex_init(&ceilm, PTHREAD_PRIO_PROTECT, CEIL, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_OK(pthread_join(pt_spawn(BASE, fn, NULL), NULL));
	CHECK_OK(pthread_mutex_destroy(&inht));
	CHECK_OK(pthread_mutex_destroy(&ceilm));
}

int main(void)
{
	pt_set_self_fifo(DRIVER);

	scenario(inherit_then_ceiling);
	PT_EXPECT("probe11@1",               /* step 1: 10 */
		  "H:wants-inht", "3",        /* step 2: 11 held the probe back; step 3 */
		  "4",                        /* step 4: 12 holds probe11@4 back */
		  "H:got-inht",               /* step 5: the hand-off, at once */
		  "probe11@2", "probe11@4",   /* then 11s, in the order made ready */
		  "5");                       /* and we, at 10, last */

	scenario(ceiling_then_inherit);
	PT_EXPECT("H:wants-inht", "locked-both",
		  "probe12@inherit",          /* unlock(inht): we drop to 11; the 12s run, */
		  "H:got-inht",               /* H behind the probe ready before it */
		  "unlocked-inht",            /* the ceiling (11) still holds probe11 */
		  "probe11@ceil",             /* unlock(ceil): down to 10 */
		  "unlocked-ceil");
	return 0;
}
