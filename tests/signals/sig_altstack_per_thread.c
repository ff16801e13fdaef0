/*
 * sig_altstack_per_thread — SA_ONSTACK with a sigaltstack per thread.
 *
 * Invariant: each thread's sigaltstack() is its own (set in one thread, not
 * seen by another; read back as set); an SA_ONSTACK handler sent to a
 * thread runs on that thread's alternate stack (its frame lies inside it,
 * and sigaltstack reports SS_ONSTACK there); a
 * thread without one runs the handler on its own stack, outside every
 * alternate stack.
 */
#include "sig_test.h"

#define NT 4
#define ALT_SIZE (64 * 1024)

static char alts[NT][ALT_SIZE] __attribute__((aligned(16)));
static volatile uintptr_t where[NT + 1];
static volatile int onstack_flag[NT + 1];
static volatile int hits;
static __thread int my_index;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	stack_t cur;
	sigaltstack(NULL, &cur);
	where[my_index] = (uintptr_t)TEST_HERE();
	onstack_flag[my_index] = (cur.ss_flags & SS_ONSTACK) != 0;
	hits = hits + 1;
}

static volatile int ready, go_home;

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	my_index = i;
	stack_t ss = { .ss_sp = alts[i], .ss_size = ALT_SIZE, .ss_flags = 0 }, back;
	if (i < NT) {
		CHECK_OK(sigaltstack(&ss, NULL));
		CHECK_OK(sigaltstack(NULL, &back));
		CHECK(back.ss_sp == alts[i]);
		CHECK_EQ(back.ss_size, ALT_SIZE);
		CHECK_EQ(back.ss_flags, 0);
	} else {
		CHECK_OK(sigaltstack(NULL, &back));
		CHECK_EQ(back.ss_flags, SS_DISABLE);    /* not inherited from others */
	}
	__atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
	while (!go_home)
		sched_yield();
	return NULL;
}

int main(void)
{
	stack_t back;
	CHECK_OK(sigaltstack(NULL, &back));
	CHECK_EQ(back.ss_flags, SS_DISABLE);
	sig_on(SIGUSR1, on_sig, SA_ONSTACK, 0);
	pthread_t t[NT + 1];
	for (int i = 0; i <= NT; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i));
	CHECK(sig_wait_for(&ready, NT + 1, 2000));
	/* Main's own stays disabled: the workers' calls were theirs. */
	CHECK_OK(sigaltstack(NULL, &back));
	CHECK_EQ(back.ss_flags, SS_DISABLE);
	for (int i = NT; i >= 0; i--) {
		int before = hits;
		CHECK_OK(pthread_kill(t[i], SIGUSR1));
		CHECK(sig_wait_for(&hits, before + 1, 2000));
	}
	for (int i = 0; i < NT; i++) {
		uintptr_t lo = (uintptr_t)alts[i], hi = lo + ALT_SIZE;
		if (!(where[i] >= lo && where[i] < hi)) {
			fprintf(stderr, "thread %d: handler's local at %#lx, its altstack is [%#lx, %#lx)\n",
				i, (unsigned long)where[i], (unsigned long)lo, (unsigned long)hi);
			exit(1);
		}
		CHECK_EQ(onstack_flag[i], 1);
	}
	uintptr_t lo = (uintptr_t)alts[0], hi = (uintptr_t)alts[NT - 1] + ALT_SIZE;
	CHECK(where[NT] != 0);
	CHECK(where[NT] < lo || where[NT] >= hi);
	CHECK_EQ(onstack_flag[NT], 0);
	go_home = 1;
	for (int i = 0; i <= NT; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	return 0;
}
