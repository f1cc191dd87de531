#include <array>
#include <iostream>

using Mat = std::array<std::array<double, 3>, 3>;

Mat mul(const Mat &a, const Mat &b) {
    Mat c{};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k) c[i][j] += a[i][k] * b[k][j];
    return c;
}

int main() {
    Mat a{{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}};
    Mat c = mul(a, a);
    for (auto &row : c) { for (double v : row) std::cout << v << ' '; std::cout << '\n'; }
}
