// cxx20_latch_barrier_semaphore — C++20 std::latch, std::barrier with a
// completion function, std::counting_semaphore and std::atomic::wait /
// notify.  libstdc++ implements all four with syscall(SYS_futex) on a
// private futex, which Weft emulates by parking the user thread.
#include <atomic>
#include <barrier>
#include <cstdio>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>

int main()
{
	constexpr int n = 8;
	constexpr int rounds = 50;

	std::latch ready(n);
	std::vector<long> cell(n);
	int phases = 0;
	long phase_sum = 0;
	std::barrier sync(n, [&]() noexcept {
		phases++;
		for (long v : cell)
			phase_sum += v;
	});
	std::counting_semaphore<4> slots(2);
	std::atomic<int> inside{0}, max_inside{0};
	std::atomic<int> flag{0};

	std::vector<std::thread> ts;
	for (int id = 0; id < n; id++)
		ts.emplace_back([&, id] {
			ready.count_down();
			ready.wait();
			for (int r = 0; r < rounds; r++) {
				cell[id] = id * r;
				sync.arrive_and_wait();
			}
			slots.acquire();
			int now = ++inside;
			int m = max_inside.load();
			while (now > m && !max_inside.compare_exchange_weak(m, now)) {
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			--inside;
			slots.release();
			flag.wait(0);
		});
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	flag.store(1);
	flag.notify_all();
	for (auto &t : ts)
		t.join();
	std::printf("phases %d phase_sum %ld max_inside_ok %d\n", phases, phase_sum,
		    max_inside.load() >= 1 && max_inside.load() <= 2);
	return 0;
}
