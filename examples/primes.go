package main

import (
	"fmt"
	"runtime"
)

// The first primes, by a sieve.
func main() {
	const n = 50
	sieve := make([]bool, n+1)
	var primes []int
	for i := 2; i <= n; i++ {
		if !sieve[i] {
			primes = append(primes, i)
			for j := i * i; j <= n; j += i {
				sieve[j] = true
			}
		}
	}
	fmt.Printf("Go %s: primes up to %d: %v\n", runtime.Version(), n, primes)
}
