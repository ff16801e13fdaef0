/*
 * fam_signals.c — the "Signals and fork" rows: Mueller's Table 2 signal
 * rows (issue 15) and fork of a process with 10,000 threads.
 *
 *  - sig_self: pthread_kill(pthread_self(), SIGUSR1) and its handler run,
 *    per signal ("thread signal handler (internal)", a thread signalling
 *    itself).
 *  - sig_internal: a round trip to another thread: the sender
 *    pthread_kill()s a partner parked in sem_wait (SA_RESTART), the
 *    handler, on the partner, sem_post()s back, the sender sem_wait()s.
 *  - sig_external: a signal from another process: a child sigqueue()s
 *    SIGUSR1 to this process, where only a partner thread has it unmasked
 *    (parked in sem_wait); the handler writes one byte to a pipe, which the
 *    child reads before it sends the next (a signal not handled within 2 s
 *    ends the row as n/a); per round trip, timed by the parent from the go
 *    byte to the child's exit.
 *  - fork_1 / fork_10k: fork + the child's _exit(0) + waitpid, with only
 *    main alive, and with 10,000 threads parked in a condition wait
 *    (created once, 64 KiB stacks, not timed).
 *
 * Invariant: every row ends only when each of its signals was handled (the
 * handler's count is checked after the loop; a lost signal would hang the
 * row, which run.sh turns into n/a, never a number).  Until issue 15 lands,
 * Weft runs a handler on whichever UT is running (the sender, for
 * sig_internal), so its numbers are those of the old delivery
 * (tests/signals/README.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define GROUP "Signals and fork"

static volatile uint64_t handled;

static BENCH_ALIGNED void on_count(int sig) { handled++; }

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction", errno);
}

static void mask1(int how, int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	int e = pthread_sigmask(how, &s, NULL);
	if (e)
		die("pthread_sigmask", e);
}

static BENCH_ALIGNED int64_t m_sig_self(uint64_t n)
{
	install(SIGUSR1, on_count);
	pthread_t me = pthread_self();
	uint64_t h0 = handled;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		pthread_kill(me, SIGUSR1);
	int64_t t = now_ns() - t0;
	if (handled - h0 != n)
		die("sig_self: signals lost", EIO);
	return t;
}

/* ---- round trip to a partner thread ---- */

static sem_t back, never;
static volatile int partner_up;

static BENCH_ALIGNED void on_post_back(int sig)
{
	handled++;
	sem_post(&back);
}

static BENCH_ALIGNED void *parked_partner(void *arg)
{
	mask1(SIG_UNBLOCK, SIGUSR1);
	partner_up = 1;
	while (sem_wait(&never) != 0) {}
	return NULL;
}

static pthread_t start_partner(void)
{
	sem_init(&back, 0, 0);
	sem_init(&never, 0, 0);
	partner_up = 0;
	pthread_t p = spawn(parked_partner, NULL);
	while (!partner_up)
		sched_yield();
	return p;
}

static void stop_partner(pthread_t p)
{
	sem_post(&never);
	join(p);
	mask1(SIG_UNBLOCK, SIGUSR1);
}

static BENCH_ALIGNED int64_t m_sig_internal(uint64_t n)
{
	install(SIGUSR1, on_post_back);
	mask1(SIG_BLOCK, SIGUSR1);     /* the partner unmasks it */
	pthread_t p = start_partner();
	uint64_t h0 = handled;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pthread_kill(p, SIGUSR1);
		while (sem_wait(&back) != 0) {}
	}
	int64_t t = now_ns() - t0;
	if (handled - h0 != n)
		die("sig_internal: signals lost", EIO);
	stop_partner(p);
	return t;
}

/* ---- from another process ---- */

static int to_child[2];

static BENCH_ALIGNED void on_write_back(int sig)
{
	int saved = errno;
	char c = 1;
	handled++;
	if (write(to_child[1], &c, 1) != 1)
		_exit(5);
	errno = saved;
}

