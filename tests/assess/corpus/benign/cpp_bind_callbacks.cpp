#include <functional>
#include <iostream>
#include <vector>

int add(int a, int b) { return a + b; }

int main() {
    std::vector<std::function<int(int)>> fs;
    for (int k = 1; k <= 3; ++k) fs.push_back(std::bind(add, std::placeholders::_1, k));
    for (auto &f : fs) std::cout << f(10) << ' ';
    std::cout << '\n';
}
