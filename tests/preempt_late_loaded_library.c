/*
 * preempt_late_loaded_library — a library that glibc loads itself, past
 * Weft's dlopen wrapper, is protected from the tick as soon as it runs, not
 * from the range table's next rebuild (runtime/preempt.c,
 * late_code_protected).
 *
 * The test runs with WEFT_NOPREEMPT naming glibc's ISO8859-2 converter (a
 * gconv module that iconv_open loads with glibc's own dlopen) and a 1 ms
 * slice.  A spinner and a converter share the one VP, so slicing starts
 * (and the table is built) before the module is loaded.  The converter
 * loops: a flag up, a conversion of 256 KiB into ISO-8859-2 (its time is
 * in the module and libc), the flag down, then a spin of its own.  Each
 * time the spinner gets the processor back it notes whether the converter
 * was switched out with the flag up.
 *
 * Asserted: at least 20 such hand-backs, and at most one in ten of them
 * with the flag up (a tick between the flag's store and the call, in the
 * program's code, may switch; the module and libc never).  Before the fix
 * about half the hand-backs came with the flag up: the module's code was
 * the program's to the tick.  The same for libgcc_s, which glibc loads for
 * backtrace, where it is not loaded at start (the release build; the
 * sanitizers' runtimes load it before main).
 */
#include "late_library.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>

#define RUN_NS 1500000000ll            /* each phase */
#ifndef SPIN
#define SPIN 100000
#endif

static atomic_int stop;
enum work { ICONV, BACKTRACE, JIT };
static enum work work;
static void (*jit_spin)(long);          /* code in no object: a JIT's */

static void spin_own(void)
{
	for (volatile int i = 0; i < SPIN; i++) {
	}
}

static void one_backtrace(void)
{
	void *frames[32];
	int n = 0;
	late_inside = 1;
	for (int i = 0; i < 50; i++)
		n = backtrace(frames, 32);
	late_inside = 0;
	CHECK(n > 0);
}

static void one_jit_spin(void)
{
	late_inside = 1;
	jit_spin(2000000);
	late_inside = 0;
}

static void *converter(void *arg)
{
	(void)arg;
	iconv_t cd = (iconv_t)-1;
	if (work == ICONV) {
		cd = iconv_open("ISO-8859-2", "UTF-8");     /* glibc loads the module here */
		CHECK(cd != (iconv_t)-1);
	}
	while (!atomic_load(&stop)) {
		if (work == BACKTRACE)
			one_backtrace();                /* glibc loads libgcc_s at the first */
		else if (work == JIT)
			one_jit_spin();
		else
			late_convert(cd);
		late_progress++;
		spin_own();
		late_progress++;
	}
	if (work == ICONV)
		iconv_close(cd);
	return NULL;
}

static void *spinner(void *arg)
{
	struct late_seen *s = arg;
	unsigned long last = late_progress;
	while (!atomic_load(&stop))
		late_look(s, &last);
	return NULL;
}

static struct late_seen run_phase(enum work w)
{
	work = w;
	atomic_store(&stop, 0);
	struct late_seen s = { 0, 0 };
	pthread_t sp, cv;
	CHECK_OK(pthread_create(&sp, NULL, spinner, &s));
	sched_yield();                         /* the spinner runs: slicing has started */
	/* a small stack: the fake call that meets the new library rebuilds
	 * the table on it (the static build reads the program's section
	 * headers there, 36 KiB of frame before they moved to the heap) */
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 << 10));
	CHECK_OK(pthread_create(&cv, &a, converter, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	int64_t end = test_now_ns() + RUN_NS;
	while (test_now_ns() < end) {
		struct timespec ms = { 0, 10000000 };
		nanosleep(&ms, NULL);
	}
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(cv, NULL));
	CHECK_OK(pthread_join(sp, NULL));
	return s;
}

static bool verbose;                    /* -v: print each phase's counts */

static void check_phase(const char *what, struct late_seen s)
{
	bool bad = s.handbacks < 20 || s.inside * 10 > s.handbacks;
	if (bad || verbose)
		fprintf(stderr, "%s: %ld hand-backs, %ld with the converter inside the library's call\n",
			what, s.handbacks, s.inside);
	if (bad)
		exit(1);
}

int main(int argc, char **argv)
{
	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	late_setup();

	check_phase("ISO8859-2", run_phase(ICONV));
	if (!dlopen("libgcc_s.so.1", RTLD_NOLOAD | RTLD_NOW))
		check_phase("libgcc_s", run_phase(BACKTRACE));
	else
		fprintf(stderr, "libgcc_s was loaded before main: its phase would show nothing, not run\n");

	/* code in no object is the program's: preempted where it runs */
	static const unsigned char loop[] = {
		0x48, 0xff, 0xcf,             /* 1: dec %rdi */
		0x75, 0xfb,                   /*    jnz 1b */
		0xc3,                         /*    ret */
	};
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	memcpy(page, loop, sizeof loop);
	CHECK_OK(mprotect(page, 4096, PROT_READ | PROT_EXEC));
	jit_spin = (void (*)(long))page;
	struct late_seen j = run_phase(JIT);
	if (verbose || j.handbacks < 20 || j.inside * 2 < j.handbacks) {
		fprintf(stderr, "JIT: %ld hand-backs, %ld with the spinner in the anonymous code\n", j.handbacks,
			j.inside);
		CHECK(j.handbacks >= 20 && j.inside * 2 >= j.handbacks);
	}
	CHECK_OK(munmap(page, 4096));
	return 0;
}
