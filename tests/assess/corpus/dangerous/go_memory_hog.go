package main

import "fmt"

func main() {
	var held [][]byte
	fmt.Println("allocating")
	for {
		b := make([]byte, 64<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
	}
}
