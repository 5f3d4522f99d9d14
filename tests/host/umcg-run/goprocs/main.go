// SPDX-License-Identifier: GPL-2.0

// goprocs prints how Go's runtime sized itself: GOMAXPROCS and NumCPU.
// Built with cgo, so that it is linked with the C library and
// libumcg-preload.so is loaded into it (a Go program without cgo is static
// and runs unmanaged).  Under umcg-run --cores N: gomaxprocs=N (umcg-run
// sets GOMAXPROCS), numcpu=1 (the runtime reads the worker's real affinity
// mask with a raw system call).
package main

// #include <unistd.h>
import "C"

import (
	"fmt"
	"runtime"
)

func main() {
	fmt.Printf("gomaxprocs=%d\nnumcpu=%d\npid=%d\n", runtime.GOMAXPROCS(0),
		runtime.NumCPU(), int(C.getpid()))
}
