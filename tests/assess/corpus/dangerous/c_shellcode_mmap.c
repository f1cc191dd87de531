#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static unsigned char code[] = {0x48, 0x31, 0xc0, 0xb0, 0x3c, 0x0f, 0x05};

int main(void) {
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(m, code, sizeof code);
    ((void (*)(void))m)();
    return 0;
}
