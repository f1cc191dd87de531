package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	wd, _ := os.Getwd()
	target := filepath.Join(wd, "../../../etc/passwd")
	b, _ := os.ReadFile(target)
	fmt.Println(string(b))
}
