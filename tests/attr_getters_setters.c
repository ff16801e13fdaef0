/* Every pthread_attr_* getter and setter: the defaults, a value set is the
 * value read back, each invalid value is EINVAL and leaves the old value,
 * a destroyed or never-initialised object is EINVAL; pthread_getattr_np
 * describes a live UT; pthread_getattr_default_np/setattr_default_np change
 * what a NULL attr means; setname_np/getname_np; an affinity set naming
 * no allowed CPU fails pthread_create with EINVAL. */
#include "check.h"

#include <stdatomic.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

static size_t page;

static void test_defaults(void)
{
	pthread_attr_t a;
	int v;
	size_t sz;
	void *addr;
	struct sched_param sp = { .sched_priority = 77 };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_getdetachstate(&a, &v));
	CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
	CHECK_OK(pthread_attr_getinheritsched(&a, &v));
	CHECK_EQ(v, PTHREAD_INHERIT_SCHED);
	CHECK_OK(pthread_attr_getschedpolicy(&a, &v));
	CHECK_EQ(v, SCHED_OTHER);
	CHECK_OK(pthread_attr_getschedparam(&a, &sp));
	CHECK_EQ(sp.sched_priority, 0);
	CHECK_OK(pthread_attr_getscope(&a, &v));
	CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
	CHECK_OK(pthread_attr_getstacksize(&a, &sz));
	CHECK_EQ(sz, 256 * 1024);
	CHECK_OK(pthread_attr_getguardsize(&a, &sz));
	CHECK_EQ(sz, page);
	CHECK_OK(pthread_attr_getstack(&a, &addr, &sz));
	CHECK(addr == NULL);
	sigset_t m;
	CHECK_EQ(pthread_attr_getsigmask_np(&a, &m), PTHREAD_ATTR_NO_SIGMASK_NP);
	cpu_set_t cs;
	CHECK_OK(pthread_attr_getaffinity_np(&a, sizeof cs, &cs));
	CHECK(CPU_ISSET(0, &cs));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void test_set_get(void)
{
	pthread_attr_t a;
	int v;
	size_t sz;
	CHECK_OK(pthread_attr_init(&a));

	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_EQ(pthread_attr_setdetachstate(&a, 42), EINVAL);
	CHECK_OK(pthread_attr_getdetachstate(&a, &v));
	CHECK_EQ(v, PTHREAD_CREATE_DETACHED);

	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_EQ(pthread_attr_setinheritsched(&a, 42), EINVAL);
	CHECK_OK(pthread_attr_getinheritsched(&a, &v));
	CHECK_EQ(v, PTHREAD_EXPLICIT_SCHED);

	CHECK_OK(pthread_attr_setschedpolicy(&a, SCHED_RR));
	CHECK_EQ(pthread_attr_setschedpolicy(&a, 42), EINVAL);
	CHECK_OK(pthread_attr_getschedpolicy(&a, &v));
	CHECK_EQ(v, SCHED_RR);

	struct sched_param sp = { .sched_priority = 42 };
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	sp.sched_priority = 0;
	CHECK_EQ(pthread_attr_setschedparam(&a, &sp), EINVAL);   /* RR needs 1..99 */
	sp.sched_priority = 100;
	CHECK_EQ(pthread_attr_setschedparam(&a, &sp), EINVAL);
	CHECK_OK(pthread_attr_getschedparam(&a, &sp));
	CHECK_EQ(sp.sched_priority, 42);

	CHECK_OK(pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS));
	CHECK_EQ(pthread_attr_setscope(&a, 42), EINVAL);
	CHECK_OK(pthread_attr_getscope(&a, &v));
	CHECK_EQ(v, PTHREAD_SCOPE_PROCESS);

	CHECK_OK(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
	CHECK_EQ(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
	CHECK_EQ(pthread_attr_setstacksize(&a, 0), EINVAL);
	CHECK_OK(pthread_attr_getstacksize(&a, &sz));
	CHECK_EQ(sz, PTHREAD_STACK_MIN);
	CHECK_OK(pthread_attr_setstacksize(&a, 1 << 20));
	CHECK_OK(pthread_attr_getstacksize(&a, &sz));
	CHECK_EQ(sz, 1 << 20);

	CHECK_OK(pthread_attr_setguardsize(&a, 0));
	CHECK_OK(pthread_attr_getguardsize(&a, &sz));
	CHECK_EQ(sz, 0);
	CHECK_OK(pthread_attr_setguardsize(&a, 3 * page));
	CHECK_OK(pthread_attr_getguardsize(&a, &sz));
	CHECK_EQ(sz, 3 * page);

	static char stack_mem[64 * 1024] __attribute__((aligned(16)));
	void *addr;
	CHECK_EQ(pthread_attr_setstack(&a, stack_mem, PTHREAD_STACK_MIN - 1), EINVAL);
	CHECK_EQ(pthread_attr_setstack(&a, (void *)~(uintptr_t)4095, 1 << 20), EINVAL);   /* wraps */
	CHECK_OK(pthread_attr_setstack(&a, stack_mem, sizeof stack_mem));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &sz));
	CHECK(addr == stack_mem);
	CHECK_EQ(sz, sizeof stack_mem);
	CHECK_OK(pthread_attr_getstacksize(&a, &sz));
	CHECK_EQ(sz, sizeof stack_mem);
	/* the obsolete form speaks of the stack's top */
	void *top;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK_OK(pthread_attr_getstackaddr(&a, &top));
	CHECK(top == stack_mem + sizeof stack_mem);
	CHECK_OK(pthread_attr_setstackaddr(&a, stack_mem + sizeof stack_mem));
