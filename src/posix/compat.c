/*
 * compat.c — glibc's older symbol versions whose ABI differs from today's.
 *
 * Owns: the definitions that src/weft.map exports under glibc's old
 * version names, so that a binary built against an old glibc and run with
 * Weft preloaded (or linked) gets the ABI it was built for:
 *
 *   pthread_cond_*@GLIBC_2.2.5   the LinuxThreads-era condition variable.
 *       Its object may be smaller than today's pthread_cond_t, so, as in
 *       glibc, only its first word is used: a pointer to a real condition
 *       variable allocated (zeroed: PTHREAD_COND_INITIALIZER) at first use.
 *   pthread_attr_[gs]etaffinity_np@GLIBC_2.3.3   no cpusetsize argument;
 *       the set is a cpu_set_t (128 bytes), as glibc's compat code assumes.
 *
 * Binaries built against glibc since 2.3.4 use the default versions
 * (pthread_cond_*@@GLIBC_2.3.2 and the rest) and never come here.  The
 * internal names below are local in the shared library (weft.map); a
 * static link ignores the versioned aliases.
 *
 * Invariant: an old condition variable's word is NULL or points to a
 * calloc'ed pthread_cond_t that only pthread_cond_destroy frees.
 */
#include "../runtime/rt.h"
#include "../arch/arch.h"

#include <sched.h>
#include <stdlib.h>

#define COMPAT(name, version) __asm__(".symver __weft_" #name "_old, " #name "@" version)

struct cond_2_0 {
	pthread_cond_t *cond;
};

int __weft_pthread_cond_init_old(struct cond_2_0 *c, const pthread_condattr_t *a);
int __weft_pthread_cond_destroy_old(struct cond_2_0 *c);
int __weft_pthread_cond_wait_old(struct cond_2_0 *c, pthread_mutex_t *m);
int __weft_pthread_cond_timedwait_old(struct cond_2_0 *c, pthread_mutex_t *m, const struct timespec *abs);
int __weft_pthread_cond_signal_old(struct cond_2_0 *c);
int __weft_pthread_cond_broadcast_old(struct cond_2_0 *c);
int __weft_pthread_attr_setaffinity_np_old(pthread_attr_t *a, const cpu_set_t *set);
int __weft_pthread_attr_getaffinity_np_old(const pthread_attr_t *a, cpu_set_t *set);

COMPAT(pthread_cond_init, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_cond_destroy, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_cond_wait, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_cond_timedwait, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_cond_signal, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_cond_broadcast, WEFT_COMPAT_COND_OLD);
COMPAT(pthread_attr_setaffinity_np, WEFT_COMPAT_AFFINITY_OLD);
COMPAT(pthread_attr_getaffinity_np, WEFT_COMPAT_AFFINITY_OLD);

/* The real condition variable behind an old one, made at first use. */
static int real_cond(struct cond_2_0 *c, pthread_cond_t **out)
{
	if (!c)
		return EINVAL;
	pthread_cond_t *cv = __atomic_load_n(&c->cond, __ATOMIC_ACQUIRE);
	if (!cv) {
		pthread_cond_t *fresh = calloc(1, sizeof *fresh);
		if (!fresh)
			return ENOMEM;
		if (__atomic_compare_exchange_n(&c->cond, &cv, fresh, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			cv = fresh;
		else
			free(fresh);
	}
	*out = cv;
	return 0;
}

/* As glibc's compat code: the attribute is ignored (LinuxThreads had no
 * condition attributes that mattered). */
EXPORT int __weft_pthread_cond_init_old(struct cond_2_0 *c, const pthread_condattr_t *a)
{
	if (!c)
		return EINVAL;
	c->cond = NULL;
	return 0;
}

EXPORT int __weft_pthread_cond_destroy_old(struct cond_2_0 *c)
{
	if (!c)
		return EINVAL;
	if (c->cond) {
		int e = pthread_cond_destroy(c->cond);
		if (e)
			return e;
		free(c->cond);
		c->cond = NULL;
	}
	return 0;
}

EXPORT int __weft_pthread_cond_wait_old(struct cond_2_0 *c, pthread_mutex_t *m)
{
	pthread_cond_t *cv;
	int e = real_cond(c, &cv);
	return e ? e : pthread_cond_wait(cv, m);
}

EXPORT int __weft_pthread_cond_timedwait_old(struct cond_2_0 *c, pthread_mutex_t *m, const struct timespec *abs)
{
	pthread_cond_t *cv;
	int e = real_cond(c, &cv);
	return e ? e : pthread_cond_timedwait(cv, m, abs);
}

/* Nobody can wait on an old condition variable that has no real one. */
EXPORT int __weft_pthread_cond_signal_old(struct cond_2_0 *c)
{
	if (!c)
		return EINVAL;
	return c->cond ? pthread_cond_signal(c->cond) : 0;
}

EXPORT int __weft_pthread_cond_broadcast_old(struct cond_2_0 *c)
{
	if (!c)
		return EINVAL;
	return c->cond ? pthread_cond_broadcast(c->cond) : 0;
}

EXPORT int __weft_pthread_attr_setaffinity_np_old(pthread_attr_t *a, const cpu_set_t *set)
{
	return pthread_attr_setaffinity_np(a, sizeof(cpu_set_t), set);
}

EXPORT int __weft_pthread_attr_getaffinity_np_old(const pthread_attr_t *a, cpu_set_t *set)
{
	return pthread_attr_getaffinity_np(a, sizeof(cpu_set_t), set);
}
