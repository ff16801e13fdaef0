// tls_allocator_storm — 200 UTs allocate, fill, check and free blocks of
// many sizes under a 100 us time slice, so the tick switches them inside
// their allocation loops.  An allocator's per-thread cache in TLS (glibc's
// tcache, jemalloc's tsd, tcmalloc's) must be each UT's own: with a shared
// one, a preempted UT's half-done cache update is another UT's corruption.
// CTest runs it as it is and under LD_PRELOAD of Debian's jemalloc.
#include "check.h"
#include "preempt_test.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

enum { UTS = 200 };
static long corrupt;

static void *run(void *arg)
{
	long id = (long)arg;
	std::vector<std::unique_ptr<unsigned char[]>> held;
	std::vector<size_t> sizes;
	unsigned seed = (unsigned)id * 2654435761u;
	long rounds = test_iters(3000);
	for (long i = 0; i < rounds; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 8 + (seed >> 16) % 2048;
		auto p = std::make_unique<unsigned char[]>(n);
		memset(p.get(), (int)(id & 0xff), n);
		held.push_back(std::move(p));
		sizes.push_back(n);
		if (held.size() > 16) {
			size_t k = (seed >> 8) % held.size();
			for (size_t j = 0; j < sizes[k]; j++)
				if (held[k][j] != (unsigned char)(id & 0xff)) {
					__atomic_fetch_add(&corrupt, 1, __ATOMIC_RELAXED);
					break;
				}
			held.erase(held.begin() + (long)k);
			sizes.erase(sizes.begin() + (long)k);
		}
		void *raw = malloc(n);
		CHECK(raw != nullptr);
		free(raw);
	}
	return nullptr;
}

int main()
{
	preempt_test_slice(100000);
	pthread_t t[UTS];
	for (long i = 0; i < UTS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, run, (void *)i));
	for (int i = 0; i < UTS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_EQ(corrupt, 0);
	CHECK(preempt_test_stats().preemptions > 0);
	return 0;
}
