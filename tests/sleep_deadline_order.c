/* 1,000 sleepers with random absolute deadlines wake in deadline order and
 * never early; while every UT sleeps the process sleeps in the kernel: its
 * kernel threads (the VP's carrier, Weft's monitor) wake at most a few
 * times in all, and its CPU time stays under 5% of the wall time. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <weft.h>

enum { N = 1000, STEP_NS = 200000 };      /* deadlines 0.2 ms apart: 200 ms */
enum { WINDOW_NS = 300000000 };           /* every UT asleep, main too: the measured span */
enum { WAKES_MAX = 10 };                  /* carrier 1, monitor 1 or 2 (its last look), slack */

static int64_t deadline[N];
static int woke[N];
static int nwoke;
static int nstarted, nasleep;             /* sleepers at the gate, sleepers about to sleep */
static sem_t go;
static volatile int64_t late_max;

static int64_t cpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Times the process's kernel threads went to sleep in the kernel so far:
 * voluntary_ctxt_switches of every task of the process.  A monitor that
 * polled each period while everything sleeps would add one per period. */
static long kernel_sleeps(void)
{
	long sum = 0;
	DIR *d = opendir("/proc/self/task");
	CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], line[128];
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;                 /* a task that ended meanwhile */
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0)
				sum += atol(line + 24);
		fclose(f);
	}
	closedir(d);
	return sum;
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
	return ts;
}

static void *sleeper(void *arg)
{
	int i = (int)(intptr_t)arg;
	/* the first run of a UT (a sanitizer sets up its thread state then)
	 * happens before the deadlines exist, so that it cannot eat the
	 * margin main leaves before the first one */
	__atomic_fetch_add(&nstarted, 1, __ATOMIC_RELEASE);
	while (sem_wait(&go) != 0)
		CHECK_EQ(errno, EINTR);
	struct timespec ts = ts_of(deadline[i]);   /* published before the post */
	__atomic_fetch_add(&nasleep, 1, __ATOMIC_RELEASE);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL));
	int64_t late = test_now_ns() - deadline[i];
	CHECK(late >= 0);
	if (late > late_max)
		late_max = late;
	woke[__atomic_fetch_add(&nwoke, 1, __ATOMIC_RELAXED)] = i;   /* the tick may preempt anywhere */
	return NULL;
}

int main(void)
{
	/* the order of wake-ups is what is checked: no time slicing between a
	 * sleeper's wake-up and its note of it */
	weft_timeslice_set(0);
	CHECK_OK(sem_init(&go, 0, 0));
	/* a random permutation of the slots 0..N-1, so creation order and
	 * deadline order differ */
	static int perm[N];
	for (int i = 0; i < N; i++)
		perm[i] = i;
	srand(12345);
	for (int i = N - 1; i > 0; i--) {
		int j = rand() % (i + 1);
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}

	static pthread_t t[N];
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], NULL, sleeper, (void *)(intptr_t)i));
	while (__atomic_load_n(&nstarted, __ATOMIC_ACQUIRE) < N)
		CHECK_OK(sched_yield());
	/* Every sleeper waits at the gate: now the deadlines, WINDOW_NS on,
	 * then the gate opens and each goes to sleep until its own. */
	int64_t base = test_now_ns() + WINDOW_NS + 50000000;   /* + room for the 1,000 to park */
	for (int i = 0; i < N; i++)
		deadline[i] = base + (int64_t)perm[i] * STEP_NS;
	for (int i = 0; i < N; i++)
		CHECK_OK(sem_post(&go));
	while (__atomic_load_n(&nasleep, __ATOMIC_ACQUIRE) < N)
		CHECK_OK(sched_yield());
	CHECK_OK(sched_yield());            /* the last one parks */
	CHECK_EQ(nwoke, 0);

	/* All N sleep; main sleeps too, until just before the first deadline. */
	struct weft_stats s0, s1;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	long sleeps0 = kernel_sleeps();
	int64_t cpu0 = cpu_now_ns(), wall0 = test_now_ns();
	if (wall0 + WINDOW_NS / 2 > base)
		SKIP("the 1,000 sleepers took longer than 200 ms to park once woken");
	struct timespec until = ts_of(base - 1000000);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL));
	int64_t cpu = cpu_now_ns() - cpu0, wall = test_now_ns() - wall0;
	long sleeps = kernel_sleeps() - sleeps0;
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(nwoke, 0);
	CHECK(s1.idle_sleeps > s0.idle_sleeps);
	if (sleeps > WAKES_MAX || cpu * 20 >= wall) {
		fprintf(stderr, "%ld sleeps in the kernel, cpu %lld ns over wall %lld ns while all slept\n",
			sleeps, (long long)cpu, (long long)wall);
		CHECK(sleeps <= WAKES_MAX);
		CHECK(cpu * 20 < wall);
	}

	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(nwoke, N);
	for (int k = 1; k < N; k++)
		if (deadline[woke[k]] < deadline[woke[k - 1]]) {
			fprintf(stderr, "wake %d (deadline +%lld ns) before %d (+%lld ns)\n",
				woke[k - 1], (long long)(deadline[woke[k - 1]] - base), woke[k],
				(long long)(deadline[woke[k]] - base));
			CHECK(deadline[woke[k]] >= deadline[woke[k - 1]]);
		}
	/* generous: a wake-up 10x later than the whole spread is a bug */
	CHECK(late_max < 10LL * N * STEP_NS);
	CHECK_OK(sem_destroy(&go));
	return 0;
}