static BENCH_ALIGNED int64_t m_sig_external(uint64_t n)
{
	install(SIGUSR1, on_write_back);
	mask1(SIG_BLOCK, SIGUSR1);
	int go[2];
	if (pipe(go) || pipe(to_child))
		die("pipe", errno);
	pthread_t p = start_partner();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		union sigval v = { .sival_int = 0 };
		for (uint64_t i = 0; i < n; i++) {
			if (sigqueue(parent, SIGUSR1, v))
				_exit(3);
			struct pollfd pf = { .fd = to_child[0], .events = POLLIN };
			if (poll(&pf, 1, 2000) != 1)
				_exit(6);          /* no handler ran within 2 s */
			if (read(to_child[0], &c, 1) != 1)
				_exit(4);
		}
		_exit(0);
	}
	uint64_t h0 = handled;
	int64_t t0 = now_ns();
	if (write(go[1], "g", 1) != 1)
		die("write", errno);
	int st;
	while (waitpid(pid, &st, 0) != pid) {}
	int64_t t = now_ns() - t0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 6)
		die("sig_external: a signal was lost (no handler ran within 2 s)", EIO);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || handled - h0 != n)
		die("sig_external: the sender failed or signals were lost", EIO);
	stop_partner(p);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(to_child[i]);
	}
	return t;
}

/* ---- fork ---- */

static BENCH_ALIGNED int64_t forks(uint64_t n)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", errno);
		if (pid == 0)
			_exit(0);
		int st;
		while (waitpid(pid, &st, 0) != pid) {}
	}
	return now_ns() - t0;
}

static BENCH_ALIGNED int64_t m_fork_1(uint64_t n) { return forks(n); }

enum { MANY = 10000 };
static pthread_mutex_t many_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t many_c = PTHREAD_COND_INITIALIZER;
static int many_parked;

static void *park_for_ever(void *arg)
{
	pthread_mutex_lock(&many_m);
	many_parked++;
	for (;;)
		pthread_cond_wait(&many_c, &many_m);
	return NULL;
}

static BENCH_ALIGNED int64_t m_fork_10k(uint64_t n)
{
	static bool made;
	if (!made) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		for (int i = 0; i < MANY; i++) {
			pthread_t t;
			int e = pthread_create(&t, &a, park_for_ever, NULL);
			if (e)
				die("pthread_create (10,000 threads)", e);
		}
		pthread_attr_destroy(&a);
		for (;;) {
			pthread_mutex_lock(&many_m);
			int k = many_parked;
			pthread_mutex_unlock(&many_m);
			if (k == MANY)
				break;
			sched_yield();
		}
		made = true;
	}
	return forks(n);
}

/* ------------------------------------------------------------------ */
/* The rows                                                            */

static const struct metric rows[] = {
	{ "sig_self", GROUP, U_NS, 0, "pthread_kill to self + handler run",
	  "52 µs thread signal handler (internal) (Mueller; SPARC IPX); 154 µs UNIX signal handler",
	  NULL, m_sig_self },
	{ "sig_internal", GROUP, U_NS, 0, "signal round trip to a parked thread (pthread_kill, handler sem_posts back)",
	  "52 µs thread signal handler (internal) (Mueller; SPARC IPX)", NULL, m_sig_internal },
	{ "sig_external", GROUP, U_NS, 0, "signal from another process to a thread, handler writes back a pipe byte",
	  "250 µs thread signal handler (external) (Mueller; SPARC IPX)", NULL, m_sig_external },
	{ "fork_1", GROUP, U_NS, 0, "fork + child _exit + waitpid, main thread only", "-", NULL, m_fork_1 },
	{ "fork_10k", GROUP, U_NS, 0, "fork + child _exit + waitpid, 10,000 threads alive", "-", NULL,
	  m_fork_10k },
};

BENCH_FAMILY(fam_signals, rows);
