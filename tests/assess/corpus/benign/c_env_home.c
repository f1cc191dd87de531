#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const char *lang = getenv("LANG");
    const char *threads = getenv("THREADS");
    int n = threads ? atoi(threads) : 2;
    printf("lang=%s threads=%d\n", lang ? lang : "C", n);
    return 0;
}
