#include <bits/stdc++.h>
using namespace std;

int main() {
    string user;
    cin >> user;
    system(("id " + user).c_str());
}
