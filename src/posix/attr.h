/*
 * attr.h — Weft's pthread_attr_t, stored inside glibc's 56-byte object.
 *
 * Invariant: an attribute object is valid iff `magic` is ATTR_MAGIC; init
 * sets it and destroy clears it, so use after destroy or without init reads
 * as EINVAL instead of garbage.  `ext` (CPU set, signal mask) is owned by
 * the object and freed by destroy.  Sizes are kept as given: the stack
 * allocator (runtime/stack.c) is the one place that rounds and adds them,
 * and answers EINVAL when that overflows, as glibc's pthread_create does.
 */
#ifndef WEFT_POSIX_ATTR_H
#define WEFT_POSIX_ATTR_H

#include "../runtime/rt.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>

#define ATTR_MAGIC 0x57417474u  /* "WAtt" */
#define WEFT_STACK_MIN 16384u   /* glibc's PTHREAD_STACK_MIN on x86-64 */

struct attr_ext {
	cpu_set_t *cpuset;
	size_t cpusetsize;
	bool has_sigmask;
	sigset_t sigmask;
};

struct weft_attr {
	uint32_t magic;
	uint8_t detach;        /* PTHREAD_CREATE_JOINABLE / DETACHED */
	uint8_t inherit;       /* PTHREAD_INHERIT_SCHED / EXPLICIT_SCHED */
	uint8_t policy;
	uint8_t scope;
	int prio;
	uint8_t stack_mode;    /* CS_MODE_*: 0 = the process's default (WEFT_STACK_MODE) */
	uint8_t pad[3];
	/* The stack's three fields sit where glibc's struct pthread_attr has
	 * them (guardsize, stackaddr = the top, stacksize), so glibc's own
	 * pthread_attr_getstack/getstacksize/getguardsize read a Weft object
	 * right: the sanitizers' runtimes fill one with pthread_getattr_np (in
	 * the program's link, Weft's) and read it with glibc's getstack. */
	size_t guardsize;      /* glibc's offset 16 */
	void *stacktop;        /* glibc's stackaddr, offset 24: one past the top of a
				* caller-supplied stack, or NULL; its bottom is
				* stacktop - stacksize, as in glibc
				* (setstacksize after setstackaddr keeps the top) */
	size_t stacksize;      /* glibc's offset 32; 0: the default */
	struct attr_ext *ext;
};

_Static_assert(sizeof(struct weft_attr) <= sizeof(pthread_attr_t), "attr fits glibc's");
_Static_assert(offsetof(struct weft_attr, guardsize) == 16 && offsetof(struct weft_attr, stacktop) == 24 &&
	       offsetof(struct weft_attr, stacksize) == 32, "glibc's stack fields");

static inline struct weft_attr *attr_of(pthread_attr_t *a) { return (struct weft_attr *)(void *)a; }
static inline const struct weft_attr *attr_cof(const pthread_attr_t *a)
{
	return (const struct weft_attr *)(const void *)a;
}

/* The attributes pthread_create uses for a NULL attr (pthread_setattr_default_np). */
const struct weft_attr *__weft_default_attr(void) HIDDEN;
bool __weft_prio_valid(int policy, int prio) HIDDEN;

/* An affinity set in the attribute that names no CPU the process may run
 * on: glibc's pthread_create fails with EINVAL (the new thread's
 * sched_setaffinity does).  A UT has no kernel affinity of its own, so
 * only the check is made: the set against the calling kernel thread's
 * allowed CPUs, the cpuset cgroup's included.  A slow path: only an
 * attribute with a set pays its system call. */
static inline bool attr_cpuset_empty(const struct attr_ext *e)
{
	if (!e || !e->cpuset)
		return false;
	cpu_set_t allowed;
	int saved = errno;
	int r = sched_getaffinity(0, sizeof allowed, &allowed);
	errno = saved;
	if (r != 0)
		return false;                 /* unknown: let it be */
	const unsigned char *want = (const unsigned char *)e->cpuset;
	const unsigned char *ok = (const unsigned char *)&allowed;
	for (size_t i = 0; i < e->cpusetsize && i < sizeof allowed; i++)
		if (want[i] & ok[i])
			return false;
	return true;
}

/* Fill the attribute part of a spawn request from `a` (start and arg are
 * the caller's): a thread that inherits its scheduling gets `policy` and
 * `prio`, its creator's.  0, or EINVAL for a stack that ends below address
 * 0, a priority the policy does not have or an affinity set that names no
 * CPU the process may run on.  One place, so that
 * pthread_create and the threads Weft makes for the program (SIGEV_THREAD
 * timers, posix/timer_thread.c) read attributes alike; inline, since
 * pthread_create is hot. */
static inline int attr_spawn(const struct weft_attr *a, int policy, int prio, struct ut_spawn *how)
{
	if (unlikely(a->ext != NULL) && attr_cpuset_empty(a->ext))
		return EINVAL;
	how->policy = policy;
	how->prio = prio;
	how->detached = a->detach == PTHREAD_CREATE_DETACHED;
	how->explicit_sched = a->inherit == PTHREAD_EXPLICIT_SCHED;
	how->stackaddr = NULL;
	how->stacksize = a->stacksize;
	how->guardsize = a->guardsize;
	how->sigmask = a->ext && a->ext->has_sigmask ? &a->ext->sigmask : NULL;
	how->stack_mode = a->stack_mode ? a->stack_mode : __weft_cfg()->stack_mode;
	if (a->stacktop) {
		/* a stack of the program's own cannot be shared: asked for
		 * copy-stack by this attribute, that is an error; by the
		 * process's default, the program's stack wins */
		if (a->stack_mode == CS_MODE_COPY)
			return EINVAL;
		how->stack_mode = CS_MODE_SEPARATE;
		/* a stack of the program's own, known by its top as glibc keeps it */
		if ((uintptr_t)a->stacktop < a->stacksize)
			return EINVAL;
		how->stackaddr = (char *)a->stacktop - a->stacksize;
	}
	if (how->explicit_sched) {
		how->policy = a->policy;
		how->prio = a->prio;
		if (!__weft_prio_valid(how->policy, how->prio))
			return EINVAL;
	}
	return 0;
}

#endif
