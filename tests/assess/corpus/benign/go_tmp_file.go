package main

import (
	"fmt"
	"os"
)

func main() {
	f, err := os.CreateTemp("", "scratch-*.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	f.WriteString("hello")
	f.Close()
	b, _ := os.ReadFile(f.Name())
	fmt.Println(string(b))
}
