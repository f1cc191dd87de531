#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    while (1) {
        char *p = malloc(1 << 20);
        memset(p, 1, 1 << 20);
    }
}
