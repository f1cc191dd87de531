package main

import "fmt"

func hanoi(n int, from, to, via string, moves *int) {
	if n == 0 {
		return
	}
	hanoi(n-1, from, via, to, moves)
	*moves++
	hanoi(n-1, via, to, from, moves)
}

func main() {
	moves := 0
	hanoi(20, "a", "c", "b", &moves)
	fmt.Println(moves)
}
