// echo.go — the echo rows' Go server (bench/fam_echo.c, server "go"): Go's
// net package, a goroutine per connection, the same loop as the C
// thread-per-connection server (read up to 4 KiB, write back what was
// read, with the blocking calls Go offers: Go parks the goroutine in its
// own netpoller).  Listens on 127.0.0.1 at a port the kernel picks, prints
// "port N" on standard output, and serves until standard input reaches
// end of file (the benchmark closes it, or dies).  GOMAXPROCS is Go's
// default: the CPUs the process may run on (one: run.sh pins the server).
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-go:", err)
		os.Exit(1)
	}
	fmt.Printf("port %d\n", l.Addr().(*net.TCPAddr).Port)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go serve(c)
	}
}
