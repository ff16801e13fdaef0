/*
 * mn_dlopen_constructor_moves — a module's constructor that parks inside
 * dlopen, where glibc holds its recursive loader lock, can take that lock
 * again (dlsym) after it goes on on another VP; and a second thread's
 * dlopen waits for the first one's to end.
 *
 * glibc knows the loader lock's owner by tid, and a UT shows its VP's tid.
 * Before the twenty-ninth stop, under two VPs, the constructor's first
 * dlsym after a move waited in the kernel for the lock its own thread held,
 * and that VP stopped for good; and on any number of VPs a second UT of the
 * loading UT's VP that called dlopen was let in as a recursive acquisition
 * and got the module back with its constructor half run.  Now the lock's
 * owner follows the UT (posix/dlopen.c, the hook ut_rehomed), and a mutex
 * of Weft's keeps dlopen and dlclose to one UT at a time.
 *
 * Checked, under a 60 s alarm, with two other UTs parking and waking beside:
 *  - the loading UT's dlopen returns, the constructor ran to its end
 *    (module_done), and every dlsym in it succeeded;
 *  - a second UT that calls dlopen of the same module once the constructor
 *    has started gets it back only with the constructor done;
 *  - with two VPs in force (weft_stats_get: vps), the constructor came
 *    back on another kernel thread at least once, so the case was met
 *    (it parks on until then, up to 10 s: mn_loader_module.c);
 *  - dlclose of both handles answers 0.
 */
#include "mn_test.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <weft.h>

int mn_loader_in_ctor;                 /* set by the module's constructor */
static int stop;
static void *first;

static void *loader(void *arg)
{
	(void)arg;
	first = dlopen(MN_LOADER_MODULE, RTLD_NOW);
	if (!first)
		fprintf(stderr, "dlopen: %s\n", dlerror());
	CHECK(first);
	CHECK_EQ(*(int *)dlsym(first, "module_done"), 1);
	return NULL;
}

static void *second(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&mn_loader_in_ctor, __ATOMIC_ACQUIRE))
		sched_yield();
	void *h = dlopen(MN_LOADER_MODULE, RTLD_NOW);
	CHECK(h);
	CHECK_EQ(*(int *)dlsym(h, "module_done"), 1);   /* not half loaded */
	CHECK_OK(dlclose(h));
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		if (i % 2) {
			struct timespec ts = { 0, 1000 };
			CHECK_OK(nanosleep(&ts, NULL));
		} else {
			sched_yield();
		}
	}
	return NULL;
}

int main(void)
{
	alarm(60);
	pthread_t o[2], l, s;
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&o[i], NULL, other, NULL));
	/* the VPs start with the second UT: with several, the constructor
	 * parks until one of its parks came back elsewhere (the module) */
	struct weft_stats st;
	CHECK_OK(weft_stats_get(&st, sizeof st));
	if (st.vps >= 2)
		CHECK_OK(setenv("MN_LOADER_WANT_MOVE", "1", 1));
	CHECK_OK(pthread_create(&l, NULL, loader, NULL));
	CHECK_OK(pthread_create(&s, NULL, second, NULL));
	CHECK_OK(pthread_join(l, NULL));
	CHECK_OK(pthread_join(s, NULL));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(o[i], NULL));

	CHECK_EQ(*(int *)dlsym(first, "module_dlsym_failed"), 0);
	int moved = *(int *)dlsym(first, "module_moved");
	CHECK(*(int *)dlsym(first, "module_rounds") >= 2000);
	if (st.vps >= 2)
		CHECK(moved > 0);
	CHECK_OK(dlclose(first));
	return 0;
}
