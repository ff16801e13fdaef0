/*
 * tls_malloc_state_recycled_test — glibc's malloc keeps a per-thread cache
 * and arena in TLS and frees them only when a kernel thread exits; a UT
 * with TLS of its own must not leak them.  200,000 UTs come and go, each
 * allocating and freeing a little; resident memory must not grow with
 * their number (Weft hands each ending UT's malloc state to the next).
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

__thread volatile int own_tls;   /* gives the program TLS of its own */

static long resident_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	CHECK(f != NULL);
	long pages = 0, rss = 0;
	CHECK(fscanf(f, "%ld %ld", &pages, &rss) == 2);
	fclose(f);
	return rss * 4;
}

static void *run(void *arg)
{
	own_tls = (int)(intptr_t)arg;
	void *p[8];
	for (int i = 0; i < 8; i++) {
		p[i] = malloc(16 + 24 * (size_t)i);
		CHECK(p[i] != NULL);
		memset(p[i], i, 16);
	}
	for (int i = 0; i < 8; i++)
		free(p[i]);
	return NULL;
}

static void wave(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, run, (void *)(intptr_t)i));
		CHECK_OK(pthread_join(t, NULL));
	}
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("ASan's allocator quarantines freed memory, so resident memory does not measure leaks");
#endif
	long n = test_iters(200000);
	wave(n / 10);                           /* warm up: pools filled */
	long before = resident_kib();
	wave(n);
	long after = resident_kib();
	/* a leak of a tcache per UT would be >100 MiB here */
	if (after - before > 4096) {
		fprintf(stderr, "resident memory grew from %ld to %ld KiB over %ld threads\n", before,
			after, n);
		return 1;
	}
	return 0;
}
