#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>
#include <algorithm>

int main() {
    std::ifstream in("input.txt");
    std::map<std::string, int> freq;
    std::string w;
    while (in >> w) ++freq[w];
    std::vector<std::pair<int, std::string>> top;
    for (auto &[word, n] : freq) top.emplace_back(n, word);
    std::sort(top.rbegin(), top.rend());
    for (size_t i = 0; i < top.size() && i < 10; ++i)
        std::cout << top[i].second << " " << top[i].first << "\n";
}
