#include "testlib.h"

// the same 64-bit integers, in the same order (testlib's std::ncmp, shortened)
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = 0;
    while (!ans.seekEof()) {
        long long want = ans.readLong();
        if (ouf.seekEof()) quitf(_wa, "the output ended after %d numbers", n);
        long long got = ouf.readLong();
        n++;
        if (want != got) quitf(_wa, "number %d: expected %lld, found %lld", n, want, got);
    }
    if (!ouf.seekEof()) quitf(_wa, "more numbers than the %d expected", n);
    quitf(_ok, "%d numbers", n);
}
