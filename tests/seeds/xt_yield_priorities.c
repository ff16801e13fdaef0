/* Directed yield and Xinu priorities.  Threads of equal priority run
 * first-come, first-served and keep the processor until they yield or
 * wait; xthread_yield(t) runs t next, ahead of threads queued before it,
 * and the caller then waits behind them at the back of its priority; a
 * yield to a lower priority is refused (XTERR) and the caller goes on, as
 * the paper's Figure 13 returns; a yield to a waiting or ended thread is
 * refused; a yield to oneself is a no-op.  A thread created with a higher
 * priority than its creator runs at once; xthread_chprio/getprio change and
 * read priorities and a raised thread takes over. */
#include "../check.h"
#include <weft/xthreads.h>

static char trace[64];
static int ntrace;
static Xevent gate;

static void mark(long c)
{
	trace[ntrace++] = (char)c;
}

static void mark_twice(long c)
{
	mark(c);
	xthread_yield(NULL);                     /* refused: goes on */
	mark(c);
}

static void mark_wait(long c)
{
	mark(c);
	xthread_wait(gate);
	mark(c);
}

static const char *take(void)
{
	trace[ntrace] = 0;
	ntrace = 0;
	return trace;
}

#define CHECK_TRACE(want)                                                            \
	do {                                                                         \
		const char *_got = take();                                           \
		if (strcmp(_got, want) != 0) {                                       \
			fprintf(stderr, "%s:%d: trace \"%s\", wanted \"%s\"\n", __FILE__, \
				__LINE__, _got, want);                               \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

static xthread_t spawn(int prio, void (*fn)(long), long c)
{
	xthread_t t;
	xthread_attr_t a = XTHREAD_ATTR_INITIALIZER;
	a.prio = prio;
	CHECK_EQ(xthread_create(&t, &a, fn, 1, c), XTOK);
	return t;
}

int main(void)
{
	xthread_t me;
	CHECK_EQ(xthread_self(&me), XTOK);
	CHECK_EQ(xthread_getprio(me), XTHREAD_DEFAULT_PRIO); /* adopted at 20 */
	gate = xthread_event();

	/* equal priority: FIFO, nobody runs until we give way */
	xthread_t a = spawn(20, mark, 'a'), b = spawn(20, mark, 'b'), c = spawn(20, mark, 'c');
	CHECK_TRACE("");
	/* c first though a and b came before it; we wait behind a and b */
	CHECK_EQ(xthread_yield(c), XTOK);
	CHECK_TRACE("cab");
	CHECK_EQ(xthread_yield(a), XTERR);       /* ended */
	CHECK_EQ(xthread_ping(b), XTERR);

	/* lower priority: refused, the caller goes on */
	xthread_t low = spawn(10, mark, 'l');
	CHECK_EQ(xthread_yield(low), XTERR);
	CHECK_TRACE("");
	CHECK_EQ(xthread_yield(me), XTOK);       /* oneself: no-op */
	CHECK_TRACE("");

	/* higher priority runs at once, inside xthread_create */
	spawn(30, mark_twice, 'h');
	CHECK_TRACE("hh");

	/* a waiting thread is not ready: refused */
	xthread_t w = spawn(20, mark_wait, 'w');
	CHECK_EQ(xthread_yield(w), XTOK);        /* runs until it waits */
	CHECK_TRACE("w");
	CHECK_EQ(xthread_yield(w), XTERR);
	CHECK_EQ(xthread_set(gate), XTOK);       /* ready again, behind us */
	CHECK_TRACE("");
	CHECK_EQ(xthread_yield(w), XTOK);
	CHECK_TRACE("w");

	/* priorities changed: lowering ourselves below `low` lets it run */
	CHECK_EQ(xthread_getprio(low), 10);
	CHECK_EQ(xthread_chprio(low, 25), 10);   /* raised above us: takes over */
	CHECK_TRACE("l");
	CHECK_EQ(xthread_chprio(me, 0), XTERR);
	CHECK_EQ(xthread_chprio(me, 100), XTERR);

	/* a chain of directed yields among equals, each naming the next */
	xthread_t x = spawn(20, mark, 'x'), y = spawn(20, mark, 'y'), z = spawn(20, mark, 'z');
	CHECK_EQ(xthread_yield(z), XTOK);        /* z, then the queue: x y */
	CHECK_TRACE("zxy");
	(void)x;
	(void)y;

	/* two levels queued below us: once we drop below both, the higher
	 * level drains first, FIFO within each; then a thread created above
	 * its creator runs at once */
	spawn(7, mark, '1');
	spawn(9, mark, '3');
	spawn(7, mark, '2');
	spawn(9, mark, '4');
	CHECK_TRACE("");
	CHECK_EQ(xthread_chprio(me, 5), 20);
	CHECK_TRACE("3412");
	spawn(7, mark, '5');
	CHECK_TRACE("5");
	return 0;
}
