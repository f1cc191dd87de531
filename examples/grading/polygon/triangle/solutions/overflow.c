#include <stdio.h>

int main(void) {
    unsigned n;
    scanf("%u", &n);
    printf("%u\n", n * (n + 1) / 2);
}
