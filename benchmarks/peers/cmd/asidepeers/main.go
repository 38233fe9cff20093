// Command asidepeers runs asidebench's hit, penetration and breakdown
// workloads against asidekit and four other Go cache libraries — go-zero's
// core/stores/cache, rockscache, jetcache-go (remote-only and with its local
// cache) and go-redis/cache (without and with its local TinyLFU) — on one
// Redis and one PostgreSQL, and prints each scenario's table with every
// row's ratio to asidekit.
//
// Usage:
//
//	asidepeers [flags] [SCENARIO...]
//
// SCENARIO is hit, penetration, breakdown, hot_key, outside_write,
// outside_set, library_delete, hot_key_fleet, outside_write_fleet,
// library_delete_fleet or all (the default). hot_key reads a few warm keys from
// concurrent callers through asidekit (remote only and with its near cache,
// Policy.Local) and through jetcache-go and go-redis/cache (remote only and with their local
// caches); outside_write deletes the values with a plain DEL from another
// client and measures how long each keeps serving the old one; outside_set
// does the same with a plain SET of the new value into each library's key,
// in the library's own encoding (asidekit, which exports no entry encoder,
// gets the plain JSON value: a foreign entry it deletes and reloads);
// library_delete has the writer delete through each library's own call
// instead (asidekit Entity.Invalidate, go-zero DelCtx, rockscache
// TagAsDeleted2, jetcache-go and go-redis/cache Delete), from a process of
// its own. The *_fleet scenarios are hot_key, outside_write and
// library_delete at fleet shape: 4 processes, keys drawn from Zipf(1.1)
// over -keyspace keys (10,000), the writer's keys drawn alike, and stale
// reads judged against a fixed 100 ms window.
//
// Each scenario runs -rounds times, the variants' order alternating between
// rounds, and the rounds are folded into one table (counts: means per
// round; ns/op and latency percentiles: medians; max: the largest).
//
// -busy runs the comparison on a busy machine: a burner process (this
// executable started again) spins one thread per core for the run, as
// `make stress-test` does, and is stopped when the run ends, however it
// ends; the tables, the JSON and the Markdown say so. -busy alone
// (-busy=neighbour) starts it in a process session of its own (setsid),
// a co-tenant as on a shared production host; -busy=group in this
// program's session, the older and harsher mode, kept for comparison.
//
// The servers come from -redis and -postgres, or from ASIDEKIT_REDIS_ADDR
// and ASIDEKIT_POSTGRES_DSN (ASIDEKIT_REDIS_CLUSTER_ADDRS is ignored: the
// comparison runs on a standalone Redis); with neither, asidepeers refuses to run unless
// -embedded asks for the in-process backend (miniredis + SQLite), whose
// latencies mean nothing. On PostgreSQL it creates a fresh database for the
// run and drops it at the end; in Redis it writes under a key namespace
// unique to the run and deletes those keys at the end.
//
// Exit status: 0 on success, 2 for bad flags or scenarios, 1 for any other
// failure.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/benchmarks/peers"
	"github.com/asidekit/asidekit/internal/burn"
)

