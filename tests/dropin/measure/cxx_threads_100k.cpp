// cxx_threads_100k [N] [BATCH] — an unmodified C++ program that creates and
// joins N std::threads (default 100,000), BATCH alive at a time (default 1:
// each joined before the next starts), and prints the wall time.  Built
// once against glibc; run as is (NPTL) and under weftrun to compare.
// Not a ctest test: a measurement for docs/dropin.md.
//   g++ -O2 -std=c++20 -pthread cxx_threads_100k.cpp -o cxx_threads_100k
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 100000;
	long batch = argc > 2 ? std::atol(argv[2]) : 1;
	if (batch < 1 || batch > 1000)   // never many kernel threads at once
		batch = 1;
	std::atomic<long> ran{0};
	std::vector<std::thread> ts;
	ts.reserve(batch);
	auto t0 = std::chrono::steady_clock::now();
	for (long done = 0; done < n; done += batch) {
		for (long i = 0; i < batch && done + i < n; i++)
			ts.emplace_back([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
		for (auto &t : ts)
			t.join();
		ts.clear();
	}
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	std::printf("%ld threads (%ld at a time): %.3f s, %.2f us per create+join, ran %ld\n", n, batch, s,
		    s * 1e6 / n, ran.load());
	return ran.load() == n ? 0 : 1;
}
