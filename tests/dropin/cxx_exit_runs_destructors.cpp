// cxx_exit_runs_destructors — pthread_exit in C++ unwinds the UT's stack:
// destructors of every live object run innermost first, pthread_cleanup_push
// handlers (a class in C++) interleave with them in scope order, a
// catch (...) that rethrows lets the exit go on, and the exit value arrives.
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static std::string trace;

struct Noter {
	char c;
	explicit Noter(char ch) : c(ch) {}
	~Noter() { trace += c; }
};

static void note(void *arg) { trace += static_cast<char>(reinterpret_cast<intptr_t>(arg)); }

// GCC 12 reports infinite recursion here although pthread_exit ends it.
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void deep(int n)
{
	Noter d('0' + static_cast<char>(n));
	if (n > 0)
		deep(n - 1);
	else
		pthread_exit(reinterpret_cast<void *>(99));
}

static void *body(void *)
{
	Noter a('a');
	pthread_cleanup_push(note, reinterpret_cast<void *>('h'));
	Noter b('b');
	try {
		deep(2);
	} catch (...) {
		trace += 'c';
		throw;
	}
	pthread_cleanup_pop(0);
	return nullptr;
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "failed: %s (trace \"%s\")\n", what, trace.c_str());
		std::exit(1);
	}
}

int main()
{
	pthread_t t;
	void *ret = nullptr;
	check(pthread_create(&t, nullptr, body, nullptr) == 0, "create");
	check(pthread_join(t, &ret) == 0, "join");
	check(ret == reinterpret_cast<void *>(99), "exit value");
	check(trace == "012cbha", "destructor and handler order");
	return 0;
}
