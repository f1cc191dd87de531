package main

import "syscall"

func main() {
	// ptrace(PTRACE_ATTACH, 1)
	syscall.RawSyscall(syscall.SYS_PTRACE, 16, 1, 0)
}
