/*
 * c11threads.c — C11 <threads.h> on Weft's threads: thrd_*, mtx_*, cnd_*,
 * tss_*, call_once.
 *
 * Owns: C11's names, argument conventions and error codes (glibc's
 * thrd_err_map: ENOMEM thrd_nomem, ETIMEDOUT thrd_timedout, EBUSY
 * thrd_busy, anything else thrd_error).  glibc's own versions call its
 * internal pthread functions, which Weft cannot reach, so a C11 thread
 * would be a kernel thread of glibc's beside the UTs; these make it a UT.
 * Each forwards to the exported pthread call, which runs the epilogue
 * once; they add none of their own.
 *
 * The types are glibc's and share the pthread layouts (thrd_t is a
 * pthread_t, mtx_t a pthread_mutex_t, cnd_t a pthread_cond_t, tss_t a
 * pthread_key_t, once_flag a pthread_once_t), as glibc asserts.  A C11
 * thread starts with the default attributes, pthread_setattr_default_np's
 * included (its signal mask too), as glibc's do.
 */
#include "posix.h"

#include <stdint.h>
#include <threads.h>
#include <time.h>

_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t");
_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t");
_Static_assert(sizeof(tss_t) == sizeof(pthread_key_t), "tss_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag");

static int err_map(int e)
{
	switch (e) {
	case 0: return thrd_success;
	case ENOMEM: return thrd_nomem;
	case ETIMEDOUT: return thrd_timedout;
	case EBUSY: return thrd_busy;
	default: return thrd_error;
	}
}

/* A C11 start routine returns int, which the join reads back as the low
 * 32 bits of the pthread result, as glibc does (it calls it through the
 * pthread type too: on x86-64 the int is in the low half of rax). */
typedef void *(*pthread_start)(void *);

EXPORT int thrd_create(thrd_t *thr, thrd_start_t func, void *arg)
{
	return err_map(pthread_create(thr, NULL, (pthread_start)(void (*)(void))func, arg));
}

EXPORT int thrd_join(thrd_t thr, int *res)
{
	void *r;
	int e = pthread_join(thr, &r);
	if (e == 0 && res)
		*res = (int)(uintptr_t)r;
	return err_map(e);
}

EXPORT int thrd_detach(thrd_t thr) { return err_map(pthread_detach(thr)); }
EXPORT thrd_t thrd_current(void) { return pthread_self(); }
EXPORT int thrd_equal(thrd_t a, thrd_t b) { return pthread_equal(a, b); }
EXPORT void thrd_yield(void) { sched_yield(); }

EXPORT _Noreturn void thrd_exit(int res)
{
	pthread_exit((void *)(uintptr_t)res);
}

/* C11: 0, -1 if a signal interrupted it, another negative value on error. */
EXPORT int thrd_sleep(const struct timespec *req, struct timespec *rem)
{
	int e = clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	return e == 0 ? 0 : e == EINTR ? -1 : -2;
}

EXPORT int mtx_init(mtx_t *m, int type)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	switch (type) {
	case mtx_plain:
	case mtx_timed:
		break;
	case mtx_plain | mtx_recursive:
	case mtx_timed | mtx_recursive:
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
		break;
	default:
		return thrd_error;
	}
	int e = pthread_mutex_init((pthread_mutex_t *)m, &a);
	pthread_mutexattr_destroy(&a);
	return err_map(e);
}

EXPORT int mtx_lock(mtx_t *m) { return err_map(pthread_mutex_lock((pthread_mutex_t *)m)); }
EXPORT int mtx_trylock(mtx_t *m) { return err_map(pthread_mutex_trylock((pthread_mutex_t *)m)); }
EXPORT int mtx_unlock(mtx_t *m) { return err_map(pthread_mutex_unlock((pthread_mutex_t *)m)); }
EXPORT void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict abs)
{
	return err_map(pthread_mutex_timedlock((pthread_mutex_t *)m, abs));
}

EXPORT int cnd_init(cnd_t *c) { return err_map(pthread_cond_init((pthread_cond_t *)c, NULL)); }
EXPORT int cnd_signal(cnd_t *c) { return err_map(pthread_cond_signal((pthread_cond_t *)c)); }
EXPORT int cnd_broadcast(cnd_t *c) { return err_map(pthread_cond_broadcast((pthread_cond_t *)c)); }
EXPORT void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }

EXPORT int cnd_wait(cnd_t *c, mtx_t *m)
{
	return err_map(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict abs)
{
	return err_map(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, abs));
}

EXPORT int tss_create(tss_t *key, tss_dtor_t dtor) { return err_map(pthread_key_create(key, dtor)); }
EXPORT void tss_delete(tss_t key) { pthread_key_delete(key); }
EXPORT void *tss_get(tss_t key) { return pthread_getspecific(key); }
EXPORT int tss_set(tss_t key, void *v) { return err_map(pthread_setspecific(key, v)); }

EXPORT void call_once(once_flag *flag, void (*fn)(void))
{
	pthread_once((pthread_once_t *)flag, fn);
}
