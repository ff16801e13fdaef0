/* A huge guard costs address space only: a thread with a 1 TiB guard is
 * created and joined in far less than a second and adds almost nothing to
 * the page tables (installing guard markers over it would take seconds and
 * gigabytes: 128 GiB took 1.5 s and 262 MiB).  The guard still guards: a
 * touch in its middle is reported as an overflow
 * (stack_overflow_names_thread).  pthread_getattr_np reports it. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

static long vm_pte_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	CHECK(f != NULL);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmPTE: %ld kB", &kib) == 1)
			break;
	fclose(f);
	CHECK(kib >= 0);
	return kib;
}

static void *report_guard(void *arg)
{
	pthread_attr_t a;
	size_t guard;
	volatile char buf[8192];
	buf[0] = 1;                          /* the stack itself is usable */
	buf[sizeof buf - 1] = buf[0];
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getguardsize(&a, &guard));
	CHECK_OK(pthread_attr_destroy(&a));
	*(size_t *)arg = guard;
	return NULL;
}

int main(void)
{
	static const size_t guards[] = { (size_t)2 << 20, (size_t)128 << 30, (size_t)1 << 40 };
	for (unsigned i = 0; i < sizeof guards / sizeof guards[0]; i++) {
		pthread_attr_t a;
		pthread_t t;
		size_t seen = 0;
		CHECK_OK(pthread_attr_init(&a));
		CHECK_OK(pthread_attr_setguardsize(&a, guards[i]));
		long pte0 = vm_pte_kib();
		int64_t t0 = test_now_ns();
		CHECK_OK(pthread_create(&t, &a, report_guard, &seen));
		long pte1 = vm_pte_kib();
		CHECK_OK(pthread_join(t, NULL));
		int64_t dt = test_now_ns() - t0;
		CHECK_EQ(seen, guards[i]);
		if (pte1 - pte0 > 256) {
			fprintf(stderr, "guard %zu: page tables grew by %ld KiB\n", guards[i], pte1 - pte0);
			CHECK(0);
		}
		if (dt > 200 * 1000 * 1000) {
			fprintf(stderr, "guard %zu: create + join took %lld ms\n", guards[i], (long long)(dt / 1000000));
			CHECK(0);
		}
		CHECK_OK(pthread_attr_destroy(&a));
	}
	return 0;
}
