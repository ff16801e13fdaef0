/*
 * pthread_attr.c — every pthread_attr_* call, pthread_getattr_np and the
 * process-wide defaults (pthread_getattr_default_np/setattr_default_np).
 *
 * Attributes are plain data until pthread_create reads them; all checking of
 * single values happens here, in the setters, so that pthread_create only
 * has to check combinations.
 */
#include "attr.h"
#include "weft.h"

#include <stdlib.h>
#include <string.h>

static struct weft_attr default_attr = {
	.magic = ATTR_MAGIC,
	.detach = PTHREAD_CREATE_JOINABLE,
	.inherit = PTHREAD_INHERIT_SCHED,
	.policy = SCHED_OTHER,
	.scope = PTHREAD_SCOPE_SYSTEM,
};

const struct weft_attr *__weft_default_attr(void)
{
	if (!default_attr.stacksize) {
		default_attr.stacksize = __weft_stack_default_size();
		default_attr.guardsize = __weft_page_size();
	}
	return &default_attr;
}

bool __weft_prio_valid(int policy, int prio)
{
	switch (policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		return prio >= 1 && prio <= WEFT_PRIO_MAX;
	case SCHED_OTHER:
		return prio == 0;
	default:
		return false;
	}
}

#define VALID(a) ((a) && attr_cof(a)->magic == ATTR_MAGIC)
#define CHECK(a) do { if (!VALID(a)) return EINVAL; } while (0)

EXPORT int pthread_attr_init(pthread_attr_t *a)
{
	if (!a)
		return EINVAL;
	__weft_ensure();
	memset(a, 0, sizeof *a);
	struct weft_attr *w = attr_of(a);
	const struct weft_attr *d = __weft_default_attr();
	w->magic = ATTR_MAGIC;
	w->detach = PTHREAD_CREATE_JOINABLE;
	w->inherit = PTHREAD_INHERIT_SCHED;
	w->policy = SCHED_OTHER;
	w->scope = PTHREAD_SCOPE_SYSTEM;
	w->stacksize = d->stacksize;
	w->guardsize = d->guardsize;
	return 0;
}

static void ext_free(struct weft_attr *w)
{
	if (w->ext) {
		free(w->ext->cpuset);
		free(w->ext);
		w->ext = NULL;
	}
}

EXPORT int pthread_attr_destroy(pthread_attr_t *a)
{
	CHECK(a);
	struct weft_attr *w = attr_of(a);
	ext_free(w);
	w->magic = 0;
	return 0;
}

static struct attr_ext *ext_get(struct weft_attr *w)
{
	if (!w->ext)
		w->ext = calloc(1, sizeof *w->ext);
	return w->ext;
}

EXPORT int pthread_attr_setdetachstate(pthread_attr_t *a, int v)
{
	CHECK(a);
	if (v != PTHREAD_CREATE_JOINABLE && v != PTHREAD_CREATE_DETACHED)
		return EINVAL;
	attr_of(a)->detach = (uint8_t)v;
	return 0;
}

EXPORT int pthread_attr_getdetachstate(const pthread_attr_t *a, int *v)
{
	CHECK(a);
	if (!v)
		return EINVAL;
	*v = attr_cof(a)->detach;
	return 0;
}

EXPORT int pthread_attr_setinheritsched(pthread_attr_t *a, int v)
{
	CHECK(a);
	if (v != PTHREAD_INHERIT_SCHED && v != PTHREAD_EXPLICIT_SCHED)
		return EINVAL;
	attr_of(a)->inherit = (uint8_t)v;
	return 0;
}

EXPORT int pthread_attr_getinheritsched(const pthread_attr_t *a, int *v)
{
	CHECK(a);
	if (!v)
		return EINVAL;
	*v = attr_cof(a)->inherit;
	return 0;
}

EXPORT int pthread_attr_setschedpolicy(pthread_attr_t *a, int policy)
{
	CHECK(a);
	if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR)
		return EINVAL;
	attr_of(a)->policy = (uint8_t)policy;
	return 0;
}

