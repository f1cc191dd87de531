package main

import (
	"fmt"
	"math"
)

func newton(x float64) float64 {
	z := 1.0
	for i := 0; i < 20; i++ {
		z -= (z*z - x) / (2 * z)
	}
	return z
}

func main() {
	for _, x := range []float64{2, 10, 144} {
		fmt.Printf("%.6f %.6f\n", newton(x), math.Sqrt(x))
	}
}
