package main

import (
	"fmt"
	"time"
)

func main() {
	done := make(chan struct{})
	ticks := 0
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(done)
	}()
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			ticks++
		case <-done:
			fmt.Println("ticks > 0:", ticks > 0)
			return
		}
	}
}
