// Command burner keeps every core busy until it is killed: one goroutine
// per GOMAXPROCS spinning on arithmetic. `make stress-test` runs it next to
// the timing-sensitive tests, so that they run as on a machine with no CPU
// to spare.
//
//	go run ./internal/cmd/burner &   # -n 4 for four spinners
//
// It exits on SIGINT or SIGTERM, or after -for if that is set.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", runtime.GOMAXPROCS(0), "spinning goroutines")
	limit := flag.Duration("for", 0, "stop after this long (0: until killed)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "burner: -n must be at least 1")
		os.Exit(2)
	}
	for range *n {
		go spin()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	var after <-chan time.Time
	if *limit > 0 {
		after = time.After(*limit)
	}
	fmt.Fprintf(os.Stderr, "burner: %d spinners, pid %d\n", *n, os.Getpid())
	select {
	case <-stop:
	case <-after:
	}
}

// sink keeps the compiler from removing spin's loop.
var sink atomic.Uint64

func spin() {
	x := uint64(1)
	for {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
	}
}
