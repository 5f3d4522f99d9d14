// SPDX-License-Identifier: GPL-2.0

package main

import (
	"flag"
	"runtime"
	"time"
)

// switchOnce: goroutines A and B pass a token back and forth over two
// unbuffered channels for ms milliseconds; ns per switch.
func switchOnce(ms int) float64 {
	ab, ba := make(chan int), make(chan int)
	go func() {
		for v := range ab {
			ba <- v
		}
		close(ba)
	}()
	n := 0
	start := time.Now()
	end := start.Add(time.Duration(ms) * time.Millisecond)
	for {
		for i := 0; i < 16; i++ {
			ab <- i
			<-ba
		}
		n += 16
		if time.Now().After(end) {
			break
		}
	}
	el := time.Since(start)
	close(ab)
	<-ba
	return float64(el.Nanoseconds()) / float64(2*n)
}

func runSwitch(args []string) {
	fs := flag.NewFlagSet("switch", flag.ExitOnError)
	o := commonFlags(fs)
	parse(fs, o, args)
	for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
		prev := runtime.GOMAXPROCS(procs)
		v := make([]float64, o.reps)
		for r := range v {
			v[r] = switchOnce(o.ms)
		}
		runtime.GOMAXPROCS(prev)
		variant := "chan"
		if procs == 1 {
			variant = "chan-procs1"
		}
		result("switch", variant, "-", "ns_per_switch", true, median(v), o.reps)
	}
}
