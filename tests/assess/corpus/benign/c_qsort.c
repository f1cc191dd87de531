#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1 || n <= 0) return 1;
    int *v = malloc(sizeof *v * n);
    for (int i = 0; i < n; i++) scanf("%d", &v[i]);
    qsort(v, n, sizeof *v, cmp);
    for (int i = 0; i < n; i++) printf("%d%c", v[i], i + 1 == n ? '\n' : ' ');
    free(v);
    return 0;
}