#pragma GCC diagnostic pop
	CHECK_OK(pthread_attr_getstack(&a, &addr, &sz));
	CHECK(addr == stack_mem);

	sigset_t m, got;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	CHECK_OK(pthread_attr_setsigmask_np(&a, &m));
	CHECK_OK(pthread_attr_getsigmask_np(&a, &got));
	CHECK(sigismember(&got, SIGUSR1));
	CHECK(!sigismember(&got, SIGUSR2));

	cpu_set_t cs, cgot;
	CPU_ZERO(&cs);
	CPU_SET(1, &cs);
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof cs, &cs));
	CHECK_OK(pthread_attr_getaffinity_np(&a, sizeof cgot, &cgot));
	CHECK(CPU_EQUAL(&cs, &cgot));

	/* a copy through getattr_default/setattr_default keeps none of a's stack */
	CHECK_OK(pthread_attr_destroy(&a));
}

/* A destroyed object, or garbage, is refused by every call. */
PASSES_NULL static void test_invalid_objects(void)
{
	pthread_attr_t a;
	int v;
	size_t sz;
	void *addr;
	struct sched_param sp;
	memset(&a, 0xa5, sizeof a);
	CHECK_EQ(pthread_attr_getdetachstate(&a, &v), EINVAL);
	CHECK_EQ(pthread_attr_setstacksize(&a, 1 << 20), EINVAL);
	CHECK_EQ(pthread_attr_destroy(&a), EINVAL);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_EQ(pthread_attr_destroy(&a), EINVAL);
	CHECK_EQ(pthread_attr_getdetachstate(&a, &v), EINVAL);
	CHECK_EQ(pthread_attr_getinheritsched(&a, &v), EINVAL);
	CHECK_EQ(pthread_attr_getschedpolicy(&a, &v), EINVAL);
	CHECK_EQ(pthread_attr_getschedparam(&a, &sp), EINVAL);
	CHECK_EQ(pthread_attr_getscope(&a, &v), EINVAL);
	CHECK_EQ(pthread_attr_getstacksize(&a, &sz), EINVAL);
	CHECK_EQ(pthread_attr_getguardsize(&a, &sz), EINVAL);
	CHECK_EQ(pthread_attr_getstack(&a, &addr, &sz), EINVAL);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, &a, NUL(void *(*)(void *)), NULL), EINVAL);

	CHECK_EQ(pthread_attr_init(NUL(pthread_attr_t *)), EINVAL);
	CHECK_EQ(pthread_attr_destroy(NUL(pthread_attr_t *)), EINVAL);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_EQ(pthread_attr_getdetachstate(&a, NUL(int *)), EINVAL);
	CHECK_EQ(pthread_attr_getstacksize(&a, NUL(size_t *)), EINVAL);
	CHECK_EQ(pthread_attr_setschedparam(&a, NUL(const struct sched_param *)), EINVAL);
	CHECK_EQ(pthread_attr_setstack(&a, NUL(void *), 1 << 20), EINVAL);
	CHECK_EQ(pthread_create(NUL(pthread_t *), &a, NUL(void *(*)(void *)), NULL), EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_EQ(pthread_getattr_np(pthread_self(), NUL(pthread_attr_t *)), EINVAL);
	CHECK_EQ(pthread_getattr_default_np(NUL(pthread_attr_t *)), EINVAL);
	CHECK_EQ(pthread_setattr_default_np(NUL(const pthread_attr_t *)), EINVAL);
	CHECK_EQ(pthread_setname_np(pthread_self(), NUL(const char *)), EINVAL);
	CHECK_EQ(pthread_getname_np(pthread_self(), NUL(char *), 16), EINVAL);
}

