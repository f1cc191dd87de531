package main

import (
	"fmt"
	"os"
)

func main() {
	data := []byte("x,y\n1,2\n3,4\n")
	if err := os.WriteFile("out.csv", data, 0o644); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", len(data), "bytes")
}
