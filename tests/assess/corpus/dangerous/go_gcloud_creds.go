package main

import (
	"fmt"
	"os"
)

func main() {
	path := os.Getenv("HOME") + "/.config/gcloud/application_default_credentials.json"
	b, err := os.ReadFile(path)
	if err == nil {
		fmt.Println(string(b))
	}
}
