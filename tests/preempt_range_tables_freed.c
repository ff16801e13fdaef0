/*
 * preempt_range_tables_freed — each module a program loads has the tick's
 * range table rebuilt (runtime/preempt.c, refresh_ranges, from Weft's
 * dlopen wrapper); the table it replaces is freed once no signal handler or
 * monitor reads it (range_readers).  Before, no table was ever freed: a
 * program that loads and unloads a plugin in a loop grew by ~5 KiB a load.
 *
 * Asserted: 2,000 loads and unloads of glibc's libBrokenLocale (a small
 * library of libc6's with no TLS, unloaded by dlclose: checked with
 * RTLD_NOLOAD) while a spinner keeps the tick and its handler reading the
 * table, grow the heap in use by less than 1 MiB (unfreed tables: ~10 MiB).
 * The heap is malloc's count (mallinfo2), or the sanitizer allocator's.
 */
#include "check.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#if defined(WEFT_TEST_SANITIZE) || defined(WEFT_TEST_TSAN)
/* the sanitizer runtimes' count of live heap bytes (gcc installs no header
 * that declares it: LLVM's sanitizer/allocator_interface.h does) */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#define LOADS 2000
#define LIB "libBrokenLocale.so.1"

static atomic_int stop;

static size_t heap_in_use(void)
{
#if defined(WEFT_TEST_SANITIZE) || defined(WEFT_TEST_TSAN)
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#endif
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
	}
	return NULL;
}

static void load_unload(void)
{
	void *h = dlopen(LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		SKIP(LIB " cannot be loaded here");
	CHECK_OK(dlclose(h));
}

int main(void)
{
	if (dlopen(LIB, RTLD_NOLOAD | RTLD_NOW))
		SKIP(LIB " is loaded already: dlclose would not unload it");
	pthread_t sp;
	CHECK_OK(pthread_create(&sp, NULL, spinner, NULL));
	sched_yield();                          /* slicing has started */
	load_unload();
	CHECK(dlopen(LIB, RTLD_NOLOAD | RTLD_NOW) == NULL);   /* unloaded: each load is a new one */
	for (int i = 0; i < 20; i++)
		load_unload();                  /* malloc's and the loader's own first growth */
	size_t before = heap_in_use();
	for (int i = 0; i < LOADS; i++)
		load_unload();
	size_t after = heap_in_use();
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(sp, NULL));
	long long grew = (long long)after - (long long)before;
	if (grew >= 1 << 20) {
		fprintf(stderr, "the heap grew by %lld bytes over %d loads (%lld a load)\n", grew, LOADS,
			grew / LOADS);
		CHECK(grew < 1 << 20);
	}
	return 0;
}
