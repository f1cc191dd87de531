package main

import (
	"encoding/json"
	"fmt"
)

type Point struct {
	X, Y float64
}

type Polygon struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

func main() {
	p := Polygon{Name: "tri", Points: []Point{{0, 0}, {1, 0}, {0, 1}}}
	data, _ := json.Marshal(p)
	fmt.Println(string(data))
}
