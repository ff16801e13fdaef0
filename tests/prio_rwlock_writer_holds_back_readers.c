/*
 * Reader-writer locks under SCHED_FIFO (POSIX, Thread Execution
 * Scheduling): while a writer waits, a reader of lower or equal priority
 * does not get the lock (a higher one does); when the lock comes free the
 * writer goes before readers of its priority and below.  A SCHED_OTHER
 * writer keeps glibc's kinds: prefer-reader lets readers in beside the
 * holders, prefer-writer-nonrecursive does not.
 */
#include "prio_test.h"

#include <semaphore.h>
#include <unistd.h>

static pthread_rwlock_t rw;
static sem_t r0_release;

struct who {
	const char *wants, *in;
	bool write;
};

/* Log, take the lock (to read or to write), log, release it. */
static void *locker(void *arg)
{
	const struct who *w = arg;
	pt_event(w->wants);
	CHECK_OK(w->write ? pthread_rwlock_wrlock(&rw) : pthread_rwlock_rdlock(&rw));
	pt_event(w->in);
	CHECK_OK(pthread_rwlock_unlock(&rw));
	return NULL;
}

static void *first_reader(void *arg)
{
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	pt_event("R15:in");
	CHECK_OK(sem_wait(&r0_release));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	return arg;
}

static void fifo_writer_holds_back_readers(int kind)
{
	static const struct who w20 = { "W20:wants", "W20:in", true },
				r10 = { "R10:wants", "R10:in", false },
				r20 = { "R20:wants", "R20:in", false },
				r30 = { "R30:wants", "R30:in", false };
	pt_reset();
	pthread_rwlockattr_t a;
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, kind));
	CHECK_OK(pthread_rwlock_init(&rw, &a));
	CHECK_OK(pthread_rwlockattr_destroy(&a));
	CHECK_OK(sem_init(&r0_release, 0, 0));
	pt_set_self_fifo(5);                 /* each UT runs at once, up to its wait */
	pthread_t t[5];
	t[0] = pt_spawn(15, first_reader, NULL);
	t[1] = pt_spawn(20, locker, (void *)&w20);
	t[2] = pt_spawn(10, locker, (void *)&r10);      /* below the writer: waits */
	CHECK_EQ(pthread_rwlock_tryrdlock(&rw), EBUSY); /* so do we, at 5 */
	t[3] = pt_spawn(20, locker, (void *)&r20);      /* equal: waits */
	t[4] = pt_spawn(30, locker, (void *)&r30);      /* above: in beside R15 */
	CHECK_OK(sem_post(&r0_release));                /* the last reader leaves */
	for (int i = 0; i < 5; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	if (kind == PTHREAD_RWLOCK_PREFER_READER_NP)
		PT_EXPECT("R15:in", "W20:wants", "R10:wants", "R20:wants", "R30:wants", "R30:in",
			  "W20:in", "R20:in", "R10:in");
	else    /* prefer-writer holds every reader back, R30 too */
		PT_EXPECT("R15:in", "W20:wants", "R10:wants", "R20:wants", "R30:wants",
			  "W20:in", "R30:in", "R20:in", "R10:in");
	CHECK_OK(pthread_rwlock_destroy(&rw));
	CHECK_OK(sem_destroy(&r0_release));
}

static void *other_writer(void *arg)
{
	CHECK_OK(pthread_rwlock_wrlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	return arg;
}

/* With a reader holding the lock and a writer of `wpolicy`/`wprio`
 * waiting, may a reader at our (FIFO 1 or OTHER) priority come in? */
static int try_read_beside_waiting_writer(int kind, int wpolicy, int wprio, int mypolicy)
{
	pthread_rwlockattr_t a;
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, kind));
	CHECK_OK(pthread_rwlock_init(&rw, &a));
	CHECK_OK(pthread_rwlockattr_destroy(&a));
	struct sched_param sp = { .sched_priority = mypolicy == SCHED_FIFO ? 1 : 0 };
	CHECK_OK(pthread_setschedparam(pthread_self(), mypolicy, &sp));
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	pthread_t w = test_spawn_sched(wpolicy, wprio, other_writer, NULL);
	usleep(2000);                                    /* the writer queues */
	int r = pthread_rwlock_tryrdlock(&rw);
	if (r == 0)
		CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_rwlock_unlock(&rw));
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_rwlock_destroy(&rw));
	return r;
}

int main(void)
{
	fifo_writer_holds_back_readers(PTHREAD_RWLOCK_PREFER_READER_NP);
	fifo_writer_holds_back_readers(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);

	/* SCHED_OTHER everywhere: glibc's meaning of the kinds. */
	CHECK_EQ(try_read_beside_waiting_writer(PTHREAD_RWLOCK_PREFER_READER_NP, SCHED_OTHER, 0,
						SCHED_OTHER), 0);
	CHECK_EQ(try_read_beside_waiting_writer(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
						SCHED_OTHER, 0, SCHED_OTHER), EBUSY);
	/* A SCHED_FIFO writer holds back a reader of its priority or below,
	 * SCHED_OTHER included, whatever the kind. */
	CHECK_EQ(try_read_beside_waiting_writer(PTHREAD_RWLOCK_PREFER_READER_NP, SCHED_FIFO, 1,
						SCHED_FIFO), EBUSY);
	CHECK_EQ(try_read_beside_waiting_writer(PTHREAD_RWLOCK_PREFER_READER_NP, SCHED_FIFO, 1,
						SCHED_OTHER), EBUSY);
	/* A SCHED_OTHER writer does not hold back a SCHED_FIFO reader. */
	CHECK_EQ(try_read_beside_waiting_writer(PTHREAD_RWLOCK_PREFER_READER_NP, SCHED_OTHER, 0,
						SCHED_FIFO), 0);
	return 0;
}