func main() {
	burn.Child() // -busy starts this executable again as its burner
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var scenarioNames = []string{"hit", "penetration", "breakdown", "hot_key", "outside_write", "outside_set",
	peers.LibraryDelete, peers.HotKeyFleet, peers.OutsideWriteFleet, peers.LibraryDeleteFleet}

type options struct {
	redis, postgres       string
	embedded, quick       bool
	busy                  burn.Mode
	rounds                int
	instances, goroutines int
	keySpace              int
	jsonFile, mdFile      string
}

func newFlagSet(stderr io.Writer, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("asidepeers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.redis, "redis", "", "standalone Redis `ADDR` (default $ASIDEKIT_REDIS_ADDR)")
	fs.StringVar(&o.postgres, "postgres", "", "PostgreSQL `DSN` of a user that may create databases (default $ASIDEKIT_POSTGRES_DSN)")
	fs.BoolVar(&o.embedded, "embedded", false, "run on in-process miniredis + SQLite (counts only; latencies mean nothing)")
	fs.Var(&o.busy, "busy", "keep every core busy during the run: a burner process spins one thread per core, stopped when the run ends; -busy (=neighbour) runs it in a process session of its own, as a co-tenant on a shared host is scheduled (what production resembles), -busy=group in this program's session, where its threads compete with ours one for one (the harsher, older mode)")
	fs.BoolVar(&o.quick, "quick", false, "small sizes and two rounds")
	fs.IntVar(&o.rounds, "rounds", 0, "interleaved rounds per scenario (`N`; default 2 with -quick, else 3)")
	fs.IntVar(&o.instances, "instances", 0, "simulated processes in penetration and breakdown (`N`; default 2 with -quick, else 4)")
	fs.IntVar(&o.goroutines, "goroutines", 0, "goroutines per process (`C`; default 8 with -quick, else 16)")
	fs.IntVar(&o.keySpace, "keyspace", 0, fmt.Sprintf("keys of the *_fleet scenarios' Zipf keyspace (`N`; default %d)", peers.DefaultFleetKeySpace))
	fs.StringVar(&o.jsonFile, "json", "", "write the folded results as JSON to `FILE`")
	fs.StringVar(&o.mdFile, "md", "", "write the summary and tables as Markdown to `FILE`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: asidepeers [flags] [SCENARIO...]\n\nSCENARIO: %s or all (default all)\n\nflags:\n", strings.Join(scenarioNames, ", "))
		fs.PrintDefaults()
	}
	return fs
}

// run is main without the exit: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
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
		fmt.Fprintln(stderr, "asidepeers:", err)
		fs.Usage()
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The comparison runs on a standalone Redis (go-zero's forwarding dials
	// one address). benchmarks.Open prefers a cluster named in the
	// environment over any standalone address, so that name is dropped.
	if err := os.Unsetenv(benchmarks.EnvRedisClusterAddrs); err != nil {
		fmt.Fprintln(stderr, "asidepeers:", err)
		return 1
	}
	cfg := benchmarks.Config{RedisAddr: o.redis, PostgresDSN: o.postgres, Embedded: o.embedded}
	env, err := benchmarks.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "asidepeers:", err)
		return 1
	}
	var busy *burn.Process // nil: a quiet run
	if o.busy != burn.Off {
		if busy, err = burn.Start(runtime.NumCPU(), o.busy); err != nil {
			fmt.Fprintln(stderr, "asidepeers:", err)
			_ = env.Close()
			return 1
		}
		// Stopped below, or here on a panic; a killed run's burner exits as
		// its input ends.
		defer busy.Stop()
	}
	code := runScenarios(ctx, env, o, busy, scenarios, stdout, stderr, args)
	if err := busy.Stop(); err != nil {
		fmt.Fprintln(stderr, "asidepeers:", err)
		code = max(code, 1)
	}
	if err := env.Close(); err != nil {
		fmt.Fprintln(stderr, "asidepeers: cleanup:", err)
		code = max(code, 1)
	}
	return code
}

func (o *options) check() error {
	switch {
	case o.rounds < 0 || o.instances < 0 || o.goroutines < 0 || o.keySpace < 0:
		return errors.New("-rounds, -instances, -goroutines and -keyspace must be positive")
	case o.keySpace > 10_000_000:
		return errors.New("-keyspace is at most 10000000")
	case o.rounds > 100 || o.instances > 256 || o.goroutines > 1024:
		return errors.New("-rounds is at most 100, -instances at most 256 and -goroutines at most 1024")
	case o.embedded && (o.redis != "" || o.postgres != ""):
		return errors.New("-embedded excludes -redis and -postgres")
	case !o.embedded && (o.redis == "" && os.Getenv(benchmarks.EnvRedisAddr) == "" ||
		o.postgres == "" && os.Getenv(benchmarks.EnvPostgresDSN) == ""):
		return fmt.Errorf("name the servers with -redis and -postgres (or %s and %s), or pass -embedded",
			benchmarks.EnvRedisAddr, benchmarks.EnvPostgresDSN)
	}
	return nil
}

// params returns the sizes for o.
func (o *options) params() peers.Params {
	p := peers.DefaultParams()
	if o.quick {
		p = peers.QuickParams()
	}
	if o.rounds > 0 {
		p.Rounds = o.rounds
	}
	if o.keySpace > 0 {
		p.HotKeyFleet.KeySpace, p.OutsideWriteFleet.KeySpace = o.keySpace, o.keySpace
	}
	for _, l := range []*benchmarks.Load{&p.Penetration.Load, &p.Breakdown.Load} {
		if o.instances > 0 {
			l.Instances = o.instances
		}
		if o.goroutines > 0 {
			l.Goroutines = o.goroutines
		}
	}
	return p
}

