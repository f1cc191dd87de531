#include <stdio.h>

int main(void) {
    long ret;
    __asm__ volatile ("mov $39, %%rax\n\tsyscall" : "=a"(ret) :: "rcx", "r11", "memory");
    printf("%ld\n", ret);
    return 0;
}
