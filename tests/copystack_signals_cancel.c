/*
 * copystack_signals_cancel — signals and cancellation reach copy-stack UTs
 * (runtime/copystack.c) whose frames may be in their save areas:
 *   - pthread_kill to a copy-stack UT parked in sem_wait runs its handler
 *     on it (on its own frames, restored), and sem_wait goes on;
 *   - a handler on the UT's sigaltstack that blocks (a switch while the
 *     UT's frames end above the alternate stack) while other copy-stack
 *     UTs use the run stack, then returns: the interrupted frames intact;
 *   - pthread_cancel of copy-stack UTs parked in a condition wait,
 *     sem_wait, read on a pipe and nanosleep: each unwinds through its
 *     restored frames and runs its cleanup handler.
 */
#include "check.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>

#define WORDS 32
static long pattern_of(long id, int i) { return id * 104729 + i; }

/* ---- a handler run on a parked copy-stack UT ---- */

static sem_t wake;
static pthread_t handled_on;
static int handled;

static void on_usr1(int sig)
{
	__atomic_store_n(&handled_on, pthread_self(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELEASE);
}

static void *parked_for_signal(void *arg)
{
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of((long)arg, i);
	while (sem_wait(&wake) != 0)
		CHECK_EQ(errno, EINTR);
	for (int i = 0; i < WORDS; i++)
		CHECK_EQ(mine[i], pattern_of((long)arg, i));
	return NULL;
}

static void *other_copy(void *arg)
{
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of(999, i);
	for (int i = 0; i < 100; i++)
		sched_yield();
	for (int i = 0; i < WORDS; i++)
		CHECK_EQ(mine[i], pattern_of(999, i));
	return NULL;
}

static void signal_to_parked(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
	CHECK_OK(sem_init(&wake, 0, 0));
	pthread_t p = test_spawn_copy(parked_for_signal, (void *)5, 0);
	pthread_t o = test_spawn_copy(other_copy, NULL, 0);   /* takes the run stack */
	test_settle();
	CHECK_OK(pthread_kill(p, SIGUSR1));
	test_settle();
	/* with several VPs (and a debug schedule) p may still wait for the
	 * run stack that `other_copy` holds on another VP when test_settle's
	 * bounded yields run out: wait for the handler itself, generously */
	for (long i = 0; i < 10000000 && !__atomic_load_n(&handled, __ATOMIC_ACQUIRE); i++)
		sched_yield();
	CHECK_EQ(__atomic_load_n(&handled, __ATOMIC_ACQUIRE), 1);
	CHECK(pthread_equal(__atomic_load_n(&handled_on, __ATOMIC_RELAXED), p));
	CHECK_OK(sem_post(&wake));
	CHECK_OK(pthread_join(p, NULL));
	CHECK_OK(pthread_join(o, NULL));
}

/* ---- a handler on the sigaltstack that switches ---- */

static sem_t in_handler, go_on;
static volatile int alt_done;

static void on_usr2(int sig)
{
	char *here = TEST_HERE();          /* the frame (a local may be on ASan's fake stack) */
	stack_t ss;
	CHECK_OK(sigaltstack(NULL, &ss));
	CHECK(ss.ss_flags & SS_ONSTACK);
	CHECK(here >= (char *)ss.ss_sp && here < (char *)ss.ss_sp + ss.ss_size);
	CHECK_OK(sem_post(&in_handler));
	while (sem_wait(&go_on) != 0)       /* parks: other UTs run meanwhile */
		CHECK_EQ(errno, EINTR);
	alt_done = 1;
}

static void *alt_runner(void *arg)
{
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
	CHECK_OK(sigaltstack(&ss, NULL));
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of(77, i);
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR2));     /* runs now, on alt */
	for (int i = 0; i < WORDS; i++)
		CHECK_EQ(mine[i], pattern_of(77, i));
	CHECK(alt_done);
	return NULL;
}

static void handler_switches_on_altstack(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_ONSTACK;
	CHECK_OK(sigaction(SIGUSR2, &sa, NULL));
	CHECK_OK(sem_init(&in_handler, 0, 0));
	CHECK_OK(sem_init(&go_on, 0, 0));
	pthread_t a = test_spawn_copy(alt_runner, NULL, 0);
	CHECK_OK(sem_wait(&in_handler));
	/* while it waits in its handler, others use the run stack */
	pthread_t o[3];
	for (int i = 0; i < 3; i++)
		o[i] = test_spawn_copy(other_copy, NULL, 0);
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(o[i], NULL));
	CHECK_OK(sem_post(&go_on));
	CHECK_OK(pthread_join(a, NULL));
}

/* ---- cancellation through restored frames ---- */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t never;
static int pipefd[2];
static volatile int cleaned[4];

static void cleanup(void *arg)
{
	long id = (long)arg;
	cleaned[id]++;
}

static void unlock_m(void *arg) { pthread_mutex_unlock(&m); }

static void *cancel_me(void *arg)
{
	long id = (long)arg;
	volatile long mine[WORDS];
	for (int i = 0; i < WORDS; i++)
		mine[i] = pattern_of(id, i);
	pthread_cleanup_push(cleanup, arg);
	switch (id) {
	case 0:
		pthread_mutex_lock(&m);
		pthread_cleanup_push(unlock_m, NULL);
		for (;;)
			pthread_cond_wait(&c, &m);
		pthread_cleanup_pop(1);
		break;
	case 1:
		sem_wait(&never);
		break;
	case 2: {
		char b;
		(void)read(pipefd[0], &b, 1);
		break;
	}
	default: {
		struct timespec ts = { 1000, 0 };
		nanosleep(&ts, NULL);
		break;
	}
	}
	pthread_cleanup_pop(0);
	CHECK_EQ(mine[0], pattern_of(id, 0));
	return NULL;
}

static void cancel_parked(void)
{
	CHECK_OK(sem_init(&never, 0, 0));
	CHECK_OK(pipe(pipefd));
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		t[i] = test_spawn_copy(cancel_me, (void *)i, 0);
	test_settle();
	pthread_t o = test_spawn_copy(other_copy, NULL, 0);    /* moves their frames out */
	CHECK_OK(pthread_join(o, NULL));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_cancel(t[i]));
	for (int i = 0; i < 4; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK(r == PTHREAD_CANCELED);
		CHECK_EQ(cleaned[i], 1);
	}
	CHECK_OK(pthread_mutex_lock(&m));       /* its cleanup let the mutex go */
	CHECK_OK(pthread_mutex_unlock(&m));
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	signal_to_parked();
	handler_switches_on_altstack();
	cancel_parked();
	return 0;
}
