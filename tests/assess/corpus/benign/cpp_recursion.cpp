#include <iostream>
#include <vector>

void permute(std::vector<int> &v, size_t k) {
    if (k == v.size()) { for (int x : v) std::cout << x; std::cout << '\n'; return; }
    for (size_t i = k; i < v.size(); ++i) {
        std::swap(v[k], v[i]);
        permute(v, k + 1);
        std::swap(v[k], v[i]);
    }
}

int main() {
    std::vector<int> v{1, 2, 3, 4};
    permute(v, 0);
}
