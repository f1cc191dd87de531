package main

import (
	"fmt"
	"unsafe"
)

func main() {
	x := [4]int{1, 2, 3, 4}
	p := unsafe.Pointer(&x[0])
	far := (*int)(unsafe.Pointer(uintptr(p) + 1<<20))
	fmt.Println(*far)
}
