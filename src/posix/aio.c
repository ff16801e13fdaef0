/*
 * aio.c — aio_suspend as a cancellation point.
 *
 * Owns nothing but the entry point.  glibc's aio_suspend waits on a futex
 * inside libc (its helper threads wake it), which no wrapper reaches: the
 * VP blocked until the monitor took it over, and pthread_cancel waited for
 * an operation to complete.  Weft's:
 *   - acts on a pending request first, and returns at once when an
 *     operation in the list is already done (aio_error reads the control
 *     block; no lock, no system call);
 *   - else makes glibc's call, in slices of at most SLICE_NS each, as a
 *     call out of Weft (in_weft clear): the monitor may take the VP while
 *     a slice waits, as for any unknown blocking call, so only the caller
 *     waits;
 *   - names its kernel thread in ut->csys_tid for each slice, so that
 *     pthread_cancel's kick (runtime/handoff.c) reaches the wait: a timed
 *     futex wait ends with EINTR on a signal, and glibc's aio_suspend then
 *     returns EINTR, having taken itself off the operations' wait lists;
 *   - after each slice, back in Weft (and on the VP: an entry sends a
 *     kernel thread that was taken away home first), acts on a request
 *     due, goes on after an EINTR of Weft's kick or a slice's end, and
 *     returns what glibc returned otherwise.
 * A kick that comes just before a slice's wait is lost to that slice; the
 * slice's end bounds the delay (SLICE_NS).  The caller's timeout is kept:
 * each slice gets what is left of it, and EAGAIN comes when it is spent.
 * A program signal's EINTR is the program's, as in glibc (a signal the VP
 * takes while the carrier waits).
 */
#include "posix.h"
#include "../arch/arch.h"

#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <time.h>

#define SLICE_NS (50 * 1000000LL)

typedef int (*aio_suspend_fn)(const struct aiocb *const[], int, const struct timespec *);

static aio_suspend_fn glibc_aio_suspend(void)
{
	static aio_suspend_fn fn;
	aio_suspend_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (aio_suspend_fn)dlvsym(RTLD_NEXT, "aio_suspend", "GLIBC_2.34");
		if (!f)
			f = (aio_suspend_fn)dlsym(RTLD_NEXT, "aio_suspend");
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

static bool one_done(const struct aiocb *const list[], int n)
{
	for (int i = 0; i < n; i++)
		if (list[i] && aio_error(list[i]) != EINPROGRESS)
			return true;
	return false;
}

EXPORT int aio_suspend(const struct aiocb *const list[], int n, const struct timespec *timeout)
{
	__weft_ensure();
	WEFT_CALL();
	aio_suspend_fn real = glibc_aio_suspend();
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (WEFT_CALL_OFF_VP())
		return real(list, n, timeout);
	__weft_testcancel();
	if (n > 0 && list && one_done(list, n))
		return 0;
	int64_t deadline = INT64_MAX;
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000)
			return real(list, n, timeout);        /* glibc's EINVAL */
		if (__weft_rel_deadline(timeout, &deadline) != 0)
			deadline = INT64_MAX;
	}
	for (;;) {
		int64_t left = deadline == INT64_MAX ? SLICE_NS : deadline - __weft_now();
		if (left <= 0)
			left = 0;
		bool last = left <= SLICE_NS;
		int64_t ns = last ? left : SLICE_NS;
		struct timespec slice = { ns / 1000000000, ns % 1000000000 };
		struct vp *vp = __weft_vp();
		struct ut *self = vp->cur;
		uint64_t caught = vp->async.caught;
		__atomic_store_n(&self->csys_tid, vp->tid, __ATOMIC_SEQ_CST);
		__weft_outcall_begin(vp);
		int r = __weft_cancel_due(self) ? -1 : real(list, n, &slice);
		int e = r == 0 ? 0 : __weft_cancel_due(self) ? EINTR : errno;
		__weft_outcall_end();
		__atomic_store_n(&self->csys_tid, 0, __ATOMIC_RELAXED);
		if (r == 0)
			return 0;
		__weft_testcancel();
		if (e == EAGAIN && !(last && deadline != INT64_MAX))
			continue;                          /* a slice's end */
		if (e == EINTR && __weft_vp()->async.caught == caught)
			continue;                          /* Weft's kick or tick, no handler ran */
		errno = e;
		return -1;
	}
}

EXPORT int aio_suspend64(const struct aiocb64 *const list[], int n, const struct timespec *timeout)
	__attribute__((alias("aio_suspend")));
