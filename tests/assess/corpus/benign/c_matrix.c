#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define N 64

static double a[N][N], b[N][N], c[N][N];

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) { a[i][j] = i + j; b[i][j] = i - j; }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++)
            for (int j = 0; j < N; j++) c[i][j] += a[i][k] * b[k][j];
    printf("%f\n", c[N - 1][N - 1]);
    return 0;
}
