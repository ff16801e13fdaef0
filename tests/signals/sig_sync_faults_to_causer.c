/*
 * sig_sync_faults_to_causer — a synchronous signal goes to the thread that
 * caused it (Mueller's rule 2).
 *
 * Invariant: several threads in turn read an unmapped page (SIGSEGV) and
 * divide an integer by zero (SIGFPE); each time the handler runs on the
 * faulting thread (pthread_self() is it, recorded in a thread-local by the
 * handler and cleared before each fault: a handler on the wrong thread
 * leaves the faulter's record empty; si_addr is the page for SIGSEGV,
 * si_code FPE_INTDIV for SIGFPE) and siglongjmps back into that thread's
 * own sigsetjmp buffer, which restores that thread's mask; the thread then
 * goes on and exits normally.
 */
#include "sig_test.h"

#include <setjmp.h>
#include <sys/mman.h>

#define NT 8

/* What the handler saw, per thread: under NPTL threads fault at once. */
static __thread sigjmp_buf *my_jb;
static __thread volatile pthread_t fault_self;
static __thread volatile void *fault_addr;
static __thread volatile int fault_code;
static int faults;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	fault_self = pthread_self();
	fault_addr = si->si_addr;
	fault_code = si->si_code;
	__atomic_add_fetch(&faults, 1, __ATOMIC_SEQ_CST);
	siglongjmp(*my_jb, sig);
}

static char *hole;
static volatile int zero = 0;

/* The faulting division, out of UBSan's sight in sanitizer builds (it would
 * report the division instead of letting it trap). */
__attribute__((noinline, no_sanitize_undefined)) static int divide(int a, int b) { return a / b; }

static void *worker(void *arg)
{
	sigjmp_buf jb;
	my_jb = &jb;
	sig_mask1(SIG_BLOCK, SIGHUP);      /* must be back after the jump */
	for (int round = 0; round < 3; round++) {
		fault_self = 0;
		fault_addr = NULL;
		int got = sigsetjmp(jb, 1);
		if (got == 0) {
			volatile char c = hole[round];
			(void)c;
			CHECK(0);    /* not reached */
		}
		CHECK_EQ(got, SIGSEGV);
		CHECK(pthread_equal(fault_self, pthread_self()));
		CHECK(fault_addr == hole + round);
		CHECK(sig_blocked(SIGHUP));
		CHECK(!sig_blocked(SIGSEGV));
		sched_yield();

		fault_self = 0;
		fault_code = 0;
		got = sigsetjmp(jb, 1);
		if (got == 0) {
			volatile int q = divide(100, zero);
			(void)q;
			CHECK(0);
		}
		CHECK_EQ(got, SIGFPE);
		CHECK(pthread_equal(fault_self, pthread_self()));
		CHECK_EQ(fault_code, FPE_INTDIV);
		CHECK(!sig_blocked(SIGFPE));
		sched_yield();
	}
	return (void *)(intptr_t)42;
}

int main(void)
{
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED);
	sig_on(SIGSEGV, on_fault, 0, 0);
	sig_on(SIGFPE, on_fault, 0, 0);
	/* One at a time, then all at once. */
	for (int i = 0; i < NT; i++) {
		pthread_t t;
		void *r;
		CHECK_OK(pthread_create(&t, NULL, worker, NULL));
		CHECK_OK(pthread_join(t, &r));
		CHECK_EQ((intptr_t)r, 42);
	}
	pthread_t t[NT];
	for (int i = 0; i < NT; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (int i = 0; i < NT; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK_EQ((intptr_t)r, 42);
	}
	CHECK_EQ(faults, 2 * 2 * NT * 3);
	/* And main itself. */
	worker(NULL);
	return 0;
}
