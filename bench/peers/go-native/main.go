// SPDX-License-Identifier: GPL-2.0

// peer-go-native: bench/native's workload from goroutines: each of N
// goroutines repeats nb_step() of bench/native_lib.c (compute C us, then
// block in native code for B us) through cgo, the way a Go program calls a C
// library.  Prints the same result lines as bench/native (impl=go
// backend=goroutines): tasks_per_s, cores_busy, and ctxsw_per_op from
// getrusage over the timed window (every thread of the process).
//
// The build (bench/peers/CMakeLists.txt) copies native_lib.c and
// native_lib.h next to this file, so cgo compiles the same routine.
//
//	peer-go-native [-reps N] [-ms MS] [-smoke] [-variants LIST] [-mult LIST] [-cb LIST]
package main

/*
#cgo CFLAGS: -O2 -D_GNU_SOURCE
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "native_lib.h"
*/
import "C"

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

func die(code int, f string, a ...any) {
	fmt.Fprintf(os.Stderr, "peer-go-native: error: "+f+"\n", a...)
	os.Exit(code)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func result(variant, kase, metric string, value float64, n int) {
	better := "higher"
	if metric == "ctxsw_per_op" {
		better = "lower"
	}
	fmt.Printf("bench=native impl=go backend=goroutines variant=%s case=%s metric=%s better=%s value=%.6g n=%d\n",
		variant, kase, metric, better, value, n)
}

type snap struct {
	done, cpu, wall uint64
	ctxsw           int64
}

func snapshot() snap {
	var d, c, w C.uint64_t
	var x C.long
	C.nb_snapshot(&d, &c, &w, &x)
	return snap{uint64(d), uint64(c), uint64(w), int64(x)}
}

type window struct{ tps, busy, ctxsw float64 }

// once: N goroutines, a warm-up of a fifth of the window (at least 10 ms),
// then the window.
func once(variant, n int, c, b int64, ms int) (window, error) {
	why := (*C.char)(C.malloc(256))
	defer C.free(unsafe.Pointer(why))
	if r := C.nb_setup(C.int(variant), C.int(n), C.long(c), C.long(b), why, 256); r != 0 {
		return window{}, fmt.Errorf("%s", C.GoString(why))
	}
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func(i C.int) {
			for C.nb_step(i) == 0 {
			}
			wg.Done()
		}(C.int(i))
	}
	warm := time.Duration(ms) * time.Millisecond / 5
	if warm < 10*time.Millisecond {
		warm = 10 * time.Millisecond
	}
	time.Sleep(warm)
	s0 := snapshot()
	time.Sleep(time.Duration(ms) * time.Millisecond)
	s1 := snapshot()
	C.nb_stop()
	wg.Wait()
	if r := C.nb_teardown(); r != 0 {
		die(1, "the native step failed: errno %d", -r)
	}
	ops := float64(s1.done - s0.done)
	wall := float64(s1.wall - s0.wall)
	w := window{ops / (wall / 1e9), float64(s1.cpu-s0.cpu) / wall, 0}
	if ops > 0 {
		w.ctxsw = float64(s1.ctxsw-s0.ctxsw) / ops
	}
	return w, nil
}

func main() {
	fs := flag.NewFlagSet("peer-go-native", flag.ContinueOnError)
	reps := fs.Int("reps", 5, "repetitions; the median is printed")
	ms := fs.Int("ms", 200, "length of one timed repetition in ms")
	smoke := fs.Bool("smoke", false, "a moment each: checks it runs, not speed")
	variants := fs.String("variants", "read,mutex,fault", "read,mutex,fault")
	mults := fs.String("mult", "", "N as multiples of the cores (default 4,32,256; -smoke: 4)")
	cbs := fs.String("cb", "", "C/B pairs in us (default 10/100,100/1000; -smoke: 10/100)")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		die(2, "unexpected argument %q", fs.Arg(0))
	}
	if *reps < 1 || *ms < 1 {
		die(2, "-reps and -ms must be positive")
	}
	if *smoke {
		*reps, *ms = 1, 20
		if *mults == "" {
			*mults = "4"
		}
		if *cbs == "" {
			*cbs = "10/100"
		}
	}
	if *mults == "" {
		*mults = "4,32,256"
	}
	if *cbs == "" {
		*cbs = "10/100,100/1000"
	}
	var vs []int
	for _, v := range strings.Split(*variants, ",") {
		cs := C.CString(v)
		id := int(C.nb_variant(cs))
		C.free(unsafe.Pointer(cs))
		if id < 0 {
			die(2, "-variants: unknown variant %q (expected read, mutex, fault)", v)
		}
		vs = append(vs, id)
	}
	var ms_ []int
	for _, m := range strings.Split(*mults, ",") {
		x, err := strconv.Atoi(m)
		if err != nil || x < 1 || x > 1024 {
			die(2, "-mult: expected numbers from 1 to 1024, got %q", m)
		}
		ms_ = append(ms_, x)
	}
	type cb struct{ c, b int64 }
	var cl []cb
	for _, p := range strings.Split(*cbs, ",") {
		c, b, ok := strings.Cut(p, "/")
		ci, e1 := strconv.ParseInt(c, 10, 64)
		bi, e2 := strconv.ParseInt(b, 10, 64)
		if !ok || e1 != nil || e2 != nil || ci < 0 || bi < 1 {
			die(2, "-cb: expected C/B in us, got %q", p)
		}
		cl = append(cl, cb{ci, bi})
	}
	cores := runtime.NumCPU()
	fmt.Fprintf(os.Stderr, "peer-go-native: GOMAXPROCS %d, busy loop %.1f iterations/us\n",
		runtime.GOMAXPROCS(0), float64(C.nb_iters_per_us()))
	for _, m := range ms_ {
		for _, p := range cl {
			for _, v := range vs {
				name := C.GoString(C.nb_variant_name(C.int(v)))
				kase := fmt.Sprintf("x%d-c%d-b%d", m, p.c, p.b)
				n := m * cores
				fmt.Fprintf(os.Stderr, "peer-go-native: %s %s (N=%d)\n", name, kase, n)
				var tps, busy, cs []float64
				failed := false
				for r := 0; r < *reps; r++ {
					w, err := once(v, n, p.c, p.b, *ms)
					if err != nil {
						fmt.Printf("bench=native impl=go backend=goroutines variant=%s case=- metric=- better=- value=n/a n=0 reason=%s\n",
							name, err)
						failed = true
						break
					}
					tps = append(tps, w.tps)
					busy = append(busy, w.busy)
					cs = append(cs, w.ctxsw)
				}
				if failed {
					continue
				}
				result(name, kase, "tasks_per_s", median(tps), *reps)
				result(name, kase, "cores_busy", median(busy), *reps)
				result(name, kase, "ctxsw_per_op", median(cs), *reps)
			}
		}
	}
}
