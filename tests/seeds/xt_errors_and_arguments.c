/* Every call's failures answer XTERR and never crash: handles that were
 * never made (NULL, small numbers, pointers to anything, all ones), handles
 * of ended threads, events that were never made, bad creation arguments
 * (narg outside 0..16, NULL function, priorities outside 1..99, a stack
 * address without a size), NULL result pointers, a second word sent to a
 * full mailbox.  xthread_create passes up to 16 word arguments whole
 * (negative ints, longs, pointers), honours a stack of the program's own
 * and a name, and gives each event a new number. */
#include "../check.h"
#include <limits.h>
#include <weft/xthreads.h>

static long got[XTHREAD_MAXARGS];
static int calls;

static void sixteen(long a, long b, long c, long d, long e, long f, long g, long h, long i,
		    long j, long k, long l, long m, long n, long o, long p)
{
	long v[] = { a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p };
	memcpy(got, v, sizeof v);
	calls++;
}

static int int_arg;
static void *ptr_arg;
static void ints(int a, char *p)
{
	int_arg = a;
	ptr_arg = p;
	calls++;
}

static void noop(void) { calls++; }

static char name_seen[32];
static void named(void)
{
	pthread_getname_np(pthread_self(), name_seen, sizeof name_seen);
	calls++;
}

static volatile char *stack_lo, *stack_hi;
static char *where;
static void on_own_stack(void)
{
	where = TEST_HERE();
	calls++;
}

static void bad_handles(void)
{
	long local;
	xthread_t bad[] = { NULL, (xthread_t)1, (xthread_t)&local, (xthread_t)(uintptr_t)-1,
			    (xthread_t)(uintptr_t)0x100000000ull, (xthread_t)(uintptr_t)0xffffffffull,
			    (xthread_t)(uintptr_t)0x0000000100100000ull };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ(xthread_destroy(bad[i]), XTERR);
		CHECK_EQ(xthread_yield(bad[i]), XTERR);
		CHECK_EQ(xthread_ping(bad[i]), XTERR);
		CHECK_EQ(xthread_send(bad[i], 1), XTERR);
		CHECK_EQ(xthread_getprio(bad[i]), XTERR);
		CHECK_EQ(xthread_chprio(bad[i], 20), XTERR);
	}
	/* an ended thread's handle */
	xthread_t t;
	CHECK_EQ(xthread_create(&t, NULL, noop, 0), XTOK);
	CHECK_EQ(xthread_ping(t), XTOK);
	CHECK_EQ(xthread_yield(t), XTOK);
	CHECK_EQ(xthread_ping(t), XTERR);
	CHECK_EQ(xthread_yield(t), XTERR);
	CHECK_EQ(xthread_send(t, 1), XTERR);
	CHECK_EQ(xthread_destroy(t), XTERR);
	CHECK_EQ(xthread_self(NULL), XTERR);
	CHECK_EQ(xthread_attr_init(NULL), XTERR);
}

static void bad_events(void)
{
	Xevent e = xthread_event(), f = xthread_event();
	CHECK(e > 0 && f > 0 && f != e);
	Xevent bad[] = { 0, -1, f + 1, f + 1000, LONG_MAX, LONG_MIN, 1L << 40 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK_EQ(xthread_wait(bad[i]), XTERR);
		CHECK_EQ(xthread_set(bad[i]), XTERR);
		CHECK_EQ(xthread_clear(bad[i]), XTERR);
	}
	CHECK_EQ(xthread_set(e), XTOK);
	CHECK_EQ(xthread_wait(e), XTOK);          /* occurred: no wait */
	CHECK_EQ(xthread_wait(e), XTOK);
}

static void bad_creation(void)
{
	xthread_t t = (xthread_t)&t;
	xthread_attr_t a;
	CHECK_EQ(xthread_attr_init(&a), XTOK);
	CHECK_EQ(a.prio, 0);
	CHECK_EQ(xthread_create(&t, NULL, noop, -1), XTERR);
	CHECK_EQ(xthread_create(&t, NULL, (void (*)(void))NULL, 0), XTERR);
	int prios[] = { -1, 100, 1000, INT_MIN };
	for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++) {
		a.prio = prios[i];
		CHECK_EQ(xthread_create(&t, &a, noop, 0), XTERR);
	}
	a.prio = 0;
	static char stack[64 * 1024] __attribute__((aligned(64)));
	a.stackaddr = stack;
	CHECK_EQ(xthread_create(&t, &a, noop, 0), XTERR);   /* no size */
	CHECK_EQ(calls, 0);
}

static void arguments(void)
{
	xthread_t t;
	calls = 0;
	CHECK_EQ(xthread_create(&t, NULL, sixteen, 16, -1, 2, -3, LONG_MAX, LONG_MIN, 6, 7, 8, 9, 10,
				11, 12, 13, 14, 15, (long)&calls),
		 XTOK);
	xthread_yield(t);
	CHECK_EQ(calls, 1);
	long want[] = { -1, 2, -3, LONG_MAX, LONG_MIN, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, (long)&calls };
	for (int i = 0; i < XTHREAD_MAXARGS; i++)
		CHECK_EQ(got[i], want[i]);

	/* fewer than declared: the rest are 0 */
	CHECK_EQ(xthread_create(&t, NULL, sixteen, 2, 5, 6), XTOK);
	xthread_yield(t);
	CHECK_EQ(got[0], 5);
	CHECK_EQ(got[1], 6);
	CHECK_EQ(got[2], 0);
	CHECK_EQ(got[15], 0);

	/* ints and pointers, as Xinu programs pass them */
	char buf[4];
	CHECK_EQ(xthread_create(&t, NULL, ints, 2, -42, buf), XTOK);
	xthread_yield(t);
	CHECK_EQ(int_arg, -42);
	CHECK(ptr_arg == buf);

	/* a name, and a stack of our own */
	xthread_attr_t a = XTHREAD_ATTR_INITIALIZER;
	a.name = "a-rather-long-thread-name";
	CHECK_EQ(xthread_create(&t, &a, named, 0), XTOK);
	xthread_yield(t);
	CHECK_EQ(strcmp(name_seen, "a-rather-long-t"), 0);
	static char stack[256 * 1024] __attribute__((aligned(4096)));
	a.name = NULL;
	a.stackaddr = stack;
	a.stacksize = sizeof stack;
	a.prio = 21;                              /* runs at once */
	CHECK_EQ(xthread_create(&t, &a, on_own_stack, 0), XTOK);
	CHECK(where > stack && where < stack + sizeof stack);
	(void)stack_lo;
	(void)stack_hi;
}

static void mailbox_full(void)
{
	xthread_t me;
	CHECK_EQ(xthread_self(&me), XTOK);
	CHECK_EQ(xthread_send(me, 11), XTOK);
	CHECK_EQ(xthread_send(me, 12), XTERR);    /* the first word wins */
	CHECK_EQ(xthread_receive(), 11);
	char c;
	CHECK_EQ(xthread_send(me, &c), XTOK);     /* a pointer, whole */
	CHECK(xthread_receive() == (XTCALL)&c);
	CHECK_EQ(xthread_send(me, -7), XTOK);
	CHECK_EQ(xthread_receive(), -7);
}

int main(void)
{
	bad_handles();
	bad_events();
	bad_creation();
	arguments();
	mailbox_full();
	return 0;
}
