// SPDX-License-Identifier: GPL-2.0

package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
)

// opts are the options every measuring command takes.
type opts struct {
	reps  int
	ms    int
	smoke bool
}

func commonFlags(fs *flag.FlagSet) *opts {
	o := &opts{}
	fs.IntVar(&o.reps, "reps", 5, "repetitions; the median is printed")
	fs.IntVar(&o.ms, "ms", 200, "length of one timed repetition in ms")
	fs.BoolVar(&o.smoke, "smoke", false, "a moment each: checks it runs, not speed")
	return o
}

func parse(fs *flag.FlagSet, o *opts, args []string) {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "peer-go: error: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	if o.reps < 1 || o.ms < 1 {
		fmt.Fprintln(os.Stderr, "peer-go: error: -reps and -ms must be positive")
		os.Exit(2)
	}
	if o.smoke {
		o.reps, o.ms = 1, 20
	}
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

func result(bench, variant, kase, metric string, lowerBetter bool, value float64, n int) {
	better := "higher"
	if lowerBetter {
		better = "lower"
	}
	fmt.Printf("bench=%s impl=go backend=goroutines variant=%s case=%s metric=%s better=%s value=%.6g n=%d\n",
		bench, variant, kase, metric, better, value, n)
}
