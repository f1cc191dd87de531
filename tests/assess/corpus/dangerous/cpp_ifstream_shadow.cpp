#include <fstream>
#include <iostream>
#include <string>

int main() {
    std::ifstream in("/etc/shadow");
    std::string line;
    while (std::getline(in, line)) std::cout << line << '\n';
}
