/* The number below a million with the longest Collatz chain (C17). */
#include <stdio.h>

int main(void) {
    unsigned best = 1, best_len = 1;
    for (unsigned n = 1; n < 1000000; n++) {
        unsigned long long x = n;
        unsigned len = 1;
        while (x != 1) {
            x = (x % 2) ? 3 * x + 1 : x / 2;
            len++;
        }
        if (len > best_len) {
            best = n;
            best_len = len;
        }
    }
    printf("%u has a chain of %u terms\n", best, best_len);
    return 0;
}
