/*
 * signal_over_late_loaded_library — a program's signal handler that would
 * switch (here: sched_yield) does not switch the interrupted UT out while
 * it is inside a library glibc loaded itself, past Weft's dlopen wrapper
 * (runtime/signal.c, dispatch: a PC in no object the range table knows is
 * treated as protected).  The signal twin of preempt_late_loaded_library.
 *
 * WEFT_NOPREEMPT names glibc's ISO8859-2 converter (a gconv module that
 * iconv_open loads with glibc's own dlopen); slicing is off (WEFT_TIMESLICE
 * =0), so only the handler's sched_yield and the spinner's own yields
 * switch.  A converter loops: a flag up, a conversion into ISO-8859-2 (its
 * time is in the module and in libc), the flag down, a spin of its own.  A
 * spinner, with SIGUSR1 blocked like main, yields in a loop and notes each
 * time the converter ran since it last looked, and whether the flag was up.
 * A 1 ms interval timer sends SIGUSR1 to the process; only the converter
 * takes it, and its handler calls sched_yield.
 *
 * Asserted: at least 20 hand-backs, and at most one in ten with the flag
 * up (the handler may switch over the program's code between the flag's
 * store and the call; never over libc's or the module's).  Before the
 * fix, the module's code was the program's to signal delivery.
 */
#include "late_library.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/time.h>

#define RUN_NS 1500000000ll
#define SPIN 100000

static atomic_int stop;
static atomic_long handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
	sched_yield();                         /* switches, where switching is allowed */
}

static void *converter(void *arg)
{
	(void)arg;
	iconv_t cd = iconv_open("ISO-8859-2", "UTF-8");   /* glibc loads the module here */
	CHECK(cd != (iconv_t)-1);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));
	while (!atomic_load(&stop)) {
		late_convert(cd);
		late_progress++;
		for (volatile int i = 0; i < SPIN; i++) {
		}
		late_progress++;
	}
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));
	iconv_close(cd);
	return NULL;
}

static void *spinner(void *arg)
{
	struct late_seen *s = arg;
	unsigned long last = late_progress;
	while (!atomic_load(&stop)) {
		sched_yield();
		late_look(s, &last);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bool verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	late_setup();

	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));   /* main and the spinner */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));

	struct late_seen s = { 0, 0 };
	pthread_t sp, cv;
	CHECK_OK(pthread_create(&cv, NULL, converter, NULL));
	CHECK_OK(pthread_create(&sp, NULL, spinner, &s));
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	timer_t tm;
	CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &tm));
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	CHECK_OK(timer_settime(tm, 0, &its, NULL));
	int64_t end = test_now_ns() + RUN_NS;
	while (test_now_ns() < end) {
		struct timespec ms = { 0, 10000000 };
		nanosleep(&ms, NULL);
	}
	CHECK_OK(timer_delete(tm));
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(cv, NULL));
	CHECK_OK(pthread_join(sp, NULL));
	bool bad = s.handbacks < 20 || s.inside * 10 > s.handbacks;
	if (bad || verbose)
		fprintf(stderr, "%ld hand-backs, %ld with the converter inside the library's call; %ld signals handled\n",
			s.handbacks, s.inside, atomic_load(&handled));
	CHECK(!bad);
	return 0;
}
