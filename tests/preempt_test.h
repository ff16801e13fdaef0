/* Shared by the preemption tests: skip when time slicing is unavailable
 * (libweft.a links, as in the sanitizer build, cannot tell Weft's text from
 * the program's) and read the counters. */
#ifndef WEFT_TEST_PREEMPT_H
#define WEFT_TEST_PREEMPT_H
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <weft.h>

static inline void preempt_test_slice(uint64_t ns)
{
	int e = weft_timeslice_set(ns);
	if (e == ENOTSUP)
		SKIP("time slicing needs libweft.so (static link)");
	CHECK_OK(e);
}

static inline struct weft_stats preempt_test_stats(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s;
}
#endif
