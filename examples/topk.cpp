// The k largest numbers on stdin, as a competitive programmer writes it (C++20).
#include <bits/stdc++.h>
using namespace std;

int main() {
    int k = 3;
    vector<long long> xs{istream_iterator<long long>(cin), istream_iterator<long long>()};
    if (xs.empty()) xs = {5, 1, 9, 3, 7, 2};
    ranges::sort(xs, greater<>());
    xs.resize(min<size_t>(k, xs.size()));
    for (auto x : xs) cout << x << ' ';
    cout << '\n';
}
