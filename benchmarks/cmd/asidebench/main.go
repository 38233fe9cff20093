// Command asidebench runs asidekit's cache-failure benchmarks: each
// scenario compares asidekit's variants with the unprotected baseline on
// the same workload, in the same run, counting DB loads, Redis round trips,
// errors and latency.
//
// Usage:
//
//	asidebench [flags] SCENARIO...
//
// SCENARIO is hit, penetration, avalanche, breakdown, seqgen, outofband
// (PostgreSQL with wal_level=logical only), local_invalidation, skew
// (a real Redis only: skipped on the embedded backend), outage
// (a standalone Redis and PostgreSQL with wal_level=logical only), query
// (its asidekit_cdc variant on PostgreSQL with wal_level=logical only),
// replica (a primary and a streaming replica it starts from the
// PostgreSQL binaries on PATH; skipped on the embedded backend) or all.
//
// With no server named (by -redis, -redis-cluster, -postgres or the
// ASIDEKIT_REDIS_ADDR, ASIDEKIT_REDIS_CLUSTER_ADDRS and
// ASIDEKIT_POSTGRES_DSN environment variables) it runs on an embedded
// backend: an in-process miniredis whose TTLs follow the wall clock
// (advanced every few milliseconds) and SQLite through a pure-Go driver. Counts are
// faithful there; latencies are not representative.
//
// -quick sizes everything to finish in about a minute; the default sizes
// show the effects more clearly. The embedded backend uses one step smaller
// sizes (its servers share the benchmark's CPU).
//
// -busy runs the scenarios on a busy machine: a burner process (this
// executable started again) spins one thread per core for the run, as
// `make stress-test` does next to the tests, and is stopped when the run
// ends, however it ends. The tables, the JSON ("busy", "busy_mode") and
// the report say so. -busy alone (-busy=neighbour) starts the burner in a
// process session of its own (setsid), so that the scheduler weighs it as
// another program, the way a co-tenant shares a production host;
// -busy=group starts it in this program's session, where its spinners
// compete with asidebench's threads one for one (the older mode, kept for
// comparison: harsher than any neighbour).
//
// On PostgreSQL it creates a fresh database for the run and drops it at the
// end; in Redis it writes under a key namespace unique to the run and
// deletes those keys at the end.
//
// Exit status: 0 on success, 2 for bad flags or scenarios, 1 for any other
// failure (an unreachable server is one line on stderr). A failed cleanup
// at the end (the run's keys or database not removed) is a warning on
// stderr, not a failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/internal/burn"
)

func main() {
	burn.Child() // -busy starts this executable again as its burner
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var scenarioNames = []string{"hit", "penetration", "avalanche", "breakdown", "seqgen", "outofband", "local_invalidation", "skew", "outage", "query", "replica"}

type options struct {
	redis, cluster, postgres string
	embedded, quick          bool
	busy                     burn.Mode
	jsonFile, outDir         string
	instances, goroutines    int
	progress                 string
}

func newFlagSet(stderr io.Writer, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("asidebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.redis, "redis", "", "standalone Redis `ADDR` (default $ASIDEKIT_REDIS_ADDR, else in-process miniredis)")
	fs.StringVar(&o.cluster, "redis-cluster", "", "comma-separated Redis Cluster seed `ADDRS` (default $ASIDEKIT_REDIS_CLUSTER_ADDRS)")
	fs.StringVar(&o.postgres, "postgres", "", "PostgreSQL `DSN` of a user that may create databases (default $ASIDEKIT_POSTGRES_DSN, else SQLite)")
	fs.BoolVar(&o.embedded, "embedded", false, "use the embedded backend even if servers are configured")
	fs.Var(&o.busy, "busy", "keep every core busy during the run: a burner process spins one thread per core, stopped when the run ends; -busy (=neighbour) runs it in a process session of its own, as a co-tenant on a shared host is scheduled (what production resembles), -busy=group in this program's session, where its threads compete with ours one for one (the harsher, older mode)")
	fs.BoolVar(&o.quick, "quick", false, "small sizes: all scenarios finish in about a minute (smaller still on the embedded backend)")
	fs.StringVar(&o.jsonFile, "json", "", "write the results as JSON to `FILE`")
	fs.StringVar(&o.outDir, "out", "", "write report.md and PNG charts to `DIR`")
	fs.IntVar(&o.instances, "instances", 0, "simulated processes per scenario (`N`; default 2 with -quick, else 4)")
	fs.IntVar(&o.goroutines, "goroutines", 0, "goroutines per process (`C`; default 8 with -quick, else 16)")
	fs.StringVar(&o.progress, "progress", "auto", "progress bars on stderr: auto (on a terminal), always or never")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: asidebench [flags] SCENARIO...\n\n"+
			"SCENARIO: %s or all\n\nflags:\n", strings.Join(scenarioNames, ", "))
		fs.PrintDefaults()
	}
	return fs
}

