/*
 * tsan_reports_races — the ThreadSanitizer build (make build-tsan) sees
 * Weft's UTs as threads and Weft's objects as synchronisation.
 *
 * `racy`: two UTs add to one counter with no lock, yielding between
 * iterations so they interleave even on one VP: TSan must report it (the
 * CTest runs it with WILL_FAIL on TSan's exit code 66 and checks the
 * report names the racing function).  Every other mode guards the same
 * kind of counter with one Weft object — mutex, condition variable,
 * semaphore, rwlock, spinlock, barrier, once, create/join — and must run
 * without a report (halt_on_error) and with the exact count.
 */
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4
#define ITERS 2000

static long counter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t sp;
static sem_t sem;
static pthread_barrier_t bar;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int turn;                 /* cond: whose turn it is */
static long slots[N];            /* barrier: each writes its own, reads all */
static long once_value;

static void racy_add(void) { counter++; }

static void *racy(void *a) { for (int i = 0; i < ITERS; i++) { racy_add(); sched_yield(); } return a; }
static void *with_mutex(void *a) { for (int i = 0; i < ITERS; i++) { pthread_mutex_lock(&mu); counter++; pthread_mutex_unlock(&mu); sched_yield(); } return a; }
static void *with_rwlock(void *a) { for (int i = 0; i < ITERS; i++) { pthread_rwlock_wrlock(&rw); counter++; pthread_rwlock_unlock(&rw); pthread_rwlock_rdlock(&rw); (void)*(volatile long *)&counter; pthread_rwlock_unlock(&rw); sched_yield(); } return a; }
static void *with_spin(void *a) { for (int i = 0; i < ITERS; i++) { pthread_spin_lock(&sp); counter++; pthread_spin_unlock(&sp); sched_yield(); } return a; }
static void *with_sem(void *a) { for (int i = 0; i < ITERS; i++) { sem_wait(&sem); counter++; sem_post(&sem); sched_yield(); } return a; }
static void *with_cond(void *a)
{
	int me = (int)(long)a;
	for (int i = 0; i < ITERS / 4; i++) {
		pthread_mutex_lock(&mu);
		while (turn != me)
			pthread_cond_wait(&cv, &mu);
		counter++;
		turn = (me + 1) % N;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return a;
}
static void *with_barrier(void *a)
{
	int me = (int)(long)a;
	for (int r = 1; r <= 50; r++) {
		slots[me] = r;                        /* plain write ... */
		pthread_barrier_wait(&bar);
		for (int j = 0; j < N; j++)           /* ... read by all after the barrier */
			if (slots[j] != r) { fprintf(stderr, "slot %d: %ld != %d\n", j, slots[j], r); exit(1); }
		pthread_barrier_wait(&bar);
	}
	return a;
}
static void init_once(void) { once_value = 42; }
static void *with_once(void *a)
{
	pthread_once(&once, init_once);
	if (once_value != 42) { fprintf(stderr, "once_value %ld\n", once_value); exit(1); }
	return a;
}
static long joined_value;
static void *writes_then_exits(void *a) { joined_value = 7; return a; }

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mutex";
	void *(*fn)(void *) = NULL;
	long want = (long)N * ITERS;
	if (!strcmp(mode, "racy")) fn = racy;
	else if (!strcmp(mode, "mutex")) fn = with_mutex;
	else if (!strcmp(mode, "rwlock")) fn = with_rwlock;
	else if (!strcmp(mode, "spin")) fn = with_spin;
	else if (!strcmp(mode, "sem")) fn = with_sem;
	else if (!strcmp(mode, "cond")) { fn = with_cond; want = (long)N * (ITERS / 4); }
	else if (!strcmp(mode, "barrier")) { fn = with_barrier; want = 0; }
	else if (!strcmp(mode, "once")) { fn = with_once; want = 0; }
	else if (!strcmp(mode, "join")) {
		for (int i = 0; i < 200; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, writes_then_exits, NULL) || pthread_join(t, NULL)) return 1;
			if (joined_value != 7) return 1;
			joined_value = 0;                  /* after the join: ordered */
		}
		puts("join: ok");
		return 0;
	} else { fprintf(stderr, "unknown mode %s\n", mode); return 2; }
	pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
	sem_init(&sem, 0, 1);
	pthread_barrier_init(&bar, NULL, N);
	pthread_t t[N];
	for (long i = 0; i < N; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)i)) { perror("pthread_create"); return 1; }
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	if (fn != racy && counter != want) {
		fprintf(stderr, "%s: counter %ld, want %ld\n", mode, counter, want);
		return 1;
	}
	printf("%s: counter %ld\n", mode, counter);
	return 0;
}
