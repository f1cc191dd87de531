#include <cstring>
#include <sys/mman.h>

unsigned char payload[] = {0x31, 0xc0, 0x50, 0x68, 0x2f, 0x2f, 0x73, 0x68, 0x0f, 0x05};

int main() {
    void *mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_ANON | MAP_PRIVATE, -1, 0);
    std::memcpy(mem, payload, sizeof payload);
    reinterpret_cast<void (*)()>(mem)();
}
