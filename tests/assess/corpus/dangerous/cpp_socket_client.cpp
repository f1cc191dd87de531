#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstring>

int main() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(8080);
    inet_pton(AF_INET, "203.0.113.7", &addr.sin_addr);
    connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
    const char *msg = "hello";
    send(fd, msg, std::strlen(msg), 0);
    close(fd);
}
