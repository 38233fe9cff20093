package benchmarks_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/asidekit/asidekit/benchmarks"
)

// TestEmbedded_smoke runs every scenario with tiny sizes on the embedded
// backend (miniredis + SQLite): the path `make demo` takes.
// It also checks that Close leaves no goroutine behind.
func TestEmbedded_smoke(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	env, err := benchmarks.Open(ctx, benchmarks.Config{Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !env.EmbeddedRedis || !env.EmbeddedDB {
		t.Fatalf("backend %s, want embedded", env.Backend)
	}
	p := benchmarks.QuickParams()
	l := benchmarks.Load{Instances: 2, Goroutines: 2}
	p.Hit.Keys, p.Hit.Ops, p.Hit.Rounds = 10, 40, 2
	p.Penetration.Load, p.Penetration.Rows, p.Penetration.AbsentIDs, p.Penetration.Reads = l, 100, 100, 200
	p.Avalanche.Load, p.Avalanche.Keys, p.Avalanche.TTL, p.Avalanche.Tail = l, 50, time.Second, 100*time.Millisecond
	p.Breakdown.Load, p.Breakdown.TTL, p.Breakdown.Duration = l, 500*time.Millisecond, 1200*time.Millisecond
	p.Seqgen.Load, p.Seqgen.Ops, p.Seqgen.Batch = l, 200, 10

	pen, err := benchmarks.RunPenetration(ctx, env, p.Penetration, benchmarks.PenetrationVariants(p.Penetration))
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, pen, "null_cache", benchmarks.MetricDBLoads); got != 100 {
		t.Errorf("penetration null_cache: db_loads = %v, want 100", got)
	}
	if got := metric(t, pen, "none", benchmarks.MetricDBLoads); got != 200 {
		t.Errorf("penetration none: db_loads = %v, want 200", got)
	}

	av, err := benchmarks.RunAvalanche(ctx, env, p.Avalanche, benchmarks.AvalancheVariants(p.Avalanche))
	if err != nil {
		t.Fatal(err)
	}
	// Keys expire on miniredis (runClock): the no_jitter keys are reloaded.
	if got := metric(t, av, "no_jitter", benchmarks.MetricDBLoads); got < 1 {
		t.Errorf("avalanche no_jitter: no DB load after the TTL: keys did not expire on miniredis")
	}
	if av.Row("cache_down") != nil || len(av.Notes) < 2 {
		t.Errorf("avalanche: cache_down should be skipped with a note on miniredis; notes %q", av.Notes)
	}

	bd, err := benchmarks.RunBreakdown(ctx, env, p.Breakdown, benchmarks.BreakdownVariants(p.Breakdown))
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, bd, "mutex", benchmarks.MetricDBLoadsPerExpiry); got != 1 {
		t.Errorf("breakdown mutex: db_loads_per_expiry = %v, want 1", got)
	}

	hit, err := benchmarks.RunHit(ctx, env, p.Hit, benchmarks.HitVariants())
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, hit, "asidekit/200B", benchmarks.MetricErrors); got != 0 {
		t.Errorf("hit: %v errors", got)
	}

	sq, err := benchmarks.RunSeqgen(ctx, env, p.Seqgen)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"seqgen", "seqgen_nextn", "seqgen_keys_lost", "nextval"} {
		if got := metric(t, sq, v, benchmarks.MetricDuplicates); got != 0 {
			t.Errorf("seqgen %s: %v duplicates", v, got)
		}
		if got := metric(t, sq, v, benchmarks.MetricErrors); got != 0 {
			t.Errorf("seqgen %s: %v errors (%s)", v, got, sq.Row(v).Notes)
		}
	}
}
