// Command asidechaos runs asidekit's fault-injection suite (package chaos)
// against real servers: PostgreSQL named by -pg or ASIDEKIT_POSTGRES_DSN
// (the run creates and drops a database of its own there) and private
// servers started from PATH: two redis-server processes, a Redis Cluster
// for the failover phase, a PostgreSQL primary and streaming replica for
// the replica phase, a PostgreSQL with wal_level=logical for the CDC
// phase. It prints the table of checks
// and exits 1 when a check found a violation, writing the failing history
// with the seed that replays it.
//
//	asidechaos                 # `make chaos`: 4 minutes of faults, about 5 in all
//	asidechaos -ci             # the CI version: 40 seconds of faults, about a minute and a half in all
//	asidechaos -seed 42        # replay a seed's fault schedule and choices
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"time"

	"github.com/asidekit/asidekit/chaos"
)

func main() {
	var cfg chaos.Config
	seed := flag.Uint64("seed", 0, "seed of the fault schedule and the workers' choices (default: random)")
	ci := flag.Bool("ci", false, "the CI version: 40s of faults and smaller sizes, about a minute and a half in all")
	flag.StringVar(&cfg.PostgresDSN, "pg", os.Getenv("ASIDEKIT_POSTGRES_DSN"), "PostgreSQL DSN (default $ASIDEKIT_POSTGRES_DSN)")
	flag.DurationVar(&cfg.Duration, "duration", 4*time.Minute, "how long faults are injected")
	flag.IntVar(&cfg.Procs, "procs", 4, "simulated processes")
	flag.IntVar(&cfg.Goroutines, "goroutines", 8, "repository workers per process")
	flag.IntVar(&cfg.Keys, "keys", 6, "rows per cache strategy")
	flag.IntVar(&cfg.Rounds, "rounds", 5, "expiries per strategy in the loads check")
	flag.StringVar(&cfg.OutDir, "out", "out/chaos", "directory of the failing history")
	lists := flag.Bool("lists", true, "list reads of a cached query and their check (-lists=false leaves them out)")
	quiet := flag.Bool("q", false, "no progress lines")
	flag.Parse()
	if *ci {
		cfg.Duration, cfg.Procs, cfg.Goroutines, cfg.Rounds = 40*time.Second, 3, 4, 3
	}
	cfg.Seed = *seed
	cfg.NoLists = !*lists
	if !isSet("seed") {
		cfg.Seed = rand.Uint64() % 1_000_000
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	if cfg.PostgresDSN == "" {
		fmt.Fprintln(os.Stderr, "asidechaos: set -pg or ASIDEKIT_POSTGRES_DSN (a PostgreSQL server where it may create a database)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := chaos.Run(ctx, cfg)
	if rep != nil {
		rep.Print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "asidechaos:", err)
		os.Exit(2)
	}
	if rep.Failed() {
		os.Exit(1)
	}
}

func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
