/* The Xinu/Xthreads primitives in weft.h.  Events: a wait before the event
 * occurs parks, set wakes every waiter and stays set, clear resets it, timed
 * waits expire.  Mailboxes: a send never blocks and fails with EAGAIN while
 * the receiver's slot is full (the first message wins), receive blocks until
 * a message, recvtime expires, recvclr takes a waiting word or says EAGAIN;
 * dead handles are ESRCH.  Directed yield runs the named UT next and is
 * refused for a lower priority; ping tells live from dead. */
#include "check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <weft.h>

/* NULL the compiler cannot see through (glibc's headers declare these
 * nonnull); PASSES_NULL keeps UBSan's nonnull check out of the callers. */
static void *volatile opaque_null;
#define NUL(T) ((T)opaque_null)
#define PASSES_NULL __attribute__((no_sanitize("nonnull-attribute")))

static weft_event_t ev = WEFT_EVENT_INITIALIZER;
static volatile int passed;

static void *wait_event(void *arg)
{
	CHECK_OK(weft_event_wait(&ev));
	passed++;
	return NULL;
}

PASSES_NULL static void event_set_wakes_every_waiter(void)
{
	pthread_t t[10];
	passed = 0;
	for (int i = 0; i < 10; i++)
		CHECK_OK(pthread_create(&t[i], NULL, wait_event, NULL));
	test_settle();
	CHECK_EQ(passed, 0);
	CHECK_EQ(weft_event_destroy(&ev), EBUSY);
	CHECK_OK(weft_event_set(&ev));
	test_settle();                       /* all ten ran, together */
	CHECK_EQ(passed, 10);
	for (int i = 0; i < 10; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(weft_event_wait(&ev));      /* still set: no wait */
	CHECK_OK(weft_event_clear(&ev));
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 5 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	int64_t t0 = test_now_ns();
	CHECK_EQ(weft_event_timedwait(&ev, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	CHECK(test_now_ns() - t0 >= 4 * 1000 * 1000);
	CHECK_EQ(weft_event_timedwait(&ev, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_EQ(weft_event_wait(NUL(weft_event_t *)), EINVAL);
	CHECK_OK(weft_event_destroy(&ev));
	CHECK_OK(weft_event_init(&ev));
}

static volatile uintptr_t got[4];

static void *receiver(void *arg)
{
	uintptr_t m;
	CHECK_OK(weft_receive(&m));
	got[0] = m;
	CHECK_OK(weft_receive(&m));
	got[1] = m;
	return NULL;
}

PASSES_NULL static void mailbox_semantics(void)
{
	pthread_t t;
	uintptr_t m;
	CHECK_OK(pthread_create(&t, NULL, receiver, NULL));
	test_settle();                                /* t parks in receive */
	CHECK_OK(weft_send(t, 11));                   /* readies t, does not block */
	CHECK_EQ(got[0], 0);
	test_settle();                                /* t takes 11, parks again */
	CHECK_EQ(got[0], 11);
	CHECK_OK(weft_send(t, 22));
	CHECK_EQ(weft_send(t, 33), EAGAIN);           /* slot full: first wins */
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(got[1], 22);
	CHECK_EQ(weft_send(t, 1), ESRCH);             /* gone */
	CHECK_EQ(weft_send((pthread_t)0x12345, 1), ESRCH);

	/* to oneself, and the non-blocking and timed receives */
	CHECK_EQ(weft_recvclr(&m), EAGAIN);
	CHECK_OK(weft_send(pthread_self(), 7));
	CHECK_EQ(weft_send(pthread_self(), 8), EAGAIN);
	CHECK_OK(weft_recvclr(&m));
	CHECK_EQ(m, 7);
	struct timespec rel = { 0, 5 * 1000 * 1000 };
	int64_t t0 = test_now_ns();
	CHECK_EQ(weft_recvtime(&m, &rel), ETIMEDOUT);
	CHECK(test_now_ns() - t0 >= 4 * 1000 * 1000);
	CHECK_OK(weft_send(pthread_self(), 9));
	CHECK_OK(weft_recvtime(&m, &rel));
	CHECK_EQ(m, 9);
	rel.tv_nsec = 1000000000;
	CHECK_EQ(weft_recvtime(&m, &rel), EINVAL);
	CHECK_EQ(weft_receive(NUL(uintptr_t *)), EINVAL);
	CHECK_EQ(weft_recvclr(NUL(uintptr_t *)), EINVAL);
}

static volatile int trace[8], ntrace;

static void *mark(void *arg)
{
	trace[ntrace++] = (int)(intptr_t)arg;
	return NULL;
}

static void yield_to_and_ping(void)
{
	struct sched_param sp = { .sched_priority = 10 };
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
	pthread_t a = test_spawn_prio(10, mark, 1), b = test_spawn_prio(10, mark, 2),
		  c = test_spawn_prio(10, mark, 3), low = test_spawn_prio(5, mark, 4);
	CHECK_OK(weft_ping(c));
	/* c runs first though a and b were queued before it; the caller goes
	 * to the tail of its level, so a and b run before it resumes. */
	CHECK_OK(weft_yield_to(c));
	CHECK_EQ(ntrace, 3);
	CHECK_EQ(trace[0], 3);
	CHECK_EQ(weft_ping(c), ESRCH);       /* exited (not yet joined) */
	CHECK_EQ(weft_yield_to(c), ESRCH);
	CHECK_EQ(weft_yield_to(low), EPERM); /* lower priority: refused */
	CHECK_OK(weft_yield_to(pthread_self()));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK_EQ(trace[1], 1);
	CHECK_EQ(trace[2], 2);
	sp.sched_priority = 0;
	CHECK_OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp));
	CHECK_OK(pthread_join(low, NULL));
	CHECK_OK(pthread_join(c, NULL));
	CHECK_EQ(weft_ping(c), ESRCH);
	CHECK_EQ(weft_ping((pthread_t)0), ESRCH);
	CHECK_OK(weft_ping(pthread_self()));
}

int main(void)
{
	event_set_wakes_every_waiter();
	mailbox_semantics();
	yield_to_and_ping();
	return 0;
}
