#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>

int main(int argc, char **argv) {
    pid_t pid = atoi(argv[1]);
    ptrace(PTRACE_ATTACH, pid, NULL, NULL);
    long word = ptrace(PTRACE_PEEKDATA, pid, (void *)0x400000, NULL);
    printf("%lx\n", word);
    return 0;
}
