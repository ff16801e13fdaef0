/*
 * pthread_create.c — pthread_create: the attributes turned into a spawn
 * request for the runtime (runtime/lifecycle.c makes the UT).
 *
 * A new UT that outranks its creator runs at once (the creator heads its
 * priority's queue); otherwise it waits at the tail of its level and the
 * creator goes on.
 */
#include "attr.h"
#include "../runtime/lifecycle.h"

#include <string.h>
#include <sys/single_threaded.h>

/* Under AddressSanitizer's fake stacks (detect_stack_use_after_return) a
 * copy-stack creator's locals live in fake frames, not on its run stack:
 * a pointer to one is refused all the same, so that a program behaves as
 * it does without them. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
static bool in_fake_frame(const void *p)
{
	void *fs = __asan_get_current_fake_stack();
	return fs && __asan_addr_is_in_fake_stack(fs, (void *)p, NULL, NULL);
}
#else
static inline bool in_fake_frame(const void *p)
{
	(void)p;
	return false;
}
#endif

WEFT_SHARED_BODY int create(pthread_t *th, const pthread_attr_t *attr,
							 void *(*start)(void *), void *arg)
{
	if (!th || !start)
		return EINVAL;
	const struct weft_attr *a = attr ? attr_cof(attr) : __weft_default_attr();
	if (a->magic != ATTR_MAGIC)
		return EINVAL;
	struct ut *self = __weft_self();
	struct ut_spawn how = { .start = start, .arg = arg };
	int e = attr_spawn(a, self->policy, self->base_prio, &how);
	if (e)
		return e;
	/* a copy-stack creator's stack holds its data only while it runs
	 * (runtime/copystack.c): the new thread could not read an argument
	 * there, so refuse it rather than hand over another thread's bytes */
	if (unlikely(__weft_is_copy(self)) && (__weft_sp_in(self, (uintptr_t)arg) || in_fake_frame(arg))) {
		__weft_cs_refuse_arg(self, arg);
		return EINVAL;
	}
	/* glibc's own pthread_create tells libc and libstdc++ that the process
	 * is threaded; libstdc++ takes shortcuts (stop_token, shared_ptr) while
	 * __libc_single_threaded is 1, which are wrong once a second UT exists. */
	if (unlikely(__libc_single_threaded))
		__libc_single_threaded = 0;
	struct ut *t;
	e = __weft_ut_spawn_inline(&how, &t);
	if (e)
		return e;
	*th = __weft_handle(t);
	return 0;
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
			  void *(*start)(void *), void *arg)
{
	/* M:1: the entry's tests once (rt.h, __weft_m1_enter) */
	WEFT_M1_FAST_RETURN(create(th, attr, start, arg));
	__weft_ensure();
	WEFT_CALL();
	return create(th, attr, start, arg);
}
