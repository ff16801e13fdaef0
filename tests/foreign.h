/*
 * foreign.h — kernel threads Weft did not make, for the guest tests: glibc's
 * own pthread_create and pthread_join, found with dlvsym as jemalloc finds
 * them.  FOREIGN_SETUP skips a test where they cannot be had (sanitizer
 * builds, where AddressSanitizer's thread state is one per process under
 * Weft; a static program).
 */
#ifndef WEFT_TESTS_FOREIGN_H
#define WEFT_TESTS_FOREIGN_H

#include "check.h"

#include <dlfcn.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

#define FOREIGN_SETUP(create, join)                                                         \
	create_fn create = (create_fn)dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");   \
	join_fn join = (join_fn)dlvsym(RTLD_NEXT, "pthread_join", "GLIBC_2.34");           \
	if (!create || !join)                                                               \
		SKIP("no dlvsym(RTLD_NEXT) here (a static program?)")

#endif