EXPORT int pthread_attr_getschedpolicy(const pthread_attr_t *a, int *policy)
{
	CHECK(a);
	if (!policy)
		return EINVAL;
	*policy = attr_cof(a)->policy;
	return 0;
}

EXPORT int pthread_attr_setschedparam(pthread_attr_t *a, const struct sched_param *p)
{
	CHECK(a);
	if (!p || !__weft_prio_valid(attr_of(a)->policy, p->sched_priority))
		return EINVAL;
	attr_of(a)->prio = p->sched_priority;
	return 0;
}

EXPORT int pthread_attr_getschedparam(const pthread_attr_t *a, struct sched_param *p)
{
	CHECK(a);
	if (!p)
		return EINVAL;
	memset(p, 0, sizeof *p);
	p->sched_priority = attr_cof(a)->prio;
	return 0;
}

/* Weft's threads are user threads, so both scopes describe them; SYSTEM is
 * the default because that is what programs written for Linux expect. */
EXPORT int pthread_attr_setscope(pthread_attr_t *a, int scope)
{
	CHECK(a);
	if (scope != PTHREAD_SCOPE_SYSTEM && scope != PTHREAD_SCOPE_PROCESS)
		return EINVAL;
	attr_of(a)->scope = (uint8_t)scope;
	return 0;
}

EXPORT int pthread_attr_getscope(const pthread_attr_t *a, int *scope)
{
	CHECK(a);
	if (!scope)
		return EINVAL;
	*scope = attr_cof(a)->scope;
	return 0;
}

EXPORT int pthread_attr_setstacksize(pthread_attr_t *a, size_t size)
{
	CHECK(a);
	if (size < WEFT_STACK_MIN)
		return EINVAL;
	attr_of(a)->stacksize = size;
	return 0;
}

EXPORT int pthread_attr_getstacksize(const pthread_attr_t *a, size_t *size)
{
	CHECK(a);
	if (!size)
		return EINVAL;
	*size = attr_cof(a)->stacksize;
	return 0;
}

/* Any size, as glibc: pthread_create answers EINVAL if rounding it up to
 * pages overflows and EAGAIN if it cannot be mapped.  A huge guard costs
 * nothing but address space (runtime/stack.c). */
EXPORT int pthread_attr_setguardsize(pthread_attr_t *a, size_t size)
{
	CHECK(a);
	attr_of(a)->guardsize = size;
	return 0;
}

EXPORT int pthread_attr_getguardsize(const pthread_attr_t *a, size_t *size)
{
	CHECK(a);
	if (!size)
		return EINVAL;
	*size = attr_cof(a)->guardsize;
	return 0;
}

/* weft.h: separate or copy-stack (runtime/copystack.c). */
EXPORT int weft_attr_setstackmode(pthread_attr_t *a, int mode)
{
	CHECK(a);
	if (mode != CS_MODE_SEPARATE && mode != CS_MODE_COPY)
		return EINVAL;
	if (mode == CS_MODE_COPY && attr_cof(a)->stacktop)
		return EINVAL;                /* a stack of the program's cannot be shared */
	attr_of(a)->stack_mode = (uint8_t)mode;
	return 0;
}

EXPORT int weft_attr_getstackmode(const pthread_attr_t *a, int *mode)
{
	CHECK(a);
	if (!mode)
		return EINVAL;
	__weft_ensure();
	uint8_t m = attr_cof(a)->stack_mode;
	*mode = m ? m : __weft_cfg()->stack_mode;
	return 0;
}

/* Stricter than glibc, which takes a NULL or wrapping stack here and
 * crashes in pthread_create. */
EXPORT int pthread_attr_setstack(pthread_attr_t *a, void *addr, size_t size)
{
	CHECK(a);
	uintptr_t top;
	if (size < WEFT_STACK_MIN || !addr || __builtin_add_overflow((uintptr_t)addr, size, &top))
		return EINVAL;
	attr_of(a)->stacktop = (void *)top;
	attr_of(a)->stacksize = size;
	return 0;
}

