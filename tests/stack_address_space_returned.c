/* Address space comes back when threads end, not only memory: after
 * thousands of default-stack threads are joined the process spans about
 * what it did before (a warm pool of at most two 16 MiB slabs stays), and
 * under a 1 GiB RLIMIT_AS that creation filled up to EAGAIN, a 64 MiB mmap
 * succeeds again and as many threads can be created again.  (Before the
 * fix the slabs stayed mapped: 1 GiB spanned, the mmap failed.)
 * The RLIMIT_AS half is skipped under ASan, whose shadow memory cannot live
 * under an address-space cap. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_UTS = 20000 };
static pthread_t uts[MAX_UTS];
static volatile int release;

static void *wait_release(void *arg)
{
	while (!release)
		sched_yield();
	return arg;
}

static long vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	CHECK(f != NULL);
	long pages;
	CHECK_EQ(fscanf(f, "%ld", &pages), 1);
	fclose(f);
	return pages * sysconf(_SC_PAGESIZE);
}

/* Create up to `max` parked UTs (fewer if creation fails); join them. */
static int create_join_all(int max, int *err)
{
	int n = 0;
	release = 0;
	*err = 0;
	while (n < max && (*err = pthread_create(&uts[n], NULL, wait_release, NULL)) == 0)
		n++;
	release = 1;
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(uts[i], NULL));
	return n;
}

static void spans_what_it_did(void)
{
	int e;
	/* a first round makes what a second kernel thread costs once (M:N:
	 * the other VPs' stacks and glibc's malloc arena for them) */
	CHECK_EQ(create_join_all(64, &e), 64);
	long before = vm_bytes();
	CHECK_EQ(create_join_all(4096, &e), 4096);
	long after = vm_bytes();
	if (after - before > (64L << 20)) {
		fprintf(stderr, "4096 threads joined: the process spans %ld MiB more than before\n",
			(after - before) >> 20);
		CHECK(0);
	}
}

static int capped_child(void)
{
	struct rlimit rl = { 1ul << 30, 1ul << 30 };
	CHECK_OK(setrlimit(RLIMIT_AS, &rl));
	int e;
	int n = create_join_all(MAX_UTS, &e);
	CHECK_EQ(e, EAGAIN);
	CHECK(n > 3000);                       /* 1 GiB holds ~4000 default stacks */
	void *p = mmap(NULL, 64u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "after joining %d threads a 64 MiB mmap fails; the process spans %ld MiB\n",
			n, vm_bytes() >> 20);
		CHECK(0);
	}
	CHECK_OK(munmap(p, 64u << 20));
	int again = create_join_all(MAX_UTS, &e);
	CHECK_EQ(e, EAGAIN);
	CHECK(again >= n - 64);
	return 0;
}

int main(void)
{
	spans_what_it_did();
#ifdef WEFT_TEST_SANITIZE
	return 0;
#endif
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(capped_child());
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child status %#x\n", st);
		CHECK(0);
	}
	return 0;
}