// quiet drops go-redis's own log lines (a failed dial is logged once per
// attempt): every failure reaches asidebench as an error and is reported
// once, in one line.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// run is main without the exit: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	redis.SetLogger(quiet{})
	var o options
	fs := newFlagSet(stderr, &o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	scenarios, err := parseScenarios(fs.Args())
	if err == nil {
		err = o.check()
	}
	if err != nil {
		fmt.Fprintln(stderr, "asidebench:", err)
		fs.Usage()
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var prog *bars
	if o.progress == "always" || (o.progress == "auto" && isTerminal(stderr)) {
		prog = &bars{out: stderr, force: o.progress == "always"}
	}
	cfg := benchmarks.Config{RedisAddr: o.redis, PostgresDSN: o.postgres, Embedded: o.embedded}
	if o.cluster != "" {
		cfg.RedisCluster = strings.Split(o.cluster, ",")
	}
	if prog != nil {
		cfg.Progress = prog
	}
	env, err := benchmarks.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "asidebench:", err)
		return 1
	}
	var busy *burn.Process // nil: a quiet run
	if o.busy != burn.Off {
		if busy, err = burn.Start(runtime.NumCPU(), o.busy); err != nil {
			fmt.Fprintln(stderr, "asidebench:", err)
			_ = env.Close()
			return 1
		}
		// Stopped below, or here on a panic; a killed run's burner exits as
		// its input ends.
		defer busy.Stop()
	}
	code := runScenarios(ctx, env, o, busy, scenarios, prog, stdout, stderr, args)
	if err := busy.Stop(); err != nil {
		fmt.Fprintln(stderr, "asidebench:", err)
		code = max(code, 1)
	}
	// A failed cleanup is a warning: the results stand, and the run's keys
	// (or database) are named so that they can be removed by hand.
	if err := env.Close(); err != nil {
		fmt.Fprintln(stderr, "asidebench: warning: cleanup:", err)
	}
	return code
}

func (o *options) check() error {
	switch {
	case o.instances < 0 || o.goroutines < 0:
		return errors.New("-instances and -goroutines must be positive")
	case o.instances > 256 || o.goroutines > 1024:
		return errors.New("-instances is at most 256 and -goroutines at most 1024")
	case o.progress != "auto" && o.progress != "always" && o.progress != "never":
		return fmt.Errorf("-progress %q: want auto, always or never", o.progress)
	case o.embedded && (o.redis != "" || o.cluster != "" || o.postgres != ""):
		return errors.New("-embedded excludes -redis, -redis-cluster and -postgres")
	case o.redis != "" && o.cluster != "":
		return errors.New("-redis and -redis-cluster exclude each other")
	}
	return nil
}

// parseScenarios expands "all" and rejects unknown or missing names.
func parseScenarios(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("no scenario given")
	}
	want := map[string]bool{}
	for _, a := range args {
		switch {
		case a == "all":
			for _, s := range scenarioNames {
				want[s] = true
			}
		case contains(scenarioNames, a):
			want[a] = true
		default:
			return nil, fmt.Errorf("unknown scenario %q", a)
		}
	}
	var out []string
	for _, s := range scenarioNames {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
