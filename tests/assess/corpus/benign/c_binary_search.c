#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int search(const int *v, int n, int key) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid] == key) return mid;
        if (v[mid] < key) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

int main(void) {
    int v[] = {1, 3, 5, 7, 9, 11, 13};
    printf("%d %d\n", search(v, 7, 9), search(v, 7, 4));
    return 0;
}
