// cxx_cancel_runs_destructors — pthread_cancel in C++ unwinds the target's
// stack as pthread_exit does: destructors of every live object run
// innermost first, interleaved with pthread_cleanup_push handlers in scope
// order; a catch (...) that rethrows sees the unwind and lets it go on
// (abi::__forced_unwind); the joiner gets PTHREAD_CANCELED.  Both a
// deferred request (blocked in a condition wait) and an asynchronous one
// (in a sched_yield loop, not a cancellation point) are checked.
#include <pthread.h>
#include <sched.h>
#include <cstdio>
#include <cstdlib>
#include <string>

static std::string trace;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int started;

struct Noter {
	char c;
	explicit Noter(char ch) : c(ch) {}
	~Noter() { trace += c; }
};

static void note(void *arg) { trace += static_cast<char>(reinterpret_cast<intptr_t>(arg)); }
static void unlock(void *) { pthread_mutex_unlock(&m); }

// GCC 12 reports infinite recursion here although the wait never returns.
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void wait_deep(int n)
{
	Noter d(static_cast<char>('0' + n));
	if (n > 0) {
		wait_deep(n - 1);
		return;
	}
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock, nullptr);
	started = 1;
	for (;;)
		pthread_cond_wait(&cv, &m);
	pthread_cleanup_pop(0);
}

static void *deferred_body(void *)
{
	Noter a('a');
	pthread_cleanup_push(note, reinterpret_cast<void *>('h'));
	Noter b('b');
	try {
		wait_deep(2);
	} catch (...) {
		trace += 'c';
		throw;
	}
	pthread_cleanup_pop(0);
	return nullptr;
}

// sched_yield is noexcept in glibc's header, so the compiler leaves no
// cleanup entry for a call to it and an unwind through that call would
// terminate (as with NPTL's asynchronous cancellation).  The same function
// under a name the compiler must assume can unwind:
extern "C" int yield_may_unwind() __asm__("sched_yield");

static void *async_body(void *)
{
	Noter a('A');
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, nullptr);
	Noter b('B');
	started = 1;
	for (;;)
		yield_may_unwind();
	return nullptr;
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "failed: %s (trace \"%s\")\n", what, trace.c_str());
		std::exit(1);
	}
}

static void run(void *(*body)(void *), const char *want)
{
	pthread_t t;
	void *ret = nullptr;
	trace.clear();
	started = 0;
	check(pthread_create(&t, nullptr, body, nullptr) == 0, "create");
	while (!started)
		sched_yield();
	sched_yield();
	check(pthread_cancel(t) == 0, "cancel");
	check(pthread_join(t, &ret) == 0, "join");
	check(ret == PTHREAD_CANCELED, "PTHREAD_CANCELED");
	check(trace == want, want);
}

int main()
{
	run(deferred_body, "012cbha");
	run(async_body, "BA");
	return 0;
}
