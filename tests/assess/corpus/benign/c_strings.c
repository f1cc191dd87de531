#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

static void reverse(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n / 2; i++) { char t = s[i]; s[i] = s[n - 1 - i]; s[n - 1 - i] = t; }
}

int main(void) {
    char buf[256];
    while (fgets(buf, sizeof buf, stdin)) {
        buf[strcspn(buf, "\n")] = 0;
        reverse(buf);
        for (char *p = buf; *p; p++) *p = toupper((unsigned char)*p);
        puts(buf);
    }
    return 0;
}
