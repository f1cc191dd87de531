#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

int main() {
    std::unordered_map<std::string, std::string> cfg;
    std::string line;
    while (std::getline(std::cin, line)) {
        auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        cfg[line.substr(0, eq)] = line.substr(eq + 1);
    }
    std::ostringstream out;
    out << "{";
    bool first = true;
    for (auto &[k, v] : cfg) { out << (first ? "" : ",") << '"' << k << "\":\"" << v << '"'; first = false; }
    out << "}";
    std::cout << out.str() << std::endl;
}
