package main

import "fmt"

func work(n int) int {
	for {
		n = (n*1103515245 + 12345) % 2147483648
	}
}

func main() {
	fmt.Println(work(1))
}
