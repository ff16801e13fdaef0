/* Thread creation until EAGAIN under an address-space cap (RLIMIT_AS, in a
 * child): default stacks, then large ones, then 128 MiB guards.
 * At the limit, every synchronisation object still works, including waits
 * on which all the parked threads take part; once the threads are joined,
 * as many threads can be created again, they synchronise, and a mapping
 * of most of the cap can be had: the address space is usable again.
 * (Skipped under ASan, whose shadow memory cannot live under RLIMIT_AS.) */
#include "exhaust.h"
#include <sys/resource.h>
#include <sys/wait.h>

enum { MAX_UTS = 50000 };
static pthread_t uts[MAX_UTS];

static long vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	CHECK(f != NULL);
	long pages;
	CHECK_EQ(fscanf(f, "%ld", &pages), 1);
	fclose(f);
	return pages * sysconf(_SC_PAGESIZE);
}

/* Create parked threads with attributes `a` until creation fails;
 * the failure must be EAGAIN.  Returns how many. */
static int fill(const pthread_attr_t *a, int from)
{
	int n = from, e;
	while (n < MAX_UTS && (e = pthread_create(&uts[n], a, exhaust_parked, (void *)(intptr_t)n)) == 0)
		n++;
	CHECK(n < MAX_UTS);
	CHECK_EQ(e, EAGAIN);
	for (int i = 0; i < 5; i++)            /* failing again is still EAGAIN */
		CHECK_EQ(pthread_create(&uts[n], a, exhaust_parked, NULL), EAGAIN);
	return n;
}

static void release_and_join(int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(sem_post(&exhaust_gate));
	for (int i = 0; i < n; i++) {
		void *r;
		CHECK_OK(pthread_join(uts[i], &r));
		CHECK(r == (void *)(intptr_t)i);
	}
}

static int child(void)
{
	const size_t cap_extra = 512u << 20;
	CHECK_OK(sem_init(&exhaust_gate, 0, 0));
	exhaust_threads_work(4);                 /* warm: table, heap, first slab */
	struct rlimit rl;
	CHECK_OK(getrlimit(RLIMIT_AS, &rl));
	rl.rlim_cur = (rlim_t)vm_bytes() + cap_extra;
	CHECK_OK(setrlimit(RLIMIT_AS, &rl));

	pthread_attr_t big, guarded;
	CHECK_OK(pthread_attr_init(&big));
	CHECK_OK(pthread_attr_setstacksize(&big, 4u << 20));
	CHECK_OK(pthread_attr_init(&guarded));
	CHECK_OK(pthread_attr_setguardsize(&guarded, 128u << 20));

	for (int round = 0; round < 2; round++) {
		int n = fill(NULL, 0);               /* default stacks */
		CHECK(n > 1000);
		n = fill(&big, n);                   /* what is left: none or a few */
		n = fill(&guarded, n);
		exhaust_sync_works(false);
		/* all the parked threads wake, run and end */
		release_and_join(n);
		exhaust_sync_works(true);
		exhaust_threads_work(200);
		exhaust_mmap_works(cap_extra / 2);
		/* a big stack and a huge guard fit again */
		pthread_t t;
		CHECK_OK(pthread_create(&t, &big, exhaust_parked, NULL));
		CHECK_OK(sem_post(&exhaust_gate));
		CHECK_OK(pthread_join(t, NULL));
		CHECK_OK(pthread_create(&t, &guarded, exhaust_parked, NULL));
		CHECK_OK(sem_post(&exhaust_gate));
		CHECK_OK(pthread_join(t, NULL));
	}
	return 0;
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("ASan's shadow memory cannot live under an address-space cap");
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
