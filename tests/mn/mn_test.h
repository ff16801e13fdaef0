/*
 * mn_test.h — what the M:N tests share beyond check.h.
 */
#ifndef WEFT_TEST_MN_H
#define WEFT_TEST_MN_H

#include "check.h"

/* Run n UTs, the i-th fn((void *)i), and join them all; each must return
 * NULL. */
static inline void mn_run_uts(int n, void *(*fn)(void *))
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	CHECK(t);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i));
	for (int i = 0; i < n; i++) {
		void *ret = &ret;
		CHECK_OK(pthread_join(t[i], &ret));
		CHECK(ret == NULL);
	}
	free(t);
}

#endif
