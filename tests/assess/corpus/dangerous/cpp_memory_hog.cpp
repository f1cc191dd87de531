#include <vector>

int main() {
    std::vector<std::vector<char>> keep;
    for (;;) {
        keep.emplace_back(1 << 20, 'x');
    }
}
