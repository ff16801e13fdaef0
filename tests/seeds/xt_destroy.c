/* xthread_destroy ends a thread at once, wherever it is: waiting in
 * xthread_wait or xthread_receive, blocked on a pthread mutex, ready after
 * a yield, not yet started, at a higher or a lower priority than the
 * destroyer.  It runs none of its code afterwards (an event set or a word
 * sent later finds it gone), its stack is unwound (a cleanup handler runs),
 * and when xthread_destroy returns it has ended: ping says XTERR and Weft
 * counts one thread fewer.  Many destroyed threads leave nothing behind.
 * A thread that does not exist (never was, ended, destroyed, garbage
 * handles) answers XTERR; destroying oneself is xthread_exit; destroying
 * the initial thread lets the others run on. */
#include "../check.h"
#include <sys/wait.h>
#include <unistd.h>
#include <weft/xthreads.h>

static Xevent ev;
static xthread_t me;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile long before, after, cleaned, ran;

static void on_unwind(void *arg) { cleaned++; }

static void wait_event(long unused)
{
	pthread_cleanup_push(on_unwind, NULL);
	before++;
	xthread_wait(ev);
	after++;
	pthread_cleanup_pop(0);
}

static void wait_message(long unused)
{
	pthread_cleanup_push(on_unwind, NULL);
	before++;
	xthread_receive();
	after++;
	pthread_cleanup_pop(0);
}

static void wait_mutex(long unused)
{
	before++;
	pthread_mutex_lock(&mu);
	after++;
	pthread_mutex_unlock(&mu);
}

static void yield_loop(long unused)
{
	for (;;) {
		before++;
		xthread_yield(me);
		after++;
	}
}

static void never_runs(long unused) { ran++; }

static uint64_t live(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.threads_live;
}

static xthread_t spawn(int prio, void (*fn)(long))
{
	before = after = cleaned = 0;
	xthread_t t;
	xthread_attr_t a = XTHREAD_ATTR_INITIALIZER;
	a.prio = prio;
	CHECK_EQ(xthread_create(&t, &a, fn, 1, 0), XTOK);
	return t;
}

/* t has started and stopped where it waits: destroy it and check it is
 * gone, unwound, and runs nothing more. */
static void destroy_started(xthread_t t, int unwinds)
{
	uint64_t n = live();
	if (before == 0)
		xthread_yield(t);                 /* same priority: let it start */
	CHECK_EQ(before, 1);
	CHECK_EQ(xthread_ping(t), XTOK);
	CHECK_EQ(xthread_destroy(t), XTOK);
	CHECK_EQ(xthread_ping(t), XTERR);
	CHECK_EQ(live(), n - 1);
	CHECK_EQ(cleaned, unwinds);
	CHECK_EQ(xthread_destroy(t), XTERR);  /* already destroyed */
	CHECK_EQ(after, 0);
}

static void destroy_cases(void)
{
	ev = xthread_event();

	/* waiting for an event that is set afterwards */
	destroy_started(spawn(20, wait_event), 1);
	CHECK_EQ(xthread_set(ev), XTOK);
	test_settle();
	CHECK_EQ(after, 0);
	CHECK_EQ(xthread_clear(ev), XTOK);

	/* waiting for a message, which can then not be sent */
	xthread_t t = spawn(20, wait_message);
	destroy_started(t, 1);
	CHECK_EQ(xthread_send(t, 5), XTERR);

	/* blocked on a pthread mutex, which then stays ours alone */
	CHECK_OK(pthread_mutex_lock(&mu));
	destroy_started(spawn(20, wait_mutex), 0);
	CHECK_OK(pthread_mutex_unlock(&mu));
	CHECK_OK(pthread_mutex_trylock(&mu));
	CHECK_OK(pthread_mutex_unlock(&mu));
	CHECK_EQ(after, 0);

	/* ready: it yielded back to us and would go on looping */
	destroy_started(spawn(20, yield_loop), 0);
	xthread_yield(me);
	test_settle();
	CHECK_EQ(after, 0);

	/* lower and higher priorities, both waiting */
	xthread_t lo = spawn(5, wait_event);
	CHECK_EQ(xthread_chprio(lo, 20), 5);  /* let it start and wait ... */
	xthread_yield(lo);
	CHECK_EQ(xthread_chprio(lo, 5), 20);  /* ... then sink below us */
	destroy_started(lo, 1);
	before = 0;
	xthread_t hi = spawn(40, wait_event); /* runs at once, waits */
	CHECK_EQ(before, 1);
	destroy_started(hi, 1);

	/* not started yet: its function never runs */
	uint64_t n = live();
	ran = 0;
	xthread_t ns = spawn(20, never_runs), nl = spawn(3, never_runs);
	CHECK_EQ(xthread_destroy(ns), XTOK);
	CHECK_EQ(xthread_destroy(nl), XTOK);
	CHECK_EQ(live(), n);
	test_settle();
	CHECK_EQ(ran, 0);
}

static void missing_threads(void)
{
	long local;
	CHECK_EQ(xthread_destroy(NULL), XTERR);
	CHECK_EQ(xthread_destroy((xthread_t)1), XTERR);
	CHECK_EQ(xthread_destroy((xthread_t)&local), XTERR);
	CHECK_EQ(xthread_destroy((xthread_t)(uintptr_t)-1), XTERR);
	CHECK_EQ(xthread_destroy((xthread_t)(uintptr_t)0x7fffffff00000001ull), XTERR);
	xthread_t t = spawn(20, never_runs);
	xthread_yield(t);                         /* runs and ends */
	CHECK_EQ(ran, 1);
	CHECK_EQ(xthread_destroy(t), XTERR);      /* ended: does not exist */
	ran = 0;
}

/* Destroying many waiting threads leaves no thread, slot or memory. */
static void reclaimed(void)
{
	uint64_t n = live();
	xthread_t first = NULL;
	for (long i = 0; i < test_iters(20000); i++) {
		xthread_t t = spawn(20, i & 1 ? wait_event : wait_message);
		if (!first)
			first = t;
		xthread_yield(t);
		CHECK_EQ(xthread_destroy(t), XTOK);
		CHECK_EQ(live(), n);
		CHECK(t != first || i == 0);     /* a handle names one thread only */
	}
	CHECK_EQ(xthread_ping(first), XTERR);
	CHECK_EQ(after, 0);
}

static void suicide(long unused)
{
	xthread_t self;
	before++;
	xthread_self(&self);
	xthread_destroy(self);
	after++;
}

static void destroy_self(void)
{
	xthread_t t = spawn(20, suicide);
	xthread_yield(t);
	CHECK_EQ(before, 1);
	CHECK_EQ(after, 0);
	CHECK_EQ(xthread_ping(t), XTERR);
}

static xthread_t initial;

static void kill_initial(long unused)
{
	CHECK_EQ(xthread_destroy(initial), XTOK);
	CHECK_EQ(xthread_ping(initial), XTERR);
	printf("others run on\n");
	fflush(stdout);
}

/* In a child: a thread destroys the initial thread, parked in a wait; the
 * process goes on until the last thread ends, then exits 0. */
static void destroy_initial(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(20);
		CHECK_EQ(xthread_self(&initial), XTOK);
		xthread_t t = spawn(20, kill_initial);
		(void)t;
		xthread_receive();                 /* destroyed here */
		_exit(9);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

int main(void)
{
	CHECK_EQ(xthread_self(&me), XTOK);
	destroy_cases();
	missing_threads();
	reclaimed();
	destroy_self();
	destroy_initial();
	return 0;
}
