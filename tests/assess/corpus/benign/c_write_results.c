#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    FILE *out = fopen("results.csv", "w");
    if (!out) return 1;
    fprintf(out, "n,square\n");
    for (int n = 1; n <= 20; n++) fprintf(out, "%d,%d\n", n, n * n);
    fclose(out);
    FILE *tmp = fopen("/tmp/scratch.txt", "w");
    fputs("scratch\n", tmp);
    fclose(tmp);
    remove("/tmp/scratch.txt");
    return 0;
}
