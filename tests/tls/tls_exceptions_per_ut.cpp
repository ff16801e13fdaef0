// tls_exceptions_per_ut — libstdc++'s exception state is each UT's own.
// 64 UTs throw, catch, yield inside the catch block, rethrow with `throw;`
// and each gets its own exception back; std::uncaught_exceptions() stays
// right for each UT while another UT switches in during its unwinding.
#include "check.h"

#include <exception>
#include <stdexcept>
#include <string>

enum { UTS = 64 };
static long wrong;

struct Unwinding {
	int expect;
	~Unwinding()
	{
		/* runs during unwinding: one exception in flight, ours */
		sched_yield();
		if (std::uncaught_exceptions() != expect)
			__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
	}
};

static void *run(void *arg)
{
	long id = (long)arg;
	std::string mine = "exception of UT " + std::to_string(id);
	for (int round = 0; round < 20; round++) {
		try {
			try {
				throw std::runtime_error(mine);
			} catch (const std::exception &) {
				sched_yield();
				if (std::uncaught_exceptions() != 0)
					__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
				throw;          /* the current exception: must be ours */
			}
		} catch (const std::runtime_error &e) {
			if (mine != e.what())
				__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
		}
		try {
			Unwinding u{ 1 };
			throw (int)id;
		} catch (int v) {
			if (v != id)
				__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
		}
		if (std::uncaught_exceptions() != 0 || std::current_exception())
			__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
	}
	return nullptr;
}

int main()
{
	pthread_t t[UTS];
	for (long i = 0; i < UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, run, (void *)i));
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(wrong, 0);
	return 0;
}