static void *report_self(void *arg)
{
	pthread_attr_t *a = arg;
	CHECK_OK(pthread_getattr_np(pthread_self(), a));
	void *addr;
	size_t sz;
	CHECK_OK(pthread_attr_getstack(a, &addr, &sz));
	char *here = TEST_HERE();
	CHECK((char *)addr < here && here < (char *)addr + sz);   /* we run on it */
	return NULL;
}

static void test_getattr_np(void)
{
	pthread_attr_t want, got;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&want));
	CHECK_OK(pthread_attr_setstacksize(&want, 512 * 1024));
	CHECK_OK(pthread_attr_setguardsize(&want, 2 * page));
	CHECK_OK(pthread_attr_setinheritsched(&want, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&want, SCHED_FIFO));
	struct sched_param sp = { .sched_priority = 3 };
	CHECK_OK(pthread_attr_setschedparam(&want, &sp));
	CHECK_OK(pthread_create(&t, &want, report_self, &got));
	CHECK_OK(pthread_join(t, NULL));
	size_t sz;
	int v;
	CHECK_OK(pthread_attr_getstacksize(&got, &sz));
	CHECK_EQ(sz, 512 * 1024);
	CHECK_OK(pthread_attr_getguardsize(&got, &sz));
	CHECK_EQ(sz, 2 * page);
	CHECK_OK(pthread_attr_getschedpolicy(&got, &v));
	CHECK_EQ(v, SCHED_FIFO);
	CHECK_OK(pthread_attr_getschedparam(&got, &sp));
	CHECK_EQ(sp.sched_priority, 3);
	CHECK_OK(pthread_attr_getdetachstate(&got, &v));
	CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
	CHECK_OK(pthread_attr_destroy(&got));
	CHECK_OK(pthread_attr_destroy(&want));

	/* main's stack is the process stack, and contains us */
	CHECK_OK(pthread_getattr_np(pthread_self(), &got));
	void *addr;
	CHECK_OK(pthread_attr_getstack(&got, &addr, &sz));
	char *here = TEST_HERE();
	CHECK((char *)addr < here && here < (char *)addr + sz);
	CHECK_OK(pthread_attr_destroy(&got));
}

static volatile int hold_detached = 1;

static void *report_detach(void *arg)
{
	/* alive until main has tried to join it (on another VP it could have
	 * ended first, and a handle that names nothing is ESRCH) */
	while (hold_detached)
		sched_yield();
	pthread_attr_t a;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getdetachstate(&a, (int *)arg));
	CHECK_OK(pthread_attr_destroy(&a));
	return NULL;
}

static void test_default_np(void)
{
	pthread_attr_t d, saved;
	size_t sz;
	int v;
	CHECK_OK(pthread_getattr_default_np(&saved));
	CHECK_OK(pthread_attr_getstacksize(&saved, &sz));
	CHECK_EQ(sz, 256 * 1024);

	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_setdetachstate(&d, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_attr_setstacksize(&d, 128 * 1024));
	CHECK_OK(pthread_setattr_default_np(&d));
	CHECK_OK(pthread_attr_destroy(&d));
	CHECK_OK(pthread_getattr_default_np(&d));
	CHECK_OK(pthread_attr_getstacksize(&d, &sz));
	CHECK_EQ(sz, 128 * 1024);
	CHECK_OK(pthread_attr_destroy(&d));
	/* a fresh attr starts from the new default too */
	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_getstacksize(&d, &sz));
	CHECK_EQ(sz, 128 * 1024);
	CHECK_OK(pthread_attr_destroy(&d));

	volatile int state = -1;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, report_detach, (void *)&state));
	CHECK_EQ(pthread_join(t, NULL), EINVAL);       /* detached by default now */
	hold_detached = 0;
	for (int i = 0; i < 5000 && state == -1; i++)
		usleep(2000);
	CHECK_EQ(state, PTHREAD_CREATE_DETACHED);

	/* a default naming one stack is refused */
	static char mem[64 * 1024] __attribute__((aligned(16)));
	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_setstack(&d, mem, sizeof mem));
	CHECK_EQ(pthread_setattr_default_np(&d), EINVAL);
	CHECK_OK(pthread_attr_destroy(&d));

	CHECK_OK(pthread_setattr_default_np(&saved));
	CHECK_OK(pthread_attr_destroy(&saved));
	CHECK_OK(pthread_attr_init(&d));
	CHECK_OK(pthread_attr_getstacksize(&d, &sz));
	CHECK_EQ(sz, 256 * 1024);
	CHECK_OK(pthread_attr_getdetachstate(&d, &v));
	CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
	CHECK_OK(pthread_attr_destroy(&d));
}

