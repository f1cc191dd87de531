#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/md5.h>

int main(void) {
    const char *msg = "hello";
    unsigned char digest[MD5_DIGEST_LENGTH];
    MD5((const unsigned char *)msg, strlen(msg), digest);
    for (int i = 0; i < MD5_DIGEST_LENGTH; i++) printf("%02x", digest[i]);
    printf("\n");
    return 0;
}
