// SPDX-License-Identifier: GPL-2.0

package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

// runEcho: a goroutine per connection, plain blocking-style Read/Write
// (the Go runtime's netpoller parks the goroutine underneath).
func runEcho(args []string) {
	fs := flag.NewFlagSet("echo", flag.ExitOnError)
	port := fs.Int("port", 0, "port (0: any free port)")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "peer-go: error: listen: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("peer-go: listening on port %d\n", ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
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
		}(c)
	}
}
