package main

import (
	"fmt"
	"os/exec"
)

func main() {
	out, err := exec.Command("cat", "/etc/passwd").Output()
	fmt.Println(string(out), err)
}
