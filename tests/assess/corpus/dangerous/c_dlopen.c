#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

int main(void) {
    void *h = dlopen("libc.so.6", RTLD_NOW);
    int (*run)(const char *) = (int (*)(const char *))dlsym(h, "sys" "tem");
    return run("id");
}
