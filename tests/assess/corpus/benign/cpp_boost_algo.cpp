#include <boost/algorithm/string.hpp>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::vector<std::string> parts;
        boost::split(parts, line, boost::is_any_of(","));
        for (auto &p : parts) boost::trim(p);
        std::cout << boost::join(parts, "|") << "\n";
    }
}
