/*
 * mn_loader_module — the module mn_dlopen_constructor_moves loads: its
 * constructor parks 2,000 times or more (a 1 µs nanosleep or sched_yield,
 * in turn) inside dlopen, where glibc holds its loader lock, and calls dlsym
 * after each park, which takes that lock again.  It counts the parks
 * after which it ran on another kernel thread, and tells the program it
 * has started (mn_loader_in_ctor, the program's, exported by -rdynamic).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

enum { ROUNDS = 2000 };

extern int mn_loader_in_ctor;
int module_done, module_moved, module_dlsym_failed, module_rounds;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ROUNDS parks at least.  Where the program asks for a move (the variable
 * MN_LOADER_WANT_MOVE: it runs several VPs), the parks go on while none
 * came back on another kernel thread, for up to 10 s: a loaded machine may
 * leave the second VP's kernel thread waiting for a CPU (under ASan with
 * two busy loops beside it, one run in two moved nowhere in 2,000). */
__attribute__((constructor)) static void module_init(void)
{
	__atomic_store_n(&mn_loader_in_ctor, 1, __ATOMIC_RELEASE);
	double end = now_s() + 10;
	for (int i = 0; i < ROUNDS || (!module_moved && now_s() < end && getenv("MN_LOADER_WANT_MOVE")); i++) {
		module_rounds++;
		pid_t before = (pid_t)syscall(SYS_gettid);
		if (i % 2) {
			struct timespec ts = { 0, 1000 };
			nanosleep(&ts, NULL);
		} else {
			sched_yield();
		}
		if ((pid_t)syscall(SYS_gettid) != before)
			module_moved++;
		if (!dlsym(RTLD_DEFAULT, "dlsym"))   /* the loader's lock again */
			module_dlsym_failed++;
	}
	module_done = 1;
}
