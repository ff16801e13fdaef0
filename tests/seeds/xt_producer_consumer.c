/* A Xinu-style producer and consumer on Xthreads' messages and events, in
 * the shape of Comer's prod/cons: xmain creates the threads and returns.
 * The producer sends 1..N one word at a time, yielding to the consumer by
 * name whenever its mailbox is still full (xthread_send refuses a second
 * word: the first message wins); a 0 ends the stream, and the consumer then
 * sets the event `done`, on which three reporters wait together.  The
 * consumer then waits in xthread_receive for ever: once every thread waits
 * and none can run, the program ends with status 0, as Xthreads' resched()
 * ends it (a POSIX program would hang here).  The reporters check the sum,
 * the order and that all three woke on the one xthread_set; the program's
 * last output line says so. */
#include <stdio.h>
#include <stdlib.h>
#include <weft/xthreads.h>

#define N 100000L

static xthread_t cons, prod;
static Xevent done, started;
static long sum, received, out_of_order, refused, woke;

static void fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	exit(1);
}

void consumer(void)
{
	long expect = 1;
	for (;;) {
		long m = xthread_receive();
		if (m == 0) {
			if (xthread_set(done) != XTOK)
				fail("set done");
			continue;
		}
		if (m != expect++)
			out_of_order++;
		sum += m;
		received++;
	}
}

void producer(long n)
{
	if (xthread_wait(started) != XTOK)
		fail("wait started");
	for (long k = 1; k <= n + 1; k++) {
		long m = k <= n ? k : 0;
		while (xthread_send(cons, m) == XTERR) {
			refused++;
			if (xthread_yield(cons) != XTOK)
				fail("yield to the consumer");
		}
	}
}

void reporter(long id)
{
	if (xthread_wait(done) != XTOK)
		fail("wait done");
	woke++;
	if (woke == 3) {
		if (received != N || sum != N * (N + 1) / 2 || out_of_order)
			fail("consumed the wrong words");
		if (refused == 0)
			fail("a full mailbox never refused a word");
		printf("consumed %ld words, sum %ld; 3 reporters woke\n", received, sum);
		fflush(stdout);
	}
}

int xmain(int argc, char **argv)
{
	done = xthread_event();
	started = xthread_event();
	if (done == XTERR || started == XTERR || done == started)
		fail("xthread_event");
	if (xthread_create(&cons, NULL, consumer, 0) != XTOK ||
	    xthread_create(&prod, NULL, producer, 1, N) != XTOK)
		fail("create");
	for (long i = 0; i < 3; i++) {
		xthread_t r;
		if (xthread_create(&r, NULL, reporter, 1, i) != XTOK)
			fail("create reporter");
	}
	return xthread_set(started) == XTOK ? 0 : 1;
}
