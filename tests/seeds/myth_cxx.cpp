// A C++ program against <weft/myth.h>: forks a lambda-free C++ function
// and one of another signature, joins their values, locks, yields.  The C
// type name `mutex` is not declared in C++ (std::mutex may be in scope).
#include <weft/myth.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace std;   // `mutex` must still mean std::mutex

static th_mutex_t m = TH_MUTEX_INITIALIZER;
static long counter;

static void *bump(void *arg)
{
	for (int i = 0; i < 100; i++) {
		th_mutex_lock(&m);
		counter++;
		th_yield();
		th_mutex_unlock(&m);
	}
	return arg;
}

static long twice(long v) { return 2 * v; }

int main()
{
	mutex std_mutex;   // std::mutex
	std_mutex.lock();
	std_mutex.unlock();
	th_thread_t a = th_fork(bump, reinterpret_cast<void *>(1));
	th_thread_t b = th_fork(bump, reinterpret_cast<void *>(2));
	th_thread_t c = th_fork(twice, reinterpret_cast<void *>(21));
	if (th_join(a) != reinterpret_cast<void *>(1) || th_join(b) != reinterpret_cast<void *>(2) ||
	    th_join(c) != reinterpret_cast<void *>(42) || counter != 200) {
		std::fprintf(stderr, "FAIL: counter %ld\n", counter);
		return 1;
	}
	return 0;
}
