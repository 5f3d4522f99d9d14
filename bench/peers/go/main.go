// SPDX-License-Identifier: GPL-2.0

// peer-go: the switch, pipeline and server workloads of bench/ written with
// goroutines and channels, the way a Go programmer would, printing the same
// result lines as the C benchmarks (impl=go backend=goroutines).
//
//	peer-go switch   [-reps N] [-ms MS] [-smoke]
//	peer-go pipeline [-reps N] [-ms MS] [-smoke] [-threads LIST]
//	peer-go echo     [-port N]
package main

import (
	"fmt"
	"os"
)

func usage() {
	fmt.Fprintf(os.Stderr, `Usage: peer-go COMMAND [OPTIONS]

Commands:
  switch     two goroutines pass a token over unbuffered channels
             (GOMAXPROCS as set, and GOMAXPROCS=1); ns per switch
  pipeline   a message goes round a ring of K goroutines; msgs/s
  echo       a goroutine-per-connection TCP echo server on 127.0.0.1;
             prints "peer-go: listening on port N"

Run "peer-go COMMAND -h" for a command's options.
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "switch":
		runSwitch(os.Args[2:])
	case "pipeline":
		runPipeline(os.Args[2:])
	case "echo":
		runEcho(os.Args[2:])
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "peer-go: error: unknown command %q (see peer-go --help)\n", os.Args[1])
		os.Exit(2)
	}
}
