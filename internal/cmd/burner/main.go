// Command burner keeps every core busy until it is killed: one goroutine
// per GOMAXPROCS spinning on arithmetic (burn.Spin). `make stress-test`
// runs it next to the timing-sensitive tests, so that they run as on a
// machine with no CPU to spare; asidebench -busy and asidepeers -busy run
// the same spinners (burn.Start).
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
	"syscall"
	"time"

	"github.com/asidekit/asidekit/internal/burn"
)

func main() {
	n := flag.Int("n", runtime.GOMAXPROCS(0), "spinning goroutines")
	limit := flag.Duration("for", 0, "stop after this long (0: until killed)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "burner: -n must be at least 1")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	burn.Spin(*n)
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
