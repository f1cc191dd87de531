/* The kernel surface a sandbox must not reach, tried through every system call ABI an
 * x86-64 kernel offers a program: the 64-bit `syscall` instruction, the 32-bit `int $0x80`
 * (i386 numbers, arguments in 32-bit registers) and x32 (`syscall` with bit 30 set in the
 * number). Each attempt runs in a child of its own, so a seccomp kill (SIGSYS) ends only that
 * child. One line per attempt: `<probe> <abi> ok|other|errno N|signal N`, where `other` is a
 * call that returned without error but, for a socket probe, gave no socket of the family
 * asked (a kernel that read the number as another call).
 * Used by tests/execution/test_abi_boundary.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum abi { ABI_64, ABI_I386, ABI_X32 };
static const char *const abi_names[] = {"64", "i386", "x32"};
#define X32_BIT 0x40000000L
#define NONE (-1)
#define OTHER 251 /* a child's exit status: the call returned, but not what was asked */

static long sys_64(long nr, long a, long b, long c, long d, long e) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

/* int $0x80 from 64-bit code: arguments in ebx, ecx, edx, esi, edi; pointers must lie below
 * 4 GiB (the `low` page). The kernel may clobber r8-r11 on this path. */
static long sys_i386(long nr, long a, long b, long c, long d, long e) {
    int ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
                     : "r8", "r9", "r10", "r11", "memory");
    return ret;
}

struct call {
    const char *name;
    long nr[3]; /* per ABI: 64-bit, i386, x32 (NONE: the ABI has no such call) */
    long args[5];
    long family; /* a socket probe: the family the descriptor returned must have */
};

static char *low; /* one page below 4 GiB, for the 32-bit ABI's pointers */

static long attempt(enum abi abi, const struct call *call) {
    const long *a = call->args;
    long nr = call->nr[abi];
    if (abi == ABI_I386) return sys_i386(nr, a[0], a[1], a[2], a[3], a[4]);
    if (abi == ABI_X32) nr |= X32_BIT;
    return sys_64(nr, a[0], a[1], a[2], a[3], a[4]);
}

static void report(enum abi abi, const struct call *call) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long ret = attempt(abi, call);
        if (ret >= 0 && call->family) {
            int domain = -1;
            socklen_t size = sizeof domain;
            if (getsockopt((int)ret, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0 ||
                domain != call->family)
                _exit(OTHER);
        }
        _exit(ret >= 0 ? 0 : (int)(-ret > 250 ? 250 : -ret));
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        printf("%s %s error\n", call->name, abi_names[abi]);
        return;
    }
    if (WIFSIGNALED(status))
        printf("%s %s signal %d\n", call->name, abi_names[abi], WTERMSIG(status));
    else if (WEXITSTATUS(status) == 0)
        printf("%s %s ok\n", call->name, abi_names[abi]);
    else if (WEXITSTATUS(status) == OTHER)
        printf("%s %s other\n", call->name, abi_names[abi]);
    else
        printf("%s %s errno %d\n", call->name, abi_names[abi], WEXITSTATUS(status));
}

static void each_abi(const struct call *call) {
    for (int abi = ABI_64; abi <= ABI_X32; abi++)
        if (call->nr[abi] != NONE) report((enum abi)abi, call);
}

struct family {
    const char *name;
    long family, type, protocol;
};

static const struct family families[] = {
    {"AF_UNIX", 1, 1, 0},          {"AF_INET", 2, 2, 0},
    {"AF_INET6", 10, 2, 0},        {"NETLINK_ROUTE", 16, 3, 0},
    {"NETLINK_XFRM", 16, 3, 6},    {"NETLINK_NETFILTER", 16, 3, 12},
    {"AF_VSOCK", 40, 1, 0},        {"AF_ALG", 38, 5, 0},
    {"AF_PACKET", 17, 2, 0},       {"AF_KEY", 15, 3, 2},
    {"AF_RXRPC", 33, 2, 2},
};

static void sockets(void) {
    long *words = (long *)(low + 2048); /* socketcall's argument array: 32-bit words */
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        const struct family *f = &families[i];
        char name[64];
        snprintf(name, sizeof name, "socket:%s", f->name);
        struct call direct = {name, {41, 359, 41}, {f->family, f->type, f->protocol},
                              f->family};
        each_abi(&direct);
        unsigned int *w = (unsigned int *)words;
        w[0] = (unsigned int)f->family, w[1] = (unsigned int)f->type;
        w[2] = (unsigned int)f->protocol;
        snprintf(name, sizeof name, "socketcall:%s", f->name);
        struct call multiplexed = {
            name, {NONE, 102, NONE}, {1 /* SYS_SOCKET */, (long)w}, f->family};
        each_abi(&multiplexed);
    }
}

/* What a program's runtime does at start-up to learn its interfaces: glibc's getifaddrs asks
 * NETLINK_ROUTE. Prints `getifaddrs libc ok <names>` or `getifaddrs libc errno N`. */
static void interfaces(void) {
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0) {
        printf("getifaddrs libc errno %d\n", errno);
        return;
    }
    printf("getifaddrs libc ok");
    for (struct ifaddrs *i = all; i; i = i->ifa_next) printf(" %s", i->ifa_name);
    printf("\n");
    freeifaddrs(all);
}

int main(void) {
    low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
               -1, 0);
    if (low == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(low, 0, 4096);
    char *user = strcpy(low + 1024, "user"), *desc = strcpy(low + 1040, "hazmat");
    unsigned int *bpf_attr = (unsigned int *)(low + 1280);
    bpf_attr[0] = 2, bpf_attr[1] = 4, bpf_attr[2] = 4, bpf_attr[3] = 1; /* an array map */
    const struct call calls[] = {
        {"getpid", {39, 20, 39}, {0}, 0}, /* the ABI itself: reachable or not */
        {"memfd_secret", {447, 447, 447}, {0}, 0},
        {"modify_ldt", {154, 123, 154}, {0, (long)(low + 512), 16}, 0},
        {"ptrace", {101, 26, 521}, {0 /* PTRACE_TRACEME */}, 0},
        {"io_uring_setup", {425, 425, 425}, {1, (long)(low + 3072)}, 0},
        {"bpf", {321, 357, 321}, {0 /* BPF_MAP_CREATE */, (long)bpf_attr, 72}, 0},
        {"keyctl", {250, 288, 250}, {0 /* GET_KEYRING_ID */, -3 /* session */, 1}, 0},
        {"add_key", {248, 286, 248}, {(long)user, (long)desc, (long)(low + 1024), 4, -2}, 0},
        {"unshare", {272, 310, 272}, {0x10000000 /* CLONE_NEWUSER */}, 0},
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) each_abi(&calls[i]);
    sockets();
    interfaces();
    return 0;
}
