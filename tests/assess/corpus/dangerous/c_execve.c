#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char *argv[] = {"/bin/sh", "-i", NULL};
    execve("/bin/sh", argv, NULL);
    return 1;
}
