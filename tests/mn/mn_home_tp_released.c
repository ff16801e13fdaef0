/*
 * mn_home_tp_released — a kernel thread that comes home from a blocking
 * call stops using the thread pointer of the UT it brought back.
 *
 * A UT X with a stack of its own size (a mapping of its own, unmapped when
 * X is gone, with X's thread block at its top) makes a blocking call
 * (fsync: the VP is handed to a spare while the kernel holds X's kernel
 * thread).  Back from the kernel, that thread goes home and queues X;
 * another carrier runs X, which exits, and its stack is unmapped.  A second
 * UT then makes a blocking call, which hands the VP to the spare on top of
 * the list: the thread that brought X back.  Before the fix the process's
 * first kernel thread, on its first trip home, still had X's thread block
 * in %fs there, and read it when handed the VP (kthread.c's carry): SIGSEGV
 * (api_fuzz's process-shared barrier cases, whose waits are such calls,
 * one run in 20 under two VPs).  The `__thread` variable turns per-UT TLS
 * on with one VP too, where the sequence is exact in every round; with two
 * VPs X runs on the first kernel thread in about half of them, which is
 * counted (it must happen at least once).  Each round is a fresh process
 * (a fork while main is the only UT), since only a kernel thread's first
 * trip home took that path.
 */
#include "mn_test.h"

#include <sys/mman.h>
#include <sys/syscall.h>

static __thread int tls_mark;          /* per-UT TLS on, even with one VP */
static int fd;
static weft_event_t release_ev = WEFT_EVENT_INITIALIZER;
static volatile int *on_first_kt;      /* shared with the parent */

static pid_t kernel_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *blocking_once(void *arg)
{
	tls_mark = 1;
	if (kernel_tid() == getpid())        /* the child's first kernel thread */
		__atomic_add_fetch(on_first_kt, 1, __ATOMIC_RELAXED);
	CHECK_OK(fsync(fd));
	CHECK_EQ(tls_mark, 1);
	return arg;
}

static void *waits_for_release(void *arg)
{
	tls_mark = 2;
	weft_event_wait(&release_ev);
	CHECK_EQ(tls_mark, 2);
	return arg;
}

static void child(void *arg)
{
	struct weft_stats before, after;
	CHECK_OK(weft_stats_get(&before, sizeof before));
	/* keeps a second UT alive: a blocking call hands the VP on only
	 * when another UT could use it */
	pthread_t keeper, x;
	CHECK_OK(pthread_create(&keeper, NULL, waits_for_release, NULL));
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));   /* not the pool's size */
	CHECK_OK(pthread_create(&x, &a, blocking_once, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_OK(pthread_join(x, NULL));
	/* x's stack is unmapped; these hand the VP to the parked spares */
	for (int i = 0; i < 4; i++)
		CHECK_OK(fsync(fd));
	weft_event_set(&release_ev);
	CHECK_OK(pthread_join(keeper, NULL));
	CHECK_OK(weft_stats_get(&after, sizeof after));
	CHECK(after.handoffs >= before.handoffs + 5);
}

int main(void)
{
	FILE *f = tmpfile();
	CHECK(f);
	fd = fileno(f);
	on_first_kt = mmap(NULL, sizeof *on_first_kt, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			   -1, 0);
	CHECK(on_first_kt != MAP_FAILED);
	static char err[4096];
	const int rounds = 40;
	for (int round = 0; round < rounds; round++) {
		int st = test_in_child(child, NULL, err, sizeof err);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "round %d: child status %#x:\n%s\n", round, st, err);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	/* one VP: X always runs on the first kernel thread; two: now and then */
	if (s.vps < 2)
		CHECK_EQ(*on_first_kt, rounds);
	else
		CHECK(*on_first_kt >= 1);
	fclose(f);
	return 0;
}
