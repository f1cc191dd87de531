package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	total := 0
	for scanner.Scan() {
		n, err := strconv.Atoi(scanner.Text())
		if err == nil {
			total += n
		}
	}
	fmt.Println(total)
}
