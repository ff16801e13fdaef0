/*
 * sig_eintr_where_linux_gives_it — which blocked calls a handler interrupts
 * (man 7 signal, "Interruption of system calls and library functions by
 * signal handlers").
 *
 * Invariant: a signal sent (pthread_kill) to a thread blocked in a call runs
 * its handler on that thread, and then: without SA_RESTART, sem_wait,
 * nanosleep (with the time left in *rem, less than asked and more than
 * nothing), pause and read on an empty pipe fail with EINTR; with
 * SA_RESTART read resumes and returns the byte written after the handler
 * ran, sem_wait resumes and returns 0 after the post (Linux restarts it
 * since 2.6.22: man 7 signal lists it with FUTEX_WAIT), while nanosleep and
 * pause still fail with EINTR; pthread_mutex_lock and pthread_cond_wait
 * never fail with EINTR, with or without SA_RESTART, however many signals
 * come while they wait (they return 0 once the mutex is free / the
 * predicate holds).
 */
#include "sig_test.h"

#include <semaphore.h>

enum call { C_SEM, C_SLEEP, C_PAUSE, C_READ, C_MUTEX, C_COND, NCALL };
static const char *const calls[] = { "sem_wait", "nanosleep", "pause", "read", "mutex_lock", "cond_wait" };

static sem_t sem;
static int pfd[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int pred, started;

struct outcome { long ret; int err; struct timespec rem; int cond_eintr; };

static void *victim(void *arg)
{
	int call = (int)(intptr_t)arg;
	struct outcome *o = calloc(1, sizeof *o);
	char ch;
	started = 1;
	errno = 0;
	switch (call) {
	case C_SEM:
		o->ret = sem_wait(&sem);
		break;
	case C_SLEEP: {
		struct timespec ts = { 2, 0 };
		o->ret = nanosleep(&ts, &o->rem);
		break;
	}
	case C_PAUSE:
		o->ret = pause();
		break;
	case C_READ:
		o->ret = read(pfd[0], &ch, 1);
		break;
	case C_MUTEX:
		o->ret = pthread_mutex_lock(&m);
		if (o->ret == 0)
			CHECK_OK(pthread_mutex_unlock(&m));
		break;
	case C_COND:
		CHECK_OK(pthread_mutex_lock(&m));
		while (!pred) {
			int r = pthread_cond_wait(&c, &m);
			if (r == EINTR)
				o->cond_eintr++;
			else
				CHECK_OK(r);
		}
		CHECK_OK(pthread_mutex_unlock(&m));
		o->ret = 0;
		break;
	}
	o->err = errno;
	return o;
}

static void one(int call, bool restart)
{
	sig_on(SIGUSR1, on_record, restart ? SA_RESTART : 0, 0);
	started = 0;
	pred = 0;
	if (call == C_MUTEX)
		CHECK_OK(pthread_mutex_lock(&m));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, victim, (void *)(intptr_t)call));
	CHECK(sig_wait_for(&started, 1, 2000));
	sig_sleep_ms(50);    /* it is blocked now */
	int rounds = call == C_MUTEX || call == C_COND ? 5 : 1;
	for (int i = 0; i < rounds; i++) {
		int before = hits;
		CHECK_OK(pthread_kill(t, SIGUSR1));
		if (!sig_wait_for(&hits, before + 1, 2000)) {
			fprintf(stderr, "%s%s: the handler never ran\n", calls[call], restart ? " (SA_RESTART)" : "");
			exit(1);
		}
		if (!pthread_equal(hit_self, t)) {
			fprintf(stderr, "%s%s: the handler ran on another thread\n", calls[call],
				restart ? " (SA_RESTART)" : "");
			exit(1);
		}
		sig_sleep_ms(20);
	}
	/* Now release whatever it may still wait for. */
	switch (call) {
	case C_SEM:
		CHECK_OK(sem_post(&sem));
		break;
	case C_READ:
		CHECK_EQ(write(pfd[1], "x", 1), 1);
		break;
	case C_MUTEX:
		CHECK_OK(pthread_mutex_unlock(&m));
		break;
	case C_COND:
		CHECK_OK(pthread_mutex_lock(&m));
		pred = 1;
		CHECK_OK(pthread_cond_signal(&c));
		CHECK_OK(pthread_mutex_unlock(&m));
		break;
	}
	struct outcome *o;
	CHECK_OK(pthread_join(t, (void **)&o));
	bool want_eintr;
	switch (call) {
	case C_SEM:
	case C_READ:
		want_eintr = !restart;
		break;
	case C_SLEEP:
	case C_PAUSE:
		want_eintr = true;
		break;
	default:
		want_eintr = false;
	}
	if (want_eintr && !(o->ret == -1 && o->err == EINTR)) {
		fprintf(stderr, "%s%s: returned %ld (errno %d), wanted -1/EINTR\n", calls[call],
			restart ? " (SA_RESTART)" : "", o->ret, o->err);
		exit(1);
	}
	if (!want_eintr && o->ret != (call == C_READ ? 1 : 0)) {
		fprintf(stderr, "%s%s: returned %ld (errno %d), wanted it to go on\n", calls[call],
			restart ? " (SA_RESTART)" : "", o->ret, o->err);
		exit(1);
	}
	CHECK_EQ(o->cond_eintr, 0);
	if (call == C_SLEEP) {
		int64_t left = o->rem.tv_sec * 1000000000LL + o->rem.tv_nsec;
		CHECK(left > 0);
		CHECK(left < 2000 * SIG_MS - 40 * SIG_MS);
	}
	if (call == C_SEM && want_eintr)
		while (sem_trywait(&sem) == 0) {}
	if (call == C_READ && want_eintr) {     /* the byte nobody read */
		char ch;
		CHECK_EQ(read(pfd[0], &ch, 1), 1);
	}
	free(o);
}

int main(void)
{
	CHECK_OK(sem_init(&sem, 0, 0));
	CHECK_OK(pipe(pfd));
	for (int restart = 0; restart < 2; restart++)
		for (int call = 0; call < NCALL; call++)
			one(call, restart);
	return 0;
}
