package main

import "fmt"

func main() {
	limit := 100
	composite := make([]bool, limit+1)
	for i := 2; i*i <= limit; i++ {
		if !composite[i] {
			for j := i * i; j <= limit; j += i {
				composite[j] = true
			}
		}
	}
	for i := 2; i <= limit; i++ {
		if !composite[i] {
			fmt.Print(i, " ")
		}
	}
	fmt.Println()
}
