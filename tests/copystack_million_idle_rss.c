/*
 * copystack_million_idle_rss — 1,000,000 idle copy-stack UTs alive at once
 * (Marovich's second variant, runtime/copystack.c): each costs its
 * descriptor and the bytes its stack really holds (a few hundred, in a
 * right-sized save area), not a page: resident memory per idle UT stays
 * under 1 KiB.  Then every one wakes, finds its frames intact and ends.
 * A C program with no thread-local storage of its own.
 */
#include "check.h"

#include <fcntl.h>
#include <semaphore.h>
#include <stdatomic.h>

#define N 1000000L

static sem_t go;
/* atomic: a tick may preempt a UT between the load and the store of a
 * plain ++, and another UT's increment in between would be lost */
static atomic_long parked, done;

static void *idle_ut(void *arg)
{
	volatile long id = (long)arg;
	parked++;
	while (sem_wait(&go) != 0)
		;
	CHECK_EQ(id, (long)arg);
	done++;
	return NULL;
}

static long rss_bytes(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = 0;
	long size, resident;
	CHECK_EQ(sscanf(buf, "%ld %ld", &size, &resident), 2);
	return resident * sysconf(_SC_PAGESIZE);
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("resident memory under AddressSanitizer is its shadow's and its quarantine's");
#endif
	long n = getenv("WEFT_TEST_QUICK") ? N / 10 : N;
#ifdef WEFT_TEST_DEBUG
	n = N / 10;       /* the invariant checks walk the whole table now and then */
#endif
	CHECK_OK(sem_init(&go, 0, 0));
	/* warm the pools and tables this program needs at all */
	for (long i = 0; i < 1000; i++)
		test_spawn_copy(idle_ut, (void *)i, 1);
	while (parked < 1000)
		sched_yield();
	for (long i = 0; i < 1000; i++)
		CHECK_OK(sem_post(&go));
	while (done < 1000)
		sched_yield();
	parked = done = 0;

	long before = rss_bytes();
	for (long i = 0; i < n; i++) {
		test_spawn_copy(idle_ut, (void *)i, 1);
		if ((i & 1023) == 1023)
			sched_yield();
	}
	while (parked < n)
		sched_yield();
	long after = rss_bytes();
	long per = (after - before) / n;
	struct weft_stats s = test_stats();
	CHECK(s.threads_live >= (uint64_t)n + 1);
	if (per >= 1024) {
		fprintf(stderr, "%ld idle copy-stack UTs: %ld bytes resident each\n", n, per);
		CHECK(per < 1024);
	}
	for (long i = 0; i < n; i++)
		CHECK_OK(sem_post(&go));
	while (done < n)
		sched_yield();
	CHECK_EQ(done, n);
	return 0;
}