/* The bottom of a caller-supplied stack, computed without pointer overflow
 * (a top below the size gives a value pthread_create refuses). */
static void *stack_bottom(const struct weft_attr *w)
{
	return w->stacktop ? (void *)((uintptr_t)w->stacktop - w->stacksize) : NULL;
}

EXPORT int pthread_attr_getstack(const pthread_attr_t *a, void **addr, size_t *size)
{
	CHECK(a);
	if (!addr || !size)
		return EINVAL;
	*addr = stack_bottom(attr_cof(a));
	*size = attr_cof(a)->stacksize;
	return 0;
}

/* The obsolete single-address forms take and give the stack's *top*, as
 * glibc's do on a downward-growing stack. */
EXPORT int pthread_attr_setstackaddr(pthread_attr_t *a, void *top)
{
	CHECK(a);
	if (!top)
		return EINVAL;
	attr_of(a)->stacktop = top;
	return 0;
}

EXPORT int pthread_attr_getstackaddr(const pthread_attr_t *a, void **top)
{
	CHECK(a);
	if (!top)
		return EINVAL;
	*top = attr_cof(a)->stacktop;
	return 0;
}

EXPORT int pthread_attr_setaffinity_np(pthread_attr_t *a, size_t setsize, const cpu_set_t *set)
{
	CHECK(a);
	struct weft_attr *w = attr_of(a);
	if (!set || setsize == 0) {
		if (w->ext) {
			free(w->ext->cpuset);
			w->ext->cpuset = NULL;
			w->ext->cpusetsize = 0;
		}
		return 0;
	}
	struct attr_ext *e = ext_get(w);
	if (!e)
		return ENOMEM;
	cpu_set_t *copy = malloc(setsize);
	if (!copy)
		return ENOMEM;
	memcpy(copy, set, setsize);
	free(e->cpuset);
	e->cpuset = copy;
	e->cpusetsize = setsize;
	return 0;
}

EXPORT int pthread_attr_getaffinity_np(const pthread_attr_t *a, size_t setsize, cpu_set_t *set)
{
	CHECK(a);
	if (!set)
		return EINVAL;
	const struct attr_ext *e = attr_cof(a)->ext;
	if (e && e->cpuset) {
		/* glibc: bits beyond the caller's set must all be clear */
		for (size_t i = setsize; i < e->cpusetsize; i++)
			if (((const char *)e->cpuset)[i])
				return EINVAL;
		size_t n = setsize < e->cpusetsize ? setsize : e->cpusetsize;
		memcpy(set, e->cpuset, n);
		memset((char *)set + n, 0, setsize - n);
	} else {
		memset(set, 0xff, setsize);   /* no affinity set: every CPU */
	}
	return 0;
}

EXPORT int pthread_attr_setsigmask_np(pthread_attr_t *a, const sigset_t *mask)
{
	CHECK(a);
	struct weft_attr *w = attr_of(a);
	if (!mask) {
		if (w->ext)
			w->ext->has_sigmask = false;
		return 0;
	}
	struct attr_ext *e = ext_get(w);
	if (!e)
		return ENOMEM;
	e->sigmask = *mask;
	e->has_sigmask = true;
	return 0;
}

EXPORT int pthread_attr_getsigmask_np(const pthread_attr_t *a, sigset_t *mask)
{
	CHECK(a);
	if (!mask)
		return EINVAL;
	const struct attr_ext *e = attr_cof(a)->ext;
	if (!e || !e->has_sigmask) {
		sigemptyset(mask);
		return PTHREAD_ATTR_NO_SIGMASK_NP;
	}
	*mask = e->sigmask;
	return 0;
}

