#include <boost/process.hpp>
#include <iostream>

namespace bp = boost::process;

int main() {
    bp::ipstream out;
    bp::child c("/bin/sh", "-c", "uname -a", bp::std_out > out);
    std::string line;
    while (std::getline(out, line)) std::cout << line << "\n";
    c.wait();
}
