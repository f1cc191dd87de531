package main

import (
	"encoding/json"
	"fmt"
	"os"
)

type Config struct {
	Name    string `json:"name"`
	Workers int    `json:"workers"`
}

func main() {
	cfg := Config{Name: "default", Workers: 2}
	if b, err := os.ReadFile("config.json"); err == nil {
		json.Unmarshal(b, &cfg)
	}
	fmt.Printf("%+v\n", cfg)
}