/* Deep copy of `src` into the initialised, empty `dst`. */
static int attr_copy(struct weft_attr *dst, const struct weft_attr *src)
{
	struct attr_ext *keep = dst->ext;
	*dst = *src;
	dst->ext = keep;
	if (src->ext) {
		if (src->ext->cpuset &&
		    pthread_attr_setaffinity_np((pthread_attr_t *)(void *)dst, src->ext->cpusetsize,
						src->ext->cpuset) != 0)
			return ENOMEM;
		if (src->ext->has_sigmask &&
		    pthread_attr_setsigmask_np((pthread_attr_t *)(void *)dst, &src->ext->sigmask) != 0)
			return ENOMEM;
	}
	return 0;
}

EXPORT int pthread_getattr_default_np(pthread_attr_t *a)
{
	if (!a)
		return EINVAL;
	int e = pthread_attr_init(a);
	if (e)
		return e;
	e = attr_copy(attr_of(a), __weft_default_attr());
	if (e)
		pthread_attr_destroy(a);
	return e;
}

EXPORT int pthread_setattr_default_np(const pthread_attr_t *a)
{
	__weft_ensure();
	CHECK(a);
	const struct weft_attr *w = attr_cof(a);
	if (w->stacktop)
		return EINVAL;                 /* a default can't name one stack */
	if (w->policy != SCHED_OTHER && !__weft_prio_valid(w->policy, w->prio))
		return EINVAL;
	struct weft_attr next = *__weft_default_attr();
	struct attr_ext *ext = NULL;
	if (w->ext) {
		ext = calloc(1, sizeof *ext);
		if (!ext)
			return ENOMEM;
		if (w->ext->cpuset) {
			ext->cpuset = malloc(w->ext->cpusetsize);
			if (!ext->cpuset) {
				free(ext);
				return ENOMEM;
			}
			memcpy(ext->cpuset, w->ext->cpuset, w->ext->cpusetsize);
			ext->cpusetsize = w->ext->cpusetsize;
		}
		ext->has_sigmask = w->ext->has_sigmask;
		ext->sigmask = w->ext->sigmask;
	}
	next.detach = w->detach;
	next.inherit = w->inherit;
	next.policy = w->policy;
	next.prio = w->prio;
	next.scope = w->scope;
	if (w->stacksize)
		next.stacksize = w->stacksize;
	next.guardsize = w->guardsize;
	if (default_attr.ext) {
		free(default_attr.ext->cpuset);
		free(default_attr.ext);
	}
	next.ext = ext;
	default_attr = next;
	__weft_stack_set_default_size(next.stacksize);
	return 0;
}

EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *a)
{
	__weft_ensure();
	if (!a)
		return EINVAL;
	struct ut *t = __weft_ut_lookup(th);
	char *birth_lo;
	size_t birth_size;
	if (!t && __weft_kt_birth_stack(th, &birth_lo, &birth_size)) {
		/* a kernel thread Weft is making asks for its own stack */
		int e = pthread_attr_init(a);
		if (!e) {
			attr_of(a)->stacktop = birth_lo + birth_size;
			attr_of(a)->stacksize = birth_size;
		}
		return e;
	}
	if (!t)
		return ESRCH;
	int e = pthread_attr_init(a);
	if (e)
		return e;
	struct weft_attr *w = attr_of(a);
	w->detach = t->detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE;
	w->inherit = t->explicit_sched ? PTHREAD_EXPLICIT_SCHED : PTHREAD_INHERIT_SCHED;
	w->policy = t->policy;
	w->prio = t->base_prio;
	cpu_set_t cpus;
	if (pthread_getaffinity_np(th, sizeof cpus, &cpus) == 0) {
		e = pthread_attr_setaffinity_np(a, sizeof cpus, &cpus);
		if (e) {
			pthread_attr_destroy(a);
			return e;
		}
	}
	if (t->stack.lo) {
		/* a copy-stack UT's stack is its run stack, where it runs */
		w->stacktop = t->stack.hi;
		w->stacksize = (size_t)(t->stack.hi - t->stack.lo);
		w->guardsize = t->stack.guard;
	}
	w->stack_mode = __weft_is_copy(t) ? CS_MODE_COPY : CS_MODE_SEPARATE;
	return 0;
}
