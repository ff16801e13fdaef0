/*
 * check.h — the tests' shared helpers.  A test prints nothing on success and
 * exits 0; a failed check prints file:line and the values, and exits 1;
 * exit 77 means "skipped" (CTest SKIP_RETURN_CODE).
 */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#define CHECK_EQ(a, b)                                                               \
	do {                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                  \
		if (_a != _b) {                                                      \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
				__LINE__, #a, #b, _a, _b);                           \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

/* For calls returning 0 or an errno value. */
#define CHECK_OK(call) CHECK_EQ((call), 0)

#define SKIP(why)                                                                    \
	do {                                                                         \
		fprintf(stderr, "skipped: %s\n", why);                               \
		exit(77);                                                            \
	} while (0)

/* Under ASan/UBSan the tests scale their loop counts down by this factor. */
#ifdef WEFT_TEST_SANITIZE
#define TEST_SCALE 10
#else
#define TEST_SCALE 1
#endif

static inline int64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
