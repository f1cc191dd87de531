#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    long long sum = 0, x;
    int n = 0;
    while (scanf("%lld", &x) == 1) {
        sum += x;
        n++;
    }
    printf("%d numbers, sum %lld\n", n, sum);
    return 0;
}
