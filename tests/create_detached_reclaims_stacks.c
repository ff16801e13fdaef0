/* With the address space capped (800 MB, as glibc's tst-create-detached),
 * two UTs create 20,000 detached threads with 16 MiB stacks.  Only ~48 such
 * stacks fit at once, so creation must hand the processor to the exited
 * threads to get their stacks back: every create ends up succeeding, and
 * the whole run takes far less than the 10 ms time slice per 48 threads it
 * would take without that. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOTAL 20000
static pthread_attr_t detached;
/* Atomic adds: the two creators run at once on different VPs (WEFT_VPS=2);
 * a plain ++ could lose EAGAINs (the check below would pass on too few) and
 * store a stale `created`, so more than TOTAL threads would be made. */
static unsigned created, eagain;

static void *nothing(void *arg) { return arg; }

static void *creator(void *arg)
{
	while (__atomic_load_n(&created, __ATOMIC_RELAXED) < TOTAL) {
		pthread_t t;
		int e = pthread_create(&t, &detached, nothing, NULL);
		if (e == 0)
			__atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
		else if (e == EAGAIN)
			__atomic_fetch_add(&eagain, 1, __ATOMIC_RELAXED);
		else
			CHECK_EQ(e, 0);
	}
	return NULL;
}

static int child(void)
{
	struct rlimit rl = { 800u << 20, 800u << 20 };
	CHECK_OK(setrlimit(RLIMIT_AS, &rl));
	CHECK_OK(pthread_attr_init(&detached));
	CHECK_OK(pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_attr_setstacksize(&detached, 16u << 20));
	pthread_t c[2];
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&c[i], NULL, creator, NULL));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	unsigned made = __atomic_load_n(&created, __ATOMIC_RELAXED);
	CHECK(made >= TOTAL);
	/* a yield almost always frees one */
	CHECK(__atomic_load_n(&eagain, __ATOMIC_RELAXED) < made / 10);
	return 0;
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("ASan's shadow memory cannot live under an address-space cap");
#endif
	int64_t t0 = test_now_ns();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	/* without reclaiming on EAGAIN: ~20000/48 slices of 10 ms = 4+ s */
	CHECK(test_now_ns() - t0 < 60LL * 1000 * 1000 * 1000);
	return 0;
}
