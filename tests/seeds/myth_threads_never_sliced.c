/* Myth threads are cooperative (docs/myth.md, "Threads"): th_init and
 * th_fork move a SCHED_OTHER caller to SCHED_FIFO 1 and children inherit
 * it; under a 1 ms slice a Myth thread runs on through many ticks while
 * another Myth thread is ready, which runs only when it yields; a
 * SCHED_OTHER pthread of the same program runs only when no Myth thread
 * can, and becomes a Myth thread at its first th_fork; a caller the
 * program made FIFO or RR keeps its own scheduling, and so do its children;
 * th_init refusing its argument changes nothing. */
#include "../check.h"
#include <errno.h>
#include <weft/myth.h>

static volatile int child_ran, other_ran, spinning_done;

static void sched_of(pthread_t t, int *policy, int *prio)
{
	struct sched_param sp;
	CHECK_OK(pthread_getschedparam(t, policy, &sp));
	*prio = sp.sched_priority;
}

#define CHECK_SCHED(t, pol, pri)                  \
	do {                                      \
		int p_, q_;                       \
		sched_of((t), &p_, &q_);          \
		CHECK_EQ(p_, (pol));              \
		CHECK_EQ(q_, (pri));              \
	} while (0)

static uint64_t ticks(void)
{
	struct weft_stats s;
	CHECK_OK(weft_stats_get(&s, sizeof s));
	return s.ticks;
}

static void *child(void *arg)
{
	CHECK(spinning_done);               /* never ran while its parent spun */
	CHECK_SCHED(pthread_self(), SCHED_FIFO, 1);
	child_ran = 1;
	return arg;
}

static void *leaf(void *arg)
{
	return arg;
}

/* A plain pthread at SCHED_OTHER: it waits behind every Myth thread, then
 * joins them at its first th_fork. */
static void *other(void *arg)
{
	CHECK(child_ran);
	CHECK_SCHED(pthread_self(), SCHED_OTHER, 0);
	other_ran = 1;
	th_thread_t t = th_fork(leaf, (void *)7);
	CHECK(t != NULL);
	CHECK_SCHED(pthread_self(), SCHED_FIFO, 1);
	CHECK(th_join(t) == (void *)7);
	return NULL;
}

static int inherited_policy, inherited_prio;

static void *report_sched(void *arg)
{
	sched_of(pthread_self(), &inherited_policy, &inherited_prio);
	return arg;
}

/* A thread the program made policy/prio forks: it keeps them, its child
 * inherits them. */
static void *chosen(void *arg)
{
	int policy = (int)((long)arg >> 8), prio = (int)((long)arg & 0xff);
	th_thread_t t = th_fork(report_sched, NULL);
	CHECK(t != NULL);
	CHECK_SCHED(pthread_self(), policy, prio);
	CHECK(th_join(t) == NULL);
	CHECK_EQ(inherited_policy, policy);
	CHECK_EQ(inherited_prio, prio);
	return NULL;
}

int main(void)
{
	CHECK_OK(weft_timeslice_set(1000 * 1000));
	CHECK_SCHED(pthread_self(), SCHED_OTHER, 0);

	/* a refused th_init leaves the caller as it was */
	errno = 0;
	CHECK_EQ(th_init(0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_SCHED(pthread_self(), SCHED_OTHER, 0);

	pthread_t o;                        /* SCHED_OTHER, inherited from main */
	CHECK_OK(pthread_create(&o, NULL, other, NULL));

	CHECK_EQ(th_init(1), 0);
	CHECK_SCHED(pthread_self(), SCHED_FIFO, 1);
	CHECK_EQ(th_init(1), 0);            /* again: no change */
	CHECK_SCHED(pthread_self(), SCHED_FIFO, 1);

	th_thread_t c = th_fork(child, (void *)5);
	CHECK(c != NULL);

	/* run on through ten ticks: neither the ready child (same level) nor
	 * the SCHED_OTHER pthread (below) gets the processor */
	struct weft_stats s0;
	CHECK_OK(weft_stats_get(&s0, sizeof s0));
	uint64_t t0 = ticks();
	int64_t start = test_now_ns();
	volatile unsigned long spin = 0;
	while (ticks() < t0 + 10) {
		for (int i = 0; i < 20000; i++)
			spin++;
		CHECK(test_now_ns() - start < 10LL * 1000 * 1000 * 1000);
	}
	CHECK(!child_ran && !other_ran);
	struct weft_stats s1;
	CHECK_OK(weft_stats_get(&s1, sizeof s1));
	CHECK_EQ(s1.preemptions - s0.preemptions, 0);
	CHECK_EQ(s1.context_switches - s0.context_switches, 0);
	spinning_done = 1;

	CHECK_EQ(th_yield(), 0);            /* the child runs, and ends */
	CHECK(child_ran);
	CHECK(!other_ran);
	CHECK_EQ(th_yield(), 0);            /* no Myth thread ready: go on */
	CHECK(!other_ran);
	CHECK(th_join(c) == (void *)5);
	CHECK(!other_ran);                  /* the child had ended: no wait */
	CHECK_OK(pthread_join(o, NULL));    /* now we wait, and it runs */
	CHECK(other_ran);

	pthread_t p;
	p = test_spawn_sched(SCHED_RR, 5, chosen, (void *)(long)(SCHED_RR << 8 | 5));
	CHECK_OK(pthread_join(p, NULL));
	p = test_spawn_sched(SCHED_FIFO, 30, chosen, (void *)(long)(SCHED_FIFO << 8 | 30));
	CHECK_OK(pthread_join(p, NULL));
	return 0;
}
