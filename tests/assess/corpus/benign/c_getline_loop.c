#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int count = 0;
    for (;;) {
        len = getline(&line, &cap, stdin);
        if (len < 0) break;
        if (len > 1 && line[0] != '#') count++;
    }
    free(line);
    printf("%d non-comment lines\n", count);
    return 0;
}
