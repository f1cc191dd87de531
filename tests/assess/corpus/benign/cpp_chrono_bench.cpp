#include <chrono>
#include <iostream>
#include <numeric>
#include <vector>

int main() {
    std::vector<int> v(10'000'000);
    std::iota(v.begin(), v.end(), 0);
    auto t0 = std::chrono::steady_clock::now();
    long long s = std::accumulate(v.begin(), v.end(), 0LL);
    auto t1 = std::chrono::steady_clock::now();
    std::cout << s << " in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count() << " ms\n";
}
