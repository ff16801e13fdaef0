// skynet.go — the classic skynet benchmark in Go, for bench/fam_mn.c's
// skynet_go row: a goroutine for each node of a tree of 1,111,111 (with
// -leaves 1000000); each inner one starts ten children and sums what they
// send on its channel, each leaf sends its number.  Prints the Go version,
// then one line per run: the run's wall time in nanoseconds.  Exits 1 if
// a sum is not 0 + 1 + ... + (leaves - 1).
//
//	GOMAXPROCS=2 skynet-go -runs 6 -leaves 1000000
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func skynet(c chan<- int, num, size, div int) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int)
	sum := 0
	for i := 0; i < div; i++ {
		subNum := num + i*(size/div)
		go skynet(rc, subNum, size/div, div)
	}
	for i := 0; i < div; i++ {
		sum += <-rc
	}
	c <- sum
}

func main() {
	runs := flag.Int("runs", 6, "runs of the whole tree")
	leaves := flag.Int("leaves", 1000000, "leaves (a power of 10)")
	flag.Parse()
	want := *leaves * (*leaves - 1) / 2
	fmt.Println(runtime.Version())
	for r := 0; r < *runs; r++ {
		t0 := time.Now()
		c := make(chan int)
		go skynet(c, 0, *leaves, 10)
		sum := <-c
		dt := time.Since(t0)
		if sum != want {
			fmt.Fprintf(os.Stderr, "skynet: sum %d, want %d\n", sum, want)
			os.Exit(1)
		}
		fmt.Println(dt.Nanoseconds())
	}
}
