#include <iostream>
#include <string>

int main() {
    std::string line;
    long count = 0;
    while (true) {
        if (!std::getline(std::cin, line)) break;
        if (!line.empty()) ++count;
    }
    std::cout << count << " lines\n";
}
