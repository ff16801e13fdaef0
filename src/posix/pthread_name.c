/*
 * pthread_name.c — setname_np / getname_np.
 *
 * Names live in the UT (16 bytes, as the kernel's comm); a new UT starts
 * with its creator's name, as a kernel thread starts with its parent's comm.
 */
#include "../runtime/rt.h"

#include <string.h>

EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	__weft_ensure();
	if (!name)
		return EINVAL;
	size_t n = strlen(name);
	if (n > 15)
		return ERANGE;
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	memcpy(t->name, name, n + 1);
	return 0;
}

EXPORT int pthread_getname_np(pthread_t th, char *buf, size_t len)
{
	__weft_ensure();
	if (!buf)
		return EINVAL;
	struct ut *t = __weft_ut_lookup(th);
	if (!t)
		return ESRCH;
	size_t n = strnlen(t->name, sizeof t->name - 1);
	if (len < n + 1)
		return ERANGE;
	memcpy(buf, t->name, n);
	buf[n] = 0;
	return 0;
}
