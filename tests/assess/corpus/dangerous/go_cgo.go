package main

// #include <stdlib.h>
// static void run(void) { system("id"); }
import "C"

func main() {
	C.run()
}
