package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

func main() {
	counts := map[string]int{}
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		for _, w := range strings.Fields(strings.ToLower(scanner.Text())) {
			counts[w]++
		}
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool { return counts[words[i]] > counts[words[j]] })
	for _, w := range words {
		fmt.Println(w, counts[w])
	}
}
