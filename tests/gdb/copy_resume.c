/*
 * copy_resume — copy-stack UTs whose frames gdb puts back on the run stack
 * while it shows them (tools/gdb/weft-gdb.py) must run on intact afterwards:
 * the run stack gets its own bytes back before the program resumes, gdb
 * detaches, or gdb exits.
 *
 * NUTS copy-stack UTs each fill locals of three nested frames with a
 * pattern of their own, park on a semaphore, and check the pattern when
 * woken.  main then wakes them and exits 0 if every frame came back
 * intact (and says so), 1 otherwise.
 *   copy_resume stop     call debugger_stop() once all are parked (gdb
 *                        breaks there), then wake them
 *   copy_resume attach   print the pid, sleep 3 s (gdb attaches, selects
 *                        UTs and detaches or quits meanwhile), then wake
 */
#include <weft.h>

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NUTS 30
#define WORDS 48

static sem_t go;
/* Counted with atomic adds: under WEFT_VPS=2 UTs of different run stacks
 * park at once on different VPs, and a lost increment would leave main
 * waiting for NUTS for good. */
static int parked;
static volatile int intact[NUTS];

__attribute__((noinline)) void debugger_stop(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int level(int index, int depth)
{
	volatile long pattern[WORDS];
	for (int i = 0; i < WORDS; i++)
		pattern[i] = (long)index * 1000003 + depth * 7919 + i;
	int ok;
	if (depth < 3) {
		ok = level(index, depth + 1);
	} else {
		__atomic_fetch_add(&parked, 1, __ATOMIC_RELAXED);
		sem_wait(&go);
		ok = 1;
	}
	for (int i = 0; i < WORDS; i++)
		if (pattern[i] != (long)index * 1000003 + depth * 7919 + i)
			ok = 0;
	return ok;
}

static void *park_copy(void *arg)
{
	volatile int index = (int)(long)arg;
	intact[index] = level(index, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "stop";
	pthread_attr_t a;
	pthread_t t[NUTS];
	sem_init(&go, 0, 0);
	pthread_attr_init(&a);
	if (weft_attr_setstackmode(&a, WEFT_STACK_COPY) != 0)
		return 2;
	for (long i = 0; i < NUTS; i++)
		if (pthread_create(&t[i], &a, park_copy, (void *)i) != 0)
			return 2;
	while (__atomic_load_n(&parked, __ATOMIC_RELAXED) < NUTS)
		sched_yield();
	if (strcmp(mode, "attach") == 0) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
		sleep(3);
	} else {
		debugger_stop();
	}
	for (int i = 0; i < NUTS; i++)
		sem_post(&go);
	int bad = 0;
	for (int i = 0; i < NUTS; i++) {
		pthread_join(t[i], NULL);
		bad += !intact[i];
	}
	printf("%s\n", bad ? "frames damaged" : "all intact");
	return bad != 0;
}
