/*
 * parked — 100 UTs parked in every way a UT can wait, for the debugger and
 * thread-dump tests.  Every UT has a unique name; stdout gets a manifest,
 * one line per UT:
 *     ut NAME KIND OBJECT HOLDER FUNCTION CALL
 * (OBJECT the address it waits on or -, HOLDER the name of the mutex or
 * rwlock holder or the joined UT or -, FUNCTION the program function that
 * parked, CALL the Weft call it parked in), then "ready".
 *
 *   parked abort   park everything, then abort() (a kernel core); the
 *                  spinner is left preempted by the tick (READY)
 *   parked hang    park everything, the spinner too, arm alarm(1) and
 *                  join: a hung process, every UT blocked, the VP asleep
 *   parked dump    park everything, leave the spinner preempted, then
 *                  print the thread dump on the file descriptor given as
 *                  argv[2] and exit 0 (linked with libweft.a to reach the
 *                  hidden printer)
 *
 * The parking functions are global and the dump build is linked with
 * -rdynamic, so dladdr() can name them.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PER_KIND 14

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;       /* held by "holder" */
static pthread_mutex_t cond_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cnd = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;      /* written by "holder" */
static pthread_barrier_t bar;
static sem_t sem, never;
static pthread_t sleepers[PER_KIND];
static volatile int holder_ready, spinner_started, stop_spinning;
static volatile unsigned long spins;

/* Each parker keeps its index in a local the debugger can read. */
void *park_mutex(void *arg)
{
	volatile int index = (int)(long)arg;
	pthread_mutex_lock(&mtx);
	return (void *)(long)index;
}

void *park_cond(void *arg)
{
	volatile int index = (int)(long)arg;
	pthread_mutex_lock(&cond_mtx);
	pthread_cond_wait(&cnd, &cond_mtx);
	pthread_mutex_unlock(&cond_mtx);
	return (void *)(long)index;
}

void *park_sleep(void *arg)
{
	volatile int index = (int)(long)arg;
	sleep(1000 + (unsigned)index);
	return (void *)(long)index;
}

void *park_join(void *arg)
{
	volatile int index = (int)(long)arg;
	pthread_join(sleepers[index], NULL);
	return (void *)(long)index;
}

void *park_sem(void *arg)
{
	volatile int index = (int)(long)arg;
	sem_wait(&sem);
	return (void *)(long)index;
}

void *park_rwlock(void *arg)
{
	volatile int index = (int)(long)arg;
	pthread_rwlock_rdlock(&rw);
	return (void *)(long)index;
}

void *park_barrier(void *arg)
{
	volatile int index = (int)(long)arg;
	pthread_barrier_wait(&bar);
	return (void *)(long)index;
}

void *hold(void *arg)
{
	pthread_mutex_lock(&mtx);
	pthread_rwlock_wrlock(&rw);
	holder_ready = 1;
	sem_wait(&never);
	return arg;
}

void *spin(void *arg)
{
	spinner_started = 1;
	while (!stop_spinning)
		spins++;
	sem_wait(&never);
	return arg;
}

struct kind {
	const char *name;
	void *(*fn)(void *);
	void *object;
	const char *function, *call;
};

static void start(pthread_t *t, const char *name, void *(*fn)(void *), long arg)
{
	if (pthread_create(t, NULL, fn, (void *)arg) != 0) {
		perror("pthread_create");
		exit(2);
	}
	pthread_setname_np(*t, name);
}

extern void __weft_dump_threads(int fd, const char *prefix, unsigned flags) __attribute__((weak));

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "abort";
	struct kind kinds[] = {
		{ "sleep", park_sleep, NULL, "park_sleep", "sleep" },
		{ "join", park_join, NULL, "park_join", "pthread_join" },
		{ "mutex", park_mutex, &mtx, "park_mutex", "pthread_mutex_lock" },
		{ "cond", park_cond, &cnd, "park_cond", "pthread_cond_wait" },
		{ "sem", park_sem, &sem, "park_sem", "sem_wait" },
		{ "rwlock", park_rwlock, &rw, "park_rwlock", "pthread_rwlock_rdlock" },
		{ "barrier", park_barrier, &bar, "park_barrier", "pthread_barrier_wait" },
	};
	pthread_t holder, spinner, t;
	char name[16];

	pthread_setname_np(pthread_self(), "main");
	sem_init(&sem, 0, 0);
	sem_init(&never, 0, 0);
	pthread_barrier_init(&bar, NULL, 1000);
	start(&holder, "holder", hold, 0);
	while (!holder_ready)
		sched_yield();
	printf("ut holder sem %p - hold sem_wait\n", (void *)&never);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		for (long i = 0; i < PER_KIND; i++) {
			snprintf(name, sizeof name, "%s-%02ld", kinds[k].name, i);
			start(k == 0 ? &sleepers[i] : &t, name, kinds[k].fn, i);
			char holder_name[16] = "-";
			if (kinds[k].fn == park_mutex || kinds[k].fn == park_rwlock)
				strcpy(holder_name, "holder");
			else if (kinds[k].fn == park_join)
				snprintf(holder_name, sizeof holder_name, "sleep-%02ld", i);
			if (kinds[k].object)
				printf("ut %s %s %p %s %s %s\n", name, kinds[k].name, kinds[k].object,
				       holder_name, kinds[k].function, kinds[k].call);
			else
				printf("ut %s %s - %s %s %s\n", name, kinds[k].name, holder_name,
				       kinds[k].function, kinds[k].call);
		}
		/* they run and park, in creation order; more than one turn each,
		 * since the tick may preempt one before it parks (seen on a slow
		 * machine under ASan: "cond-10" was still ready at the dump) */
		for (int y = 0; y < 100; y++)
			sched_yield();
	}
	start(&spinner, "spinner", spin, 0);
	while (!spinner_started)
		sched_yield();          /* the spinner runs until the tick preempts it */
	if (strcmp(mode, "abort") == 0) {
		printf("ut spinner ready - - spin -\nut main running - - main -\nready\n");
		fflush(stdout);
		abort();
	}
	if (strcmp(mode, "dump") == 0) {
		printf("ut spinner ready - - spin -\nut main running - - main -\nready\n");
		fflush(stdout);
		if (!__weft_dump_threads || argc < 3)
			return 3;
		__weft_dump_threads(atoi(argv[2]), "weft: ", 1 /* DUMP_BACKTRACE */);
		return 0;
	}
	stop_spinning = 1;
	sched_yield();                  /* the spinner sees the flag and parks */
	printf("ut spinner sem %p - spin sem_wait\n", (void *)&never);
	printf("ut main join - holder main pthread_join\nready\n");
	fflush(stdout);
	alarm(1);                       /* the debugger stops it here, asleep */
	pthread_join(holder, NULL);
	return 0;
}
