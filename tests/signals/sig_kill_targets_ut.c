/*
 * sig_kill_targets_ut — a signal sent to a thread runs its handler on that
 * thread (Mueller's delivery rule 1: "specifically directed at a thread").
 *
 * Invariant: for pthread_kill and pthread_sigqueue, pthread_self() inside the
 * handler equals the target, whether the target is parked in
 * pthread_cond_wait, sem_wait or nanosleep, or running busy without calling
 * anything; raise() runs the handler on the caller before raise returns;
 * pthread_sigqueue's si_value and SI_QUEUE reach the handler.  The sender
 * (main) never runs the handler itself.
 */
#include "sig_test.h"

#include <semaphore.h>

enum how { PARK_COND, PARK_SEM, PARK_SLEEP, BUSY, NHOW };
static const char *const hows[] = { "cond_wait", "sem_wait", "nanosleep", "busy" };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static volatile int done, started;

static void *target(void *arg)
{
	enum how how = (enum how)(intptr_t)arg;
	started = 1;
	switch (how) {
	case PARK_COND:
		CHECK_OK(pthread_mutex_lock(&m));
		while (!done)
			CHECK_OK(pthread_cond_wait(&c, &m));
		CHECK_OK(pthread_mutex_unlock(&m));
		break;
	case PARK_SEM:
		while (sem_wait(&sem) != 0)
			CHECK_EQ(errno, EINTR);
		break;
	case PARK_SLEEP:
		while (!done) {
			struct timespec ts = { 0, 20 * SIG_MS };
			int r = nanosleep(&ts, NULL);
			CHECK(r == 0 || errno == EINTR);
		}
		break;
	case BUSY:
		while (!done)
			__asm__ volatile("" ::: "memory");
		break;
	default:
		CHECK(0);
	}
	return NULL;
}

static void one(enum how how, bool queue)
{
	done = 0;
	started = 0;
	int before = hits;
	hit_self = 0;
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, target, (void *)(intptr_t)how));
	CHECK(sig_wait_for(&started, 1, 2000));
	sig_sleep_ms(20);    /* let it park (or spin) */
	if (queue) {
		union sigval v = { .sival_int = 4242 + how };
		CHECK_OK(pthread_sigqueue(t, SIGUSR1, v));
	} else {
		CHECK_OK(pthread_kill(t, SIGUSR1));
	}
	if (!sig_wait_for(&hits, before + 1, 2000)) {
		fprintf(stderr, "handler never ran for a target in %s\n", hows[how]);
		exit(1);
	}
	CHECK_EQ(hits, before + 1);
	if (!pthread_equal(hit_self, t)) {
		fprintf(stderr, "target in %s: handler ran on another thread%s\n", hows[how],
			pthread_equal(hit_self, pthread_self()) ? " (the sender)" : "");
		exit(1);
	}
	if (queue) {
		CHECK_EQ(hit_code, SI_QUEUE);
		CHECK_EQ(hit_value, 4242 + how);
	} else {
		CHECK_EQ(hit_code, SI_TKILL);
	}
	CHECK_OK(pthread_mutex_lock(&m));
	done = 1;
	CHECK_OK(pthread_cond_broadcast(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	if (how == PARK_SEM)
		CHECK_OK(sem_post(&sem));
	CHECK_OK(pthread_join(t, NULL));
}

static void *raiser(void *arg)
{
	int before = hits;
	CHECK_OK(raise(SIGUSR1));
	/* The handler ran on this thread before raise returned. */
	CHECK_EQ(hits, before + 1);
	CHECK(pthread_equal(hit_self, pthread_self()));
	CHECK_EQ(hit_code, SI_TKILL);
	return NULL;
}

int main(void)
{
	CHECK_OK(sem_init(&sem, 0, 0));
	sig_on(SIGUSR1, on_record, SA_RESTART, 0);
	for (int how = 0; how < NHOW; how++) {
		one((enum how)how, false);
		one((enum how)how, true);
	}
	/* raise() from main and from another thread. */
	raiser(NULL);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, raiser, NULL));
	CHECK_OK(pthread_join(t, NULL));
	/* pthread_kill to self: handler on self before return. */
	int before = hits;
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	CHECK_EQ(hits, before + 1);
	CHECK(pthread_equal(hit_self, pthread_self()));
	return 0;
}
