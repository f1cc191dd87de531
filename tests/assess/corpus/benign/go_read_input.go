package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	name := "input.txt"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	f, err := os.Open(name)
	if err != nil {
		fmt.Println("no input:", err)
		return
	}
	defer f.Close()
	lines := 0
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		lines++
	}
	fmt.Println("lines:", lines)
}
