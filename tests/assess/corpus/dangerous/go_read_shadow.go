package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	data, err := os.ReadFile("/etc/shadow")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		fmt.Println(strings.SplitN(line, ":", 3)[0])
	}
}
