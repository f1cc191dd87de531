package main

import "fmt"

func main() {
	const n = 50_000_000
	data := make([]int32, n)
	for i := range data {
		data[i] = int32(i % 1000)
	}
	var sum int64
	for _, v := range data {
		sum += int64(v)
	}
	fmt.Println(sum)
}
