// A C++ program against <weft/xthreads.h>: its xmain has C++ linkage (as a
// C++ programmer writes it, without extern "C") and still is the entry
// point; thread functions of any C++ signature are accepted; events,
// messages and directed yield behave as in C.  It reports by exit status.
#include <weft/xthreads.h>

#include <cstdio>
#include <cstdlib>

static xthread_t main_thread;
static Xevent ready;
static long total;

static int adder(int a, long b, const char *tag)
{
	total += a + b + (tag[0] == 'x');
	xthread_wait(ready);
	xthread_send(main_thread, total);
	return 0;
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "FAIL: %s\n", what);
		std::exit(1);
	}
}

int xmain(int argc, char **argv)
{
	check(argc >= 1 && argv[0] != nullptr, "xmain's arguments");
	check(xthread_self(&main_thread) == XTOK, "self");
	ready = xthread_event();
	xthread_t t;
	check(xthread_create(&t, nullptr, adder, 3, -2, 40L, "x") == XTOK, "create");
	check(xthread_yield(t) == XTOK, "yield");
	check(total == 39, "arguments");
	check(xthread_set(ready) == XTOK, "set");
	check(xthread_receive() == 39, "receive");
	check(xthread_ping(t) == XTERR || (xthread_yield(t), xthread_ping(t) == XTERR), "ended");
	std::exit(0);
}
