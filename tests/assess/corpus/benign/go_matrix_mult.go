package main

import "fmt"

func multiply(a, b [][]float64) [][]float64 {
	n, m, p := len(a), len(b), len(b[0])
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, p)
		for k := 0; k < m; k++ {
			for j := 0; j < p; j++ {
				out[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return out
}

func main() {
	a := [][]float64{{1, 2}, {3, 4}}
	fmt.Println(multiply(a, a))
}
