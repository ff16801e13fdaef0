// cxx_async_fanout — std::async fan-out: 64 tasks launched with
// std::launch::async, each summing squares of its range, gathered through
// std::future; a std::promise / shared_future pair starts them together.
// The futures wait with the futex system call (libstdc++), which Weft
// emulates.
#include <cstdio>
#include <future>
#include <vector>

int main()
{
	std::promise<void> go;
	std::shared_future<void> start = go.get_future().share();
	std::vector<std::future<unsigned long long>> parts;
	for (int i = 0; i < 64; i++)
		parts.push_back(std::async(std::launch::async, [start, i] {
			start.wait();
			unsigned long long s = 0;
			for (unsigned long long k = i * 1000ull; k < (i + 1) * 1000ull; k++)
				s += k * k;
			return s;
		}));
	go.set_value();
	unsigned long long total = 0;
	for (int i = 0; i < 64; i++) {
		unsigned long long s = parts[i].get();
		if (i % 16 == 0)
			std::printf("part %d %llu\n", i, s);
		total += s;
	}
	unsigned long long n = 64000;
	std::printf("total %llu expected %llu\n", total, (n - 1) * n * (2 * n - 1) / 6);
	return 0;
}
