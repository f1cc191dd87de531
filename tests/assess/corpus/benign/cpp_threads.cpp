#include <atomic>
#include <iostream>
#include <thread>
#include <vector>

int main() {
    std::atomic<long> total{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
        pool.emplace_back([&total, t] {
            for (int i = t; i < 1000000; i += 4) total += i;
        });
    for (auto &th : pool) th.join();
    std::cout << total << std::endl;
}