// parseScenarios expands "all" (or nothing) and rejects unknown names.
func parseScenarios(args []string) ([]string, error) {
	if len(args) == 0 {
		return scenarioNames, nil
	}
	want := map[string]bool{}
	for _, a := range args {
		switch {
		case a == "all":
			for _, s := range scenarioNames {
				want[s] = true
			}
		case slices.Contains(scenarioNames, a):
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

// runScenarios runs and prints each scenario, then the summary, then
// writes the files. busy is the burner's spinning threads (0: quiet),
// stamped on every result. It returns the exit status.
func runScenarios(ctx context.Context, env *benchmarks.Env, o options, burner *burn.Process, scenarios []string, stdout, stderr io.Writer, args []string) int {
	busy := burner.Spinners()
	p := o.params()
	fmt.Fprintf(stdout, "asidepeers: backend %s, namespace %s, %d interleaved rounds per scenario\n", env.Backend, env.Namespace, p.Rounds)
	if env.Embedded() {
		fmt.Fprintln(stdout, "asidepeers: embedded backend: counts are faithful, latencies are not representative")
	}
	if busy > 0 {
		fmt.Fprintf(stdout, "asidepeers: busy: a burner process spins %d threads for the run (%s)\n", busy, burner.Mode())
	}
	fmt.Fprintln(stdout)
	progress := func(scenario string, round, rounds int) {
		fmt.Fprintf(stderr, "asidepeers: %s round %d/%d\n", scenario, round, rounds)
	}
	start := time.Now()
	var results []benchmarks.Result
	for _, s := range scenarios {
		var res benchmarks.Result
		var err error
		switch s {
		case "hit":
			res, err = peers.CompareHit(ctx, env, p, progress)
		case "penetration":
			res, err = peers.ComparePenetration(ctx, env, p, progress)
		case "breakdown":
			res, err = peers.CompareBreakdown(ctx, env, p, progress)
		case "hot_key":
			res, err = peers.CompareHotKey(ctx, env, p, progress)
		case "outside_write":
			res, err = peers.CompareOutsideWrite(ctx, env, p, progress)
		case "outside_set":
			res, err = peers.CompareOutsideSet(ctx, env, p, progress)
		case peers.LibraryDelete:
			res, err = peers.CompareLibraryDelete(ctx, env, p, progress)
		case peers.HotKeyFleet:
			res, err = peers.CompareHotKeyFleet(ctx, env, p, progress)
		case peers.OutsideWriteFleet:
			res, err = peers.CompareOutsideWriteFleet(ctx, env, p, progress)
		case peers.LibraryDeleteFleet:
			res, err = peers.CompareLibraryDeleteFleet(ctx, env, p, progress)
		}
		if err != nil {
			fmt.Fprintf(stderr, "asidepeers: %s: %v\n", s, err)
			return 1
		}
		res.Busy, res.BusyMode = busy, burner.Mode().String()
		results = append(results, res)
		if err := benchmarks.WriteTable(stdout, res); err != nil {
			fmt.Fprintln(stderr, "asidepeers:", err)
			return 1
		}
	}
	summary := peers.Summary(results)
	for _, line := range summary {
		fmt.Fprintln(stdout, "summary:", line)
	}
	fmt.Fprintf(stdout, "asidepeers: %d scenario(s) in %v\n", len(results), time.Since(start).Round(100*time.Millisecond))
	if o.jsonFile != "" {
		if err := writeFile(o.jsonFile, func(w io.Writer) error { return benchmarks.WriteJSON(w, results) }); err != nil {
			fmt.Fprintln(stderr, "asidepeers:", err)
			return 1
		}
	}
	if o.mdFile != "" {
		err := writeFile(o.mdFile, func(w io.Writer) error {
			fmt.Fprintf(w, "Measured on %s, %s, with:\n\n    %s\n\n", results[0].Conditions(), time.Now().UTC().Format("2006-01-02"), commandLine(args))
			for _, line := range summary {
				fmt.Fprintf(w, "- %s\n", line)
			}
			fmt.Fprintln(w)
			return peers.WriteMarkdown(w, results)
		})
		if err != nil {
			fmt.Fprintln(stderr, "asidepeers:", err)
			return 1
		}
	}
	return 0
}

func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// commandLine quotes the command for the Markdown, without a DSN's secrets.
func commandLine(args []string) string {
	return benchmarks.CommandLine("cd benchmarks/peers && go run ./cmd/asidepeers", args)
}
