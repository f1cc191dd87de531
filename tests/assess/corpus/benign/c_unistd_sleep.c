#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

int main(void) {
    for (int i = 3; i > 0; i--) {
        printf("%d...\n", i);
        fflush(stdout);
        usleep(100000);
    }
    printf("pid %d done at %ld\n", getpid(), (long)time(NULL));
    return 0;
}