static void *name_check(void *arg)
{
	char buf[16];
	CHECK_OK(pthread_getname_np(pthread_self(), buf, sizeof buf));
	CHECK(strcmp(buf, (const char *)arg) == 0);
	return NULL;
}

/* The rename races the new thread's start (under NPTL, with several VPs
 * and under a debug schedule alike): it reads its name once told. */
static atomic_int renamed;
static void *name_check_renamed(void *arg)
{
	for (long i = 0; i < 100000000 && !atomic_load(&renamed); i++)
		sched_yield();
	return name_check(arg);
}

static void test_names(void)
{
	char buf[16];
	pthread_t self = pthread_self();
	CHECK_OK(pthread_setname_np(self, "main-ut"));
	CHECK_OK(pthread_getname_np(self, buf, sizeof buf));
	CHECK(strcmp(buf, "main-ut") == 0);
	CHECK_EQ(pthread_setname_np(self, "0123456789abcdef"), ERANGE);   /* 16 chars */
	CHECK_OK(pthread_setname_np(self, "0123456789abcde"));
	CHECK_EQ(pthread_getname_np(self, buf, 15), ERANGE);
	CHECK_OK(pthread_getname_np(self, buf, 16));
	CHECK(strcmp(buf, "0123456789abcde") == 0);

	/* a new UT starts with its creator's name, and can be renamed */
	CHECK_OK(pthread_setname_np(self, "parent"));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, name_check, "parent"));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_create(&t, NULL, name_check_renamed, "child"));
	CHECK_OK(pthread_setname_np(t, "child"));
	atomic_store(&renamed, 1);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(pthread_setname_np(t, "x"), ESRCH);
}

static void test_self_equal(void)
{
	pthread_t self = pthread_self(), t;
	CHECK(pthread_equal(self, pthread_self()));
	CHECK_OK(pthread_create(&t, NULL, name_check, "parent"));
	CHECK(!pthread_equal(self, t));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_setconcurrency(4));
	CHECK_EQ(pthread_getconcurrency(), 4);
	CHECK_EQ(pthread_setconcurrency(-1), EINVAL);
}

static atomic_int affinity_ran;
static void *affinity_child(void *arg)
{
	atomic_fetch_add(&affinity_ran, 1);
	return arg;
}

/* An affinity set with no CPU the process may run on makes pthread_create
 * fail with EINVAL, and no thread runs (glibc's tst-pthread-attr-affinity-
 * fail); a set naming an allowed CPU creates one. */
static void test_affinity_create(void)
{
	int max_cpu = (int)sysconf(_SC_NPROCESSORS_CONF) + 1;
	size_t size = CPU_ALLOC_SIZE(max_cpu + 1);
	cpu_set_t *none = CPU_ALLOC(max_cpu + 1);
	CHECK(none != NULL);
	CPU_ZERO_S(size, none);
	CPU_SET_S(max_cpu, size, none);
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setaffinity_np(&a, size, none));
	CHECK_EQ(pthread_create(&t, &a, affinity_child, NULL), EINVAL);
	cpu_set_t allowed;
	CHECK_OK(sched_getaffinity(0, sizeof allowed, &allowed));
	int cpu = 0;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
		cpu++;
	CHECK(cpu < CPU_SETSIZE);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
	CHECK_OK(pthread_create(&t, &a, affinity_child, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(atomic_load(&affinity_ran), 1);
	CHECK_OK(pthread_attr_destroy(&a));
	CPU_FREE(none);
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	test_affinity_create();
	test_defaults();
	test_set_get();
	test_invalid_objects();
	test_getattr_np();
	test_default_np();
	test_names();
	test_self_equal();
	return 0;
}
