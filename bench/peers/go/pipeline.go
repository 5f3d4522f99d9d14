// SPDX-License-Identifier: GPL-2.0

package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// pipelineOnce: a message goes round a ring of k goroutines, each
// receiving on its own unbuffered channel and sending to the next; hops per
// second over ms milliseconds.
func pipelineOnce(k, ms int) float64 {
	ch := make([]chan int, k)
	for i := range ch {
		ch[i] = make(chan int)
	}
	for i := 1; i < k; i++ {
		go func(in, out chan int) {
			for v := range in {
				out <- v
			}
			close(out)
		}(ch[i], ch[(i+1)%k])
	}
	rounds := 0
	start := time.Now()
	end := start.Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		ch[1%k] <- rounds
		<-ch[0]
		rounds++
	}
	el := time.Since(start)
	close(ch[1%k])
	for range ch[0] {
	}
	return float64(rounds*k) / el.Seconds()
}

func runPipeline(args []string) {
	fs := flag.NewFlagSet("pipeline", flag.ExitOnError)
	o := commonFlags(fs)
	list := fs.String("threads", "2,4,8,16,32,64", "ring sizes")
	parse(fs, o, args)
	for _, s := range strings.Split(*list, ",") {
		k, err := strconv.Atoi(s)
		if err != nil || k < 2 {
			fmt.Fprintf(os.Stderr, "peer-go: error: -threads: bad ring size %q\n", s)
			os.Exit(2)
		}
		v := make([]float64, o.reps)
		for r := range v {
			v[r] = pipelineOnce(k, o.ms)
		}
		result("pipeline", "chan", "k"+s, "msgs_per_s", false, median(v), o.reps)
	}
}
