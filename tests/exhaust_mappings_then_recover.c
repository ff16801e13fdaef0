/* Thread creation until EAGAIN when the process is out of kernel mappings
 * (vm.max_map_count cannot be lowered here, so a child uses up all but a
 * few of its own with single-page mappings that cannot merge): default
 * stacks (one mapping per slab), stacks of their own size (one each) and
 * huge guards (two each) all end in EAGAIN, never a crash.  At the limit
 * every synchronisation object works; once the filler mappings are gone
 * and the threads joined, threads are created again and a large mapping
 * can be had.  (Skipped under ASan, whose allocator needs mappings of its
 * own and aborts when there are none.) */
#include "exhaust.h"
#include <sys/wait.h>

enum { MAX_UTS = 100000, SPARE = 24 };
static pthread_t uts[MAX_UTS];

static long max_map_count(void)
{
	long v = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 65530;
		fclose(f);
	}
	return v;
}

/* Use up all but `spare` mappings: one region, every other page made
 * PROT_READ so that each page is a mapping of its own. */
static char *filler;
static size_t filler_len;

static void use_up_mappings(long spare)
{
	long ps = sysconf(_SC_PAGESIZE);
	long want = max_map_count() - test_mappings() - spare;
	CHECK(want > 0);
	filler_len = (size_t)(2 * want + 2) * (size_t)ps;
	filler = mmap(NULL, filler_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(filler != MAP_FAILED);
	for (long i = 0; i < want; i++)
		if (mprotect(filler + (2 * i + 1) * ps, (size_t)ps, PROT_READ) != 0)
			break;               /* out of mappings already (malloc's own) */
}

static int fill(const pthread_attr_t *a, int from)
{
	int n = from, e;
	while (n < MAX_UTS && (e = pthread_create(&uts[n], a, exhaust_parked, (void *)(intptr_t)n)) == 0)
		n++;
	CHECK(n < MAX_UTS);
	CHECK_EQ(e, EAGAIN);
	CHECK_EQ(pthread_create(&uts[n], a, exhaust_parked, NULL), EAGAIN);
	return n;
}

static int child(void)
{
	CHECK_OK(sem_init(&exhaust_gate, 0, 0));
	exhaust_threads_work(4);
	pthread_attr_t own, guarded;
	CHECK_OK(pthread_attr_init(&own));
	CHECK_OK(pthread_attr_setstacksize(&own, 192u << 10));
	CHECK_OK(pthread_attr_init(&guarded));
	CHECK_OK(pthread_attr_setguardsize(&guarded, 4u << 20));

	use_up_mappings(SPARE);
	int n = fill(NULL, 0);
	n = fill(&own, n);
	n = fill(&guarded, n);
	CHECK(n > 0);
	exhaust_sync_works(false);

	/* mappings back: more threads fit at once, then all of them end */
	CHECK_OK(munmap(filler, filler_len));
	pthread_t t;
	CHECK_OK(pthread_create(&t, &own, exhaust_parked, (void *)(intptr_t)n));
	uts[n++] = t;
	CHECK_OK(pthread_create(&t, &guarded, exhaust_parked, (void *)(intptr_t)n));
	uts[n++] = t;
	for (int i = 0; i < n; i++)
		CHECK_OK(sem_post(&exhaust_gate));
	for (int i = 0; i < n; i++) {
		void *r;
		CHECK_OK(pthread_join(uts[i], &r));
		CHECK(r == (void *)(intptr_t)i);
	}
	exhaust_sync_works(true);
	exhaust_threads_work(300);
	exhaust_mmap_works(256u << 20);
	return 0;
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("ASan's allocator aborts when the process is out of mappings");
#endif
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child status %#x\n", st);
		CHECK(0);
	}
	return 0;
}
