/*
 * sleep.c — nanosleep, clock_nanosleep, usleep, sleep: park only the caller.
 *
 * A sleeping UT parks on no queue with a deadline; the VP runs the others
 * and sleeps in the kernel only when no UT at all can run (runtime/sched.c).
 * A sleep of zero still gives the processor away, as the kernel's does.
 * A handler run for the sleeping UT ends the sleep with EINTR (never
 * restarted, as Linux's nanosleep is not) and, for a relative sleep, the
 * time left in `rem`.  Another process in this memory (a UT's vfork
 * child) sleeps in the kernel.
 */
#include "posix.h"
#include "../arch/arch.h"

#include <sys/syscall.h>
#include <unistd.h>

/* A cancellation point: pthread_cancel ends the sleep early. */
static int sleep_until(int64_t deadline)
{
	__weft_testcancel();
	if (deadline <= __weft_now()) {
		__weft_yield();
		return 0;
	}
	struct ut *self = __weft_self();
	uint64_t parks = __weft_vp()->stat.parks;
	int r = __weft_park_cancellable(NULL, deadline, WAIT_SLEEP, NULL);
	if (r == ECANCELED)
		__weft_cancel_act();
	/* the deadline passed between the look above and the park's own (the
	 * process was off the CPU meanwhile): the sleep still gives way */
	if (r == ETIMEDOUT && self == __weft_self() && __weft_vp()->stat.parks == parks)
		__weft_yield();
	return r == EINTR ? EINTR : 0;
}

static bool sleepable_clock(clockid_t clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC || clk == CLOCK_BOOTTIME ||
	       clk == CLOCK_TAI;
}

int __weft_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	__weft_ensure();
	if (!sleepable_clock(clk)) {
		/* CPU-time clocks: the thread's can't be slept on; the process's
		 * would need the kernel to block the whole VP. */
		return clk == CLOCK_PROCESS_CPUTIME_ID ? ENOTSUP : EINVAL;
	}
	int64_t deadline;
	if (req && req->tv_sec < 0)
		return EINVAL;                  /* as the kernel's */
	int e = (flags & TIMER_ABSTIME) ? __weft_abs_deadline(clk, req, &deadline)
					: __weft_rel_deadline(req, &deadline);
	if (e)
		return e;
	e = sleep_until(deadline);
	if (e == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = __weft_time_left(deadline);
	return e;
}

/* The kernel's sleep, for another process in this memory (a UT's vfork
 * child: runtime/vfork.c), which may not park a UT: 0 or an errno. */
static int kernel_sleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	long r = __weft_raw_syscall6(SYS_clock_nanosleep, clk, flags, (long)req, (long)rem, 0, 0);
	return r < 0 ? (int)-r : 0;
}

EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	WEFT_CALL();
	if (WEFT_CALL_PLAIN())
		return kernel_sleep(clk, flags, req, rem);
	return __weft_clock_nanosleep(clk, flags, req, rem);
}

static int relative_sleep(const struct timespec *req, struct timespec *rem, bool plain)
{
	int e = plain ? kernel_sleep(CLOCK_MONOTONIC, 0, req, rem)
		      : __weft_clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	WEFT_CALL();
	return relative_sleep(req, rem, WEFT_CALL_PLAIN());
}

EXPORT int usleep(useconds_t usec)
{
	WEFT_CALL();
	struct timespec ts = { .tv_sec = usec / 1000000, .tv_nsec = (long)(usec % 1000000) * 1000 };
	return relative_sleep(&ts, NULL, WEFT_CALL_PLAIN());
}

EXPORT unsigned int sleep(unsigned int seconds)
{
	WEFT_CALL();
	struct timespec ts = { .tv_sec = seconds, .tv_nsec = 0 }, rem = { 0, 0 };
	if (relative_sleep(&ts, &rem, WEFT_CALL_PLAIN()) == 0)
		return 0;
	/* interrupted: the seconds left, rounded up as glibc's sleep does */
	return (unsigned int)rem.tv_sec + (rem.tv_nsec >= 500000000);
}
