/*
 * dlopen.c — dlopen and dlmopen, so the runtime learns of modules loaded
 * while the program runs.
 *
 * Owns nothing but the call-through: glibc loads the module; afterwards the
 * runtime looks again at the modules with thread-local storage (a module
 * with TLS turns per-UT TLS on, and one with static TLS may need more room
 * below each new UT's thread pointer: runtime/tls.c), and at the code the
 * tick must not preempt (runtime/preempt.c; outside every Weft lock, as
 * its lock order asks).
 */
#include "posix.h"

#include <dlfcn.h>

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);

EXPORT void *dlopen(const char *file, int mode)
{
	static dlopen_fn real;
	if (!real)
		real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	if (!real)
		return NULL;
	void *h = real(file, mode);
	if (h && __weft_started) {
		__weft_tls_modules_changed();
		__weft_preempt_modules_changed();
	}
	return h;
}

EXPORT void *dlmopen(Lmid_t ns, const char *file, int mode)
{
	static dlmopen_fn real;
	if (!real)
		real = (dlmopen_fn)dlsym(RTLD_NEXT, "dlmopen");
	if (!real)
		return NULL;
	void *h = real(ns, file, mode);
	if (h && __weft_started) {
		__weft_tls_modules_changed();
		__weft_preempt_modules_changed();
	}
	return h;
}
