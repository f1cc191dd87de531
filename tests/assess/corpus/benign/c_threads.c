#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

static long partial[4];

static void *work(void *arg) {
    long id = (long)arg, s = 0;
    for (long i = id; i < 1000000; i += 4) s += i;
    partial[id] = s;
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    long total = 0;
    for (int i = 0; i < 4; i++) { pthread_join(t[i], NULL); total += partial[i]; }
    printf("%ld\n", total);
    return 0;
}
