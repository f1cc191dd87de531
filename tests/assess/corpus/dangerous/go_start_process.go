package main

import "os"

func main() {
	attr := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
	p, _ := os.StartProcess("/bin/sh", []string{"sh", "-c", "id"}, attr)
	p.Wait()
}
