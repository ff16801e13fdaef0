/*
 * PTHREAD_PRIO_PROTECT: the ceiling is taken at lock and given back at
 * unlock; a UT above the ceiling gets EINVAL from every lock call;
 * pthread_mutex_setprioceiling waits for a holder to unlock, changes the
 * ceiling, returns the old one and unlocks; the holder changes it in place
 * and runs at the new ceiling at once; the ceiling and protocol sit in
 * glibc's __kind bits; bad arguments get EINVAL.
 */
#include "prio_test.h"

#include <time.h>

enum { LOW = 10, CEIL = 20, MED = 25, DRIVER = 50 };

static pthread_mutex_t m;

/* NULL passed on purpose: hidden from the compiler (glibc's headers declare
 * nonnull) and from UBSan's nonnull check. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

/* ---- setprioceiling while another UT holds the mutex ---- */

static void *holder(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pt_event("L:locked");
	sched_yield();                /* at the ceiling (20): nothing outranks us */
	struct timespec ts = test_time_in(CLOCK_MONOTONIC, 5 * 1000 * 1000);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));   /* lets the driver ask */
	pt_event("L:unlocks");
	CHECK_OK(pthread_mutex_unlock(&m));
	pt_event("L:end");
	return arg;
}

static void set_self(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
}

static void setprioceiling_waits_for_holder(void)
{
	pt_reset();
	pt_mutex_init(&m, PTHREAD_PRIO_PROTECT, CEIL, PTHREAD_MUTEX_NORMAL);
	/* The driver (50) is above the ceiling: every lock call is EINVAL. */
	struct timespec ts = test_time_in(CLOCK_REALTIME, 1000 * 1000);
	CHECK_EQ(pthread_mutex_lock(&m), EINVAL);
	CHECK_EQ(pthread_mutex_trylock(&m), EINVAL);
	CHECK_EQ(pthread_mutex_timedlock(&m, &ts), EINVAL);
	pthread_t l = pt_spawn(LOW, holder, NULL);
	set_self(5);                      /* L runs, locks, sleeps holding it */
	set_self(DRIVER);
	pt_event("D:asks");
	/* Changing the ceiling need not follow the protocol, so the driver
	 * may; it waits for L's unlock. */
	int old = -1;
	CHECK_OK(pthread_mutex_setprioceiling(&m, 60, &old));
	pt_event("D:changed");
	CHECK_EQ(old, CEIL);
	int c = -1;
	CHECK_OK(pthread_mutex_getprioceiling(&m, &c));
	CHECK_EQ(c, 60);
	CHECK_OK(pthread_join(l, NULL));
	PT_EXPECT("L:locked", "D:asks", "L:unlocks", "D:changed", "L:end");
	/* Now the driver is below the ceiling: it may lock, and runs at 60. */
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_t p = pt_spawn(55, pt_logs, "probe55");   /* 55 < 60: waits */
	pt_event("D:locked");
	CHECK_OK(pthread_mutex_unlock(&m));            /* back to 50: the probe runs */
	pt_event("D:unlocked");
	CHECK_OK(pthread_join(p, NULL));
	PT_EXPECT("L:locked", "D:asks", "L:unlocks", "D:changed", "L:end",
		  "D:locked", "probe55", "D:unlocked");
	CHECK_OK(pthread_mutex_destroy(&m));
}

/* ---- the holder changes the ceiling: its priority follows at once ---- */

static void *holder_changes(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));              /* 20 */
	pthread_t p = pt_spawn(MED, pt_logs, "probe25");  /* waits */
	int old;
	CHECK_OK(pthread_mutex_setprioceiling(&m, 15, &old));   /* down to 15: the probe runs */
	CHECK_EQ(old, CEIL);
	pt_event("L:lowered");
	CHECK_OK(pthread_mutex_setprioceiling(&m, 30, &old));   /* up to 30 */
	CHECK_EQ(old, 15);
	pthread_t q = pt_spawn(MED, pt_logs, "probe25b");  /* waits */
	pt_event("L:raised");
	CHECK_OK(pthread_mutex_unlock(&m));
	pt_event("L:end");
	CHECK_OK(pthread_join(p, NULL));
	CHECK_OK(pthread_join(q, NULL));
	return arg;
}

