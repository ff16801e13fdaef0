/* Out of memory or mappings, pthread_create fails with EAGAIN -- never a
 * crash, nothing leaked -- and the runtime keeps working: the UTs already
 * created run to completion, new ones can be created again once memory is
 * back.  A forked child caps its address space with RLIMIT_AS a little
 * above what it uses, then creates parked UTs until creation fails.
 * (Skipped under ASan, whose shadow memory cannot live under RLIMIT_AS.) */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <weft.h>

enum { MAX_UTS = 100000 };

static volatile int release;
static pthread_t uts[MAX_UTS];

static void *wait_release(void *arg)
{
	while (!release)
		usleep(20000);
	return arg;
}

static long vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	CHECK(f != NULL);
	long size;
	CHECK_EQ(fscanf(f, "%ld", &size), 1);
	fclose(f);
	return size * sysconf(_SC_PAGESIZE);
}

static void child(void)
{
	/* warm up: the first slab, descriptor chunk and timer heap exist */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, wait_release, NULL));
	release = 1;
	CHECK_OK(pthread_join(t, NULL));
	release = 0;

	struct rlimit old, cap;
	CHECK_OK(getrlimit(RLIMIT_AS, &old));
	cap = old;
	cap.rlim_cur = (rlim_t)vm_bytes() + (64u << 20);
	CHECK_OK(setrlimit(RLIMIT_AS, &cap));

	/* a stack that cannot fit is refused */
	pthread_attr_t big;
	CHECK_OK(pthread_attr_init(&big));
	CHECK_OK(pthread_attr_setstacksize(&big, 1u << 30));
	CHECK_EQ(pthread_create(&t, &big, wait_release, NULL), EAGAIN);

	struct weft_stats s0, s1;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	int n = 0, e = 0;
	while (n < MAX_UTS && (e = pthread_create(&uts[n], NULL, wait_release, (void *)(intptr_t)n)) == 0)
		n++;
	CHECK_EQ(e, EAGAIN);
	CHECK(n > 10);
	for (int i = 0; i < 10; i++)       /* failing again is still just EAGAIN */
		CHECK_EQ(pthread_create(&t, NULL, wait_release, NULL), EAGAIN);
	CHECK_EQ(pthread_create(&t, &big, wait_release, NULL), EAGAIN);
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(s1.threads_created - s0.threads_created, n);
	CHECK_EQ(s1.threads_live, n + 1);

	/* the runtime still works: everybody runs, sleeps and ends */
	usleep(1000);
	CHECK_OK(sched_yield());
	release = 1;
	for (int i = 0; i < n; i++) {
		void *r;
		CHECK_OK(pthread_join(uts[i], &r));
		CHECK(r == (void *)(intptr_t)i);
	}
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(s1.threads_live, 1);

	/* under the same cap, the freed stacks and slots serve again: nothing
	 * leaked by the failed attempts */
	release = 0;
	int again = 0;
	while (again < n && pthread_create(&uts[again], NULL, wait_release, NULL) == 0)
		again++;
	CHECK_EQ(again, n);
	release = 1;
	for (int i = 0; i < again; i++)
		CHECK_OK(pthread_join(uts[i], NULL));

	/* memory back: the big stack fits again */
	CHECK_OK(setrlimit(RLIMIT_AS, &old));
	CHECK_OK(pthread_create(&t, &big, wait_release, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_attr_destroy(&big));
	_exit(0);
}

int main(void)
{
#if defined(WEFT_TEST_SANITIZE)
	SKIP("RLIMIT_AS and ASan's shadow memory do not mix");
#endif
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child();
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child status %#x\n", st);
		CHECK(0);
	}
	return 0;
}
