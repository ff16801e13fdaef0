// C++20 jthread, stop_token and condition_variable_any: workers wait until
// asked to stop.  libstdc++ takes single-threaded shortcuts while glibc's
// __libc_single_threaded is 1, so a thread library must clear it when the
// second thread starts (under Weft this program used to deadlock).
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

int main()
{
	std::mutex m;
	std::condition_variable_any cv;
	int waiting = 0, stopped = 0;
	std::vector<std::jthread> workers;
	for (int i = 0; i < 8; i++)
		workers.emplace_back([&](std::stop_token st) {
			std::unique_lock lk(m);
			waiting++;
			bool woke = cv.wait(lk, st, [] { return false; });
			if (!woke && st.stop_requested())
				stopped++;
		});
	for (;;) {
		{
			std::lock_guard g(m);
			if (waiting == 8)
				break;
		}
		std::this_thread::yield();
	}
	for (auto &w : workers)
		w.request_stop();
	workers.clear();
	std::printf("%d workers waited, %d saw their stop request\n", waiting, stopped);
	return stopped == 8 ? 0 : 1;
}