static void holder_changes_ceiling(int type)
{
	pt_reset();
	pt_mutex_init(&m, PTHREAD_PRIO_PROTECT, CEIL, type);
	CHECK_OK(pthread_join(pt_spawn(LOW, holder_changes, NULL), NULL));
	PT_EXPECT("probe25", "L:lowered", "L:raised", "probe25b", "L:end");
	CHECK_OK(pthread_mutex_destroy(&m));
}

/* ---- errors and glibc's encoding ---- */

PASSES_NULL static void errors_and_layout(void)
{
	pthread_mutex_t n = PTHREAD_MUTEX_INITIALIZER;
	int c;
	CHECK_EQ(pthread_mutex_getprioceiling(&n, &c), EINVAL);          /* not PRIO_PROTECT */
	CHECK_EQ(pthread_mutex_setprioceiling(&n, 10, &c), EINVAL);

	pt_mutex_init(&m, PTHREAD_PRIO_PROTECT, 72, PTHREAD_MUTEX_RECURSIVE);
	/* glibc: PTHREAD_MUTEX_PRIO_PROTECT_NP (64) | the type, the ceiling
	 * at PTHREAD_MUTEX_PRIO_CEILING_SHIFT (19). */
	CHECK_EQ(m.__data.__kind & 0x7f, 64 | PTHREAD_MUTEX_RECURSIVE);
	CHECK_EQ((unsigned)m.__data.__kind >> 19, 72);
	CHECK_EQ(pthread_mutex_getprioceiling(&m, NUL(int *)), EINVAL);
	CHECK_EQ(pthread_mutex_setprioceiling(&m, 0, &c), EINVAL);
	CHECK_EQ(pthread_mutex_setprioceiling(&m, 100, &c), EINVAL);
	CHECK_OK(pthread_mutex_setprioceiling(&m, 73, NUL(int *)));
	CHECK_OK(pthread_mutex_getprioceiling(&m, &c));
	CHECK_EQ(c, 73);
	/* recursive: held twice, released twice, the ceiling kept meanwhile */
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_setprioceiling(&m, 74, &c));
	CHECK_EQ(c, 73);
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_EQ(pthread_mutex_unlock(&m), EPERM);
	CHECK_OK(pthread_mutex_destroy(&m));

	pt_mutex_init(&m, PTHREAD_PRIO_PROTECT, 72, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_EQ(pthread_mutex_setprioceiling(&m, 75, &c), EDEADLK);   /* as glibc */
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_destroy(&m));

	pt_mutex_init(&m, PTHREAD_PRIO_INHERIT, 0, PTHREAD_MUTEX_NORMAL);
	CHECK_EQ(m.__data.__kind, 32);        /* glibc's PTHREAD_MUTEX_PRIO_INHERIT_NP */
	CHECK_EQ(pthread_mutex_getprioceiling(&m, &c), EINVAL);
	CHECK_OK(pthread_mutex_destroy(&m));

	/* An unset attribute ceiling is SCHED_FIFO's minimum, as in glibc;
	 * robust and priority-protected at once is ENOTSUP, as in glibc. */
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT));
	CHECK_OK(pthread_mutexattr_getprioceiling(&a, &c));
	CHECK_EQ(c, sched_get_priority_min(SCHED_FIFO));
	CHECK_OK(pthread_mutex_init(&m, &a));
	CHECK_OK(pthread_mutex_getprioceiling(&m, &c));
	CHECK_EQ(c, 1);
	CHECK_OK(pthread_mutex_destroy(&m));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	CHECK_EQ(pthread_mutex_init(&m, &a), ENOTSUP);
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
	CHECK_OK(pthread_mutex_init(&m, &a));         /* robust and inheriting: fine */
	CHECK_EQ(m.__data.__kind, 32 | 16);
	CHECK_OK(pthread_mutex_destroy(&m));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

int main(void)
{
	pt_set_self_fifo(DRIVER);
	setprioceiling_waits_for_holder();
	holder_changes_ceiling(PTHREAD_MUTEX_NORMAL);
	holder_changes_ceiling(PTHREAD_MUTEX_RECURSIVE);
	errors_and_layout();
	return 0;
}
