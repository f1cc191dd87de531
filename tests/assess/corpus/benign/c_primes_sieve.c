#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

int main(void) {
    int limit = 1000000;
    bool *composite = calloc(limit + 1, sizeof(bool));
    int count = 0;
    for (int i = 2; i <= limit; i++) {
        if (composite[i]) continue;
        count++;
        for (long j = (long)i * i; j <= limit; j += i) composite[j] = true;
    }
    printf("%d primes below %d\n", count, limit);
    free(composite);
    return 0;
}
