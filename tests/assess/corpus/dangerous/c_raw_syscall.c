#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(void) {
    long r = syscall(SYS_unshare, 0x10000000);
    printf("%ld\n", r);
    return 0;
}
