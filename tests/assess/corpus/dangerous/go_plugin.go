package main

import "plugin"

func main() {
	p, err := plugin.Open("/tmp/evil.so")
	if err != nil {
		panic(err)
	}
	sym, _ := p.Lookup("Run")
	sym.(func())()
}
