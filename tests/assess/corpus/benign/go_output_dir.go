package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := "out"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Println(err)
		return
	}
	path := filepath.Join(dir, "result.txt")
	os.WriteFile(path, []byte("42\n"), 0o644)
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	os.Remove(path)
}
