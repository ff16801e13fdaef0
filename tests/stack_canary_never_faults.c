/* Where Weft cannot guard a stack (no guard markers, mapping budget spent)
 * it puts a canary word at the bottom and checks it at every switch; that
 * check must never fault, even when the program has since protected the
 * page itself, and must still catch an overflow.  A child forces that mode:
 * with mlockall(MCL_FUTURE) new mappings are locked, which guard markers
 * refuse, so Weft falls back to mprotect guards; with the process out of
 * mappings those fail too, and the stacks get canaries.  Then:
 *   - threads that mprotect the low page of their own stack PROT_NONE
 *     switch hundreds of times: no fault, no report;
 *   - a thread that overwrites its canary is reported at its next switch
 *     ("overflowed its unguarded stack") and the process aborts. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NTHREADS = 4, SWITCHES = 300 };

static char *filler;
static size_t filler_len;

static void use_up_mappings(void)
{
	long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 65530;
		fclose(f);
	}
	long ps = sysconf(_SC_PAGESIZE), want = max - test_mappings() + 16;
	filler_len = (size_t)(2 * want + 2) * (size_t)ps;
	filler = mmap(NULL, filler_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(filler != MAP_FAILED);
	for (long i = 0; i < want; i++)
		if (mprotect(filler + (2 * i + 1) * ps, (size_t)ps, PROT_READ) != 0)
			break;
}

static char *stack_low(size_t *guard)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_getguardsize(&a, guard));
	CHECK_OK(pthread_attr_destroy(&a));
	return lo;
}

static volatile int go;

static void *protect_low_page(void *arg)
{
	size_t guard;
	char *lo = stack_low(&guard);
	while (!go)
		sched_yield();
	CHECK_OK(mprotect(lo, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE));
	for (int i = 0; i < SWITCHES; i++)
		CHECK_OK(sched_yield());
	CHECK_OK(mprotect(lo, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE));
	return arg;
}

static void *smash_canary(void *arg)
{
	size_t guard;
	char *lo = stack_low(&guard);
	while (!go)
		sched_yield();
	*(volatile uint64_t *)lo = 0;          /* what an overflow does first */
	sched_yield();
	return arg;
}

/* In the child: make the canary mode, run fn on NTHREADS threads. */
struct child_args {
	void *(*fn)(void *);
};

static void child(void *p)
{
	void *(*fn)(void *) = ((const struct child_args *)p)->fn;
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0)
		_exit(77);
	use_up_mappings();
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i));
	for (int i = 0; i < 3; i++)
		sched_yield();
	CHECK_OK(munmap(filler, filler_len));  /* the program's mprotect needs mappings */
	go = 1;
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

static int run_child(void *(*fn)(void *), char *err, size_t errsz)
{
	struct child_args c = { fn };
	return test_in_child(child, &c, err, errsz);
}

int main(void)
{
#ifdef WEFT_TEST_SANITIZE
	SKIP("ASan's allocator aborts when the process is out of mappings");
#endif
	static char err[8192];
	int st = run_child(protect_low_page, err, sizeof err);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		SKIP("mlockall is not permitted");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(err, "weft:")) {
		fprintf(stderr, "protected canary pages: child status %#x, stderr:\n%s\n", st, err);
		CHECK(0);
	}
	st = run_child(smash_canary, err, sizeof err);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(err, "overflowed its unguarded stack")) {
		fprintf(stderr, "smashed canary: child status %#x, stderr:\n%s\n", st, err);
		CHECK(0);
	}
	return 0;
}
