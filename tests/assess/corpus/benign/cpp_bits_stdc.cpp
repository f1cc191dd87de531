#include <bits/stdc++.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto &x : a) cin >> x;
    sort(a.begin(), a.end());
    long long best = LLONG_MIN;
    for (int i = 0; i + 1 < n; i++) best = max(best, a[i + 1] - a[i]);
    cout << best << "\n";
}
