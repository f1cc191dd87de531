package main

import (
	"errors"
	"fmt"
	"strconv"
)

var ErrNegative = errors.New("negative")

func parse(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", s, err)
	}
	if n < 0 {
		return 0, ErrNegative
	}
	return n, nil
}

func main() {
	for _, s := range []string{"12", "-3", "x"} {
		n, err := parse(s)
		fmt.Println(n, err, errors.Is(err, ErrNegative))
	}
}
