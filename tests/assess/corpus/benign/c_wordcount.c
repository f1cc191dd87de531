#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

int main(int argc, char **argv) {
    FILE *f = fopen(argc > 1 ? argv[1] : "input.txt", "r");
    if (!f) { perror("open"); return 1; }
    int c, words = 0, lines = 0, in = 0;
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') lines++;
        if (isspace(c)) in = 0;
        else if (!in) { in = 1; words++; }
    }
    fclose(f);
    printf("%d lines, %d words\n", lines, words);
    return 0;
}
