/*
 * sig_storm_from_process — 10,000 signals from another process while
 * threads lock, wait on condition variables and sleep, with per-thread
 * masks deciding who may take them.
 *
 * Invariant: a child process sigqueue()s 5,000 SIGRTMIN (values 1..5000,
 * retrying on EAGAIN) and 5,000 SIGUSR1 at this process; every real-time
 * signal's handler runs exactly once (count 5,000, values summing to
 * 12,502,500: none lost, none doubled), SIGUSR1's at least once and at most
 * 5,000 times; every handler runs on a thread that has the signal unmasked
 * (half the workers block both, and main blocks both); pthread_mutex_lock
 * and pthread_cond_wait return 0 every time (never EINTR); the
 * mutex-guarded counter is exact.
 */
#include "sig_test.h"

#include <sys/wait.h>

enum { N_RT = 5000, N_USR1 = 5000, WORKERS = 8, ROUNDS = 20000 };

static __thread int takes_signals;
static long rt_count, rt_sum, usr1_count, wrong_thread;

/* Atomic: under NPTL two handlers may run at once on two processors. */
#define ADD(v, n) __atomic_add_fetch(&(v), (n), __ATOMIC_SEQ_CST)

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	if (!takes_signals)
		ADD(wrong_thread, 1);
	ADD(rt_sum, si->si_value.sival_int);
	ADD(rt_count, 1);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	if (!takes_signals)
		ADD(wrong_thread, 1);
	ADD(usr1_count, 1);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long counter, turn;
static volatile int stop;
static volatile long sync_errors;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	if (id % 2 == 0) {
		takes_signals = 1;
		sig_mask1(SIG_UNBLOCK, SIGRTMIN);
		sig_mask1(SIG_UNBLOCK, SIGUSR1);
	}
	for (long i = 0; !stop || i < ROUNDS / WORKERS; i++) {
		int r = pthread_mutex_lock(&m);
		if (r)
			sync_errors = sync_errors + 1;
		counter++;
		if (id < 2) {
			/* the two cond-waiters take turns */
			while (turn % 2 != id && !stop) {
				r = pthread_cond_wait(&c, &m);
				if (r)
					sync_errors = sync_errors + 1;
			}
			turn++;
			pthread_cond_broadcast(&c);
		}
		pthread_mutex_unlock(&m);
		if (id == 3 || id == 4) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);      /* EINTR allowed here */
		}
		if (i % 64 == 0)
			sched_yield();
		if (i >= ROUNDS / WORKERS && stop)
			break;
	}
	return NULL;
}

int main(void)
{
	sig_on(SIGRTMIN, on_rt, SA_RESTART, 0);
	sig_on(SIGUSR1, on_usr1, SA_RESTART, 0);
	sig_mask_list(SIG_BLOCK, (const int[]){ SIGRTMIN, SIGUSR1, 0 });
	int go[2];
	CHECK_OK(pipe(go));
	pid_t parent = getpid();
	fflush(NULL);
	pid_t kid = fork();     /* before any thread: a plain sender */
	CHECK(kid >= 0);
	if (kid == 0) {
		char ch;
		if (read(go[0], &ch, 1) != 1)
			_exit(2);
		for (int i = 0; i < N_RT + N_USR1; i++) {
			int rt = i % 2 == 0;
			union sigval v = { .sival_int = rt ? i / 2 + 1 : 0 };
			while (sigqueue(parent, rt ? SIGRTMIN : SIGUSR1, v) != 0) {
				if (errno != EAGAIN)
					_exit(3);
				usleep(100);
			}
		}
		_exit(0);
	}
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i));
	CHECK_EQ(write(go[1], "g", 1), 1);
	int st;
	/* The sender ends first; then every RT signal must be handled. */
	int64_t deadline = test_now_ns() + 60000 * SIG_MS;
	while (waitpid(kid, &st, WNOHANG) == 0) {
		CHECK(test_now_ns() < deadline);
		sig_sleep_ms(5);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	while (__atomic_load_n(&rt_count, __ATOMIC_SEQ_CST) < N_RT && test_now_ns() < deadline)
		sig_sleep_ms(5);
	stop = 1;
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	for (int i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	if (rt_count != N_RT)
		fprintf(stderr, "real-time signals handled: %ld of %d\n", rt_count, N_RT);
	CHECK_EQ(rt_count, N_RT);
	CHECK_EQ(rt_sum, (long)N_RT * (N_RT + 1) / 2);
	CHECK(usr1_count >= 1 && usr1_count <= N_USR1);
	CHECK_EQ(wrong_thread, 0);
	CHECK_EQ(sync_errors, 0);
	CHECK(counter >= ROUNDS);
	return 0;
}
