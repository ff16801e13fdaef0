/*
 * tls_dlopen_module_test — a module with __thread variables, dlopened after
 * 100 UTs exist, is per UT.  This program itself has no TLS, so its UTs
 * start out sharing the kernel thread's TLS; the dlopen turns per-UT TLS on
 * and every UT, old or new, gets its own copy of the module's variables
 * (through __tls_get_addr and its own DTV) and of errno.  All 150 stay alive
 * until each has taken its address, so distinct addresses are required.
 */
#include "check.h"

#include <dlfcn.h>
#include <errno.h>

enum { OLD = 100, NEW = 50 };

static void (*module_set)(long);
static long (*module_get)(void);
static const char *(*module_text)(void);
static void *(*module_address)(void);
static volatile int loaded;
static long wrong;
static void *addresses[OLD + NEW];
static int recorded;                    /* UTs that have stored their address */

static void *run(void *arg)
{
	long id = (long)arg;
	while (!loaded)
		sched_yield();
	if (module_get() != -7)
		wrong++;                        /* starts from the module's initial value */
	module_set(id * 3);
	addresses[id] = module_address();
	errno = (int)id;
	for (int i = 0; i < 50; i++) {
		sched_yield();
		if (module_get() != id * 3 || module_text()[0] != (char)('a' + (id * 3) % 26) ||
		    errno != (int)id)
			wrong++;
	}
	/* A module block is freed when its UT ends, and malloc may hand the
	 * same bytes to a later UT; addresses are distinct among UTs alive at
	 * once, so none ends before every one has recorded its own (under
	 * several VPs the old UTs could otherwise end while main still creates
	 * the new ones). */
	__atomic_add_fetch(&recorded, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&recorded, __ATOMIC_SEQ_CST) < OLD + NEW)
		sched_yield();
	return NULL;
}

int main(void)
{
	pthread_t t[OLD + NEW];
	for (long i = 0; i < OLD; i++)
		CHECK_OK(pthread_create(&t[i], NULL, run, (void *)i));
	test_settle();
	void *h = dlopen(TLS_MODULE_PATH, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	module_set = (void (*)(long))dlsym(h, "module_set");
	module_get = (long (*)(void))dlsym(h, "module_get");
	module_text = (const char *(*)(void))dlsym(h, "module_text");
	module_address = (void *(*)(void))dlsym(h, "module_address");
	CHECK(module_set && module_get && module_text && module_address);
	loaded = 1;
	for (long i = OLD; i < OLD + NEW; i++)
		CHECK_OK(pthread_create(&t[i], NULL, run, (void *)i));
	for (int i = 0; i < OLD + NEW; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(wrong, 0);
	for (int i = 0; i < OLD + NEW; i++)
		for (int j = i + 1; j < OLD + NEW; j++)
			CHECK(addresses[i] != addresses[j]);
	CHECK_EQ(module_get(), -7);             /* main's own copy untouched */
	return 0;
}
