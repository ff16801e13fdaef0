/*
 * setxid_thread_ends_signalled — a kernel thread that ends after Weft's
 * setuid broadcast signalled it, and before its handler ran, does not hold
 * the broadcast for ever (runtime/setxid.c).  glibc holds back the exit
 * of its own threads for this; Weft cannot hold back a thread it did not
 * make, so it notices the thread is gone.
 *
 * A thread made by glibc's own pthread_create (found with dlvsym, as
 * jemalloc finds it; it never calls into Weft) blocks SIGSETXID with a raw
 * rt_sigprocmask, so the broadcast's signal stays pending on it, sleeps
 * HOLD_MS and ends.  seteuid(12345) made meanwhile must return 0 after the
 * thread ended (not before: it was signalled and waited for), well within
 * the watchdog's time, with every remaining kernel thread's effective uid
 * 12345; seteuid(0) then goes back at once.  Needs root (skipped without).
 */
#include "foreign.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HOLD_MS 300

static atomic_int ready;

/* Raw system calls: the thread must not call into Weft (its syscall and
 * nanosleep are Weft's, and would make the thread a guest). */
static long raw4(long nr, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static void *blocks_then_ends(void *arg)
{
	(void)arg;
	uint64_t setxid = 1ull << (33 - 1);
	if (raw4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&setxid, 0, 8) != 0)
		return (void *)1;
	atomic_store(&ready, 1);
	struct timespec ts = { 0, HOLD_MS * 1000000L };
	raw4(SYS_nanosleep, (long)&ts, 0, 0, 0);
	return NULL;                           /* ends with SIGSETXID pending */
}

static void *yields(void *arg)
{
	sched_yield();
	return arg;
}

static int euid_of(const char *tid)
{
	char path[96], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -2;                     /* ended meanwhile */
	int e = -1, r;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Uid: %d %d", &r, &e) == 2)
			break;
	fclose(f);
	return e;
}

static void every_task_euid(int want)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		int e = euid_of(de->d_name);
		if (e == -2)
			continue;
		if (e != want) {
			fprintf(stderr, "task %s: effective uid %d, not %d\n", de->d_name, e, want);
			exit(1);
		}
		n++;
	}
	closedir(d);
	CHECK(n >= 1);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void)
{
	if (geteuid() != 0)
		SKIP("needs root (seteuid)");
	FOREIGN_SETUP(glibc_create, glibc_join);
	alarm(30);                             /* the old broadcast waited for ever */

	/* a UT first: its create starts Weft's own kernel threads (the
	 * monitor's), which the broadcast must reach as well */
	pthread_t ut;
	CHECK_OK(pthread_create(&ut, NULL, yields, NULL));
	CHECK_OK(pthread_join(ut, NULL));

	pthread_t g;
	CHECK_OK(glibc_create(&g, NULL, blocks_then_ends, NULL));
	while (!atomic_load(&ready))
		sched_yield();
	int64_t t0 = now_ms();
	CHECK_OK(seteuid(12345));
	int64_t took = now_ms() - t0;
	void *r;
	CHECK_OK(glibc_join(g, &r));
	CHECK(r == NULL);                      /* it blocked SIGSETXID and ended */
	CHECK_EQ(geteuid(), (uid_t)12345);
	every_task_euid(12345);
	/* it waited for the thread to end, not less */
	CHECK(took >= HOLD_MS / 2);
	CHECK(took < 10 * 1000);

	t0 = now_ms();
	CHECK_OK(seteuid(0));
	CHECK(now_ms() - t0 < 10 * 1000);
	every_task_euid(0);
	printf("seteuid waited %lld ms for the thread that ended signalled; back in %lld ms\n",
	       (long long)took, (long long)(now_ms() - t0));
	return 0;
}
