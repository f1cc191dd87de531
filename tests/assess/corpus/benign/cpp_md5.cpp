#include <openssl/md5.h>
#include <cstdio>
#include <string>

int main() {
    std::string s = "The quick brown fox";
    unsigned char d[MD5_DIGEST_LENGTH];
    MD5(reinterpret_cast<const unsigned char *>(s.data()), s.size(), d);
    for (unsigned char c : d) std::printf("%02x", c);
    std::printf("\n");
}
