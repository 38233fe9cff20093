package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/internal/burn"
)

// params returns the sizes for o: quick or default (one step smaller on
// the embedded backend, whose servers share the benchmark's CPU), with
// -instances and -goroutines applied to every scenario.
func (o *options) params(embedded bool) benchmarks.Params {
	var p benchmarks.Params
	switch {
	case o.quick && embedded:
		p = benchmarks.EmbeddedParams()
	case o.quick || embedded:
		p = benchmarks.QuickParams()
	default:
		p = benchmarks.DefaultParams()
	}
	for _, l := range []*benchmarks.Load{&p.Penetration.Load, &p.Avalanche.Load, &p.Breakdown.Load, &p.Seqgen.Load, &p.Skew.Load} {
		if o.instances > 0 {
			l.Instances = o.instances
		}
		if o.goroutines > 0 {
			l.Goroutines = o.goroutines
		}
	}
	if testSizes.params != nil {
		testSizes.params(&p)
	}
	return p
}

// testSizes, set by tests only, shrinks the sizes further: the tests of
// the command check its wiring (every scenario runs, the tables, the
// report), which the smallest sizes show as well as the demo's.
var testSizes struct {
	params func(*benchmarks.Params)
	query  func(*benchmarks.QueryParams)
}

// outageParams returns the outage scenario's sizes for o: quick or
// default, with -instances and -goroutines applied.
func (o *options) outageParams() benchmarks.OutageParams {
	p := benchmarks.DefaultOutageParams()
	if o.quick {
		p = benchmarks.QuickOutageParams()
	}
	if o.instances > 0 {
		p.Instances = o.instances
	}
	if o.goroutines > 0 {
		p.Goroutines = o.goroutines
	}
	return p
}

// queryParams returns the query scenario's sizes for o: quick (smaller
// on the embedded backend) or default, with -instances and -goroutines
// applied.
func (o *options) queryParams(embedded bool) benchmarks.QueryParams {
	p := benchmarks.DefaultQueryParams()
	switch {
	case o.quick && embedded:
		p = benchmarks.EmbeddedQueryParams()
	case o.quick:
		p = benchmarks.QuickQueryParams()
	}
	if o.instances > 0 {
		p.Instances = o.instances
	}
	if o.goroutines > 0 {
		p.Goroutines = o.goroutines
	}
	if testSizes.query != nil {
		testSizes.query(&p)
	}
	return p
}

// replicaParams returns the replica scenario's sizes for o: quick or
// default, with -instances and -goroutines applied.
func (o *options) replicaParams() benchmarks.ReplicaParams {
	p := benchmarks.DefaultReplicaParams()
	if o.quick {
		p = benchmarks.QuickReplicaParams()
	}
	if o.instances > 0 {
		p.Instances = o.instances
	}
	if o.goroutines > 0 {
		p.Goroutines = o.goroutines
	}
	return p
}

// runScenarios runs each scenario, prints its table, then writes the JSON
// file and the report. busy is the burner's spinning threads (0: quiet),
// stamped on every result. It returns the exit status.
func runScenarios(ctx context.Context, env *benchmarks.Env, o options, burner *burn.Process, scenarios []string, prog *bars, stdout, stderr io.Writer, args []string) int {
	busy := burner.Spinners()
	p := o.params(env.Embedded())
	fmt.Fprintf(stdout, "asidebench: backend %s, namespace %s\n", env.Backend, env.Namespace)
	if env.Embedded() {
		fmt.Fprintln(stdout, "asidebench: embedded backend: counts are faithful, latencies are not representative")
	}
	if busy > 0 {
		fmt.Fprintf(stdout, "asidebench: busy: a burner process spins %d threads for the run (%s)\n", busy, burner.Mode())
	}
	fmt.Fprintln(stdout)
	var results []benchmarks.Result
	start := time.Now()
	for i, s := range scenarios {
		// One line as each scenario starts, on any output (the bars only
		// draw on a terminal): a run of minutes is never silent.
		fmt.Fprintf(stderr, "asidebench: [%d/%d] %s ...\n", i+1, len(scenarios), s)
		if prog != nil {
			prog.begin()
		}
		t0 := time.Now()
		res, err := runOne(ctx, env, o, p, s)
		if prog != nil {
			prog.end()
		}
		if err != nil {
			fmt.Fprintf(stderr, "asidebench: %s: %v\n", s, err)
			return 1
		}
		res.Busy, res.BusyMode, res.Elapsed = busy, burner.Mode().String(), time.Since(t0)
		results = append(results, res)
		if err := benchmarks.WriteTable(stdout, res); err != nil {
			fmt.Fprintln(stderr, "asidebench:", err)
			return 1
		}
	}
	if err := benchmarks.WriteSummary(stdout, results); err != nil {
		fmt.Fprintln(stderr, "asidebench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "asidebench: %d scenario(s) in %v\n", len(results), time.Since(start).Round(100*time.Millisecond))
	if o.jsonFile != "" {
		if err := writeJSONFile(o.jsonFile, results); err != nil {
			fmt.Fprintln(stderr, "asidebench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "asidebench: results written to %s\n", o.jsonFile)
	}
	if o.outDir != "" {
		if err := benchmarks.WriteReport(o.outDir, results, commandLine(args)); err != nil {
			fmt.Fprintln(stderr, "asidebench: report:", err)
			return 1
		}
		fmt.Fprintf(stdout, "asidebench: report and charts written to %s (report.md and its PNG charts)\n", o.outDir)
	} else {
		fmt.Fprintln(stdout, "asidebench: no report written (-out DIR writes report.md and its charts)")
	}
	return 0
}

func runOne(ctx context.Context, env *benchmarks.Env, o options, p benchmarks.Params, s string) (benchmarks.Result, error) {
	switch s {
	case "hit":
		return benchmarks.RunHit(ctx, env, p.Hit, benchmarks.HitVariants())
	case "penetration":
		return benchmarks.RunPenetration(ctx, env, p.Penetration, benchmarks.PenetrationVariants(p.Penetration))
	case "avalanche":
		return benchmarks.RunAvalanche(ctx, env, p.Avalanche, benchmarks.AvalancheVariants(p.Avalanche))
	case "breakdown":
		return benchmarks.RunBreakdown(ctx, env, p.Breakdown, benchmarks.BreakdownVariants(p.Breakdown))
	case "seqgen":
		return benchmarks.RunSeqgen(ctx, env, p.Seqgen)
	case "outofband":
		return benchmarks.RunOutOfBand(ctx, env, benchmarks.DefaultOutOfBandParams())
	case "local_invalidation":
		return benchmarks.RunLocalInvalidation(ctx, env, p.LocalInvalidation)
	case "skew":
		return benchmarks.RunSkew(ctx, env, p.Skew)
	case "outage":
		return benchmarks.RunOutage(ctx, env, o.outageParams())
	case "query":
		return benchmarks.RunQuery(ctx, env, o.queryParams(env.Embedded()))
	case "replica":
		return benchmarks.RunReplica(ctx, env, o.replicaParams())
	}
	return benchmarks.Result{}, fmt.Errorf("unknown scenario %q", s)
}

func writeJSONFile(name string, results []benchmarks.Result) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := benchmarks.WriteJSON(f, results); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// commandLine quotes the command for the report, without a DSN's secrets.
func commandLine(args []string) string {
	return benchmarks.CommandLine("cd benchmarks && go run ./cmd/asidebench", args)
}
