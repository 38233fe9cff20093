package benchmarks_test

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// tinyParams are small enough for a smoke run on the embedded backend.
func tinyParams() benchmarks.Params {
	p := benchmarks.QuickParams()
	l := benchmarks.Load{Instances: 2, Goroutines: 4}
	p.Hit.Keys, p.Hit.Ops = 20, 500
	p.Penetration.Load, p.Penetration.Rows, p.Penetration.AbsentIDs, p.Penetration.Reads = l, 200, 200, 1000
	p.Avalanche.Load, p.Avalanche.Keys, p.Avalanche.TTL, p.Avalanche.Tail = l, 100, time.Second, 200*time.Millisecond
	p.Breakdown.Load, p.Breakdown.TTL, p.Breakdown.Duration = l, 500*time.Millisecond, 1300*time.Millisecond
	p.Seqgen.Load, p.Seqgen.Ops = l, 1000
	return p
}

func TestEmbedded_smoke(t *testing.T) {
	ctx := context.Background()
	env, err := benchmarks.Open(ctx, benchmarks.Config{Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	p := tinyParams()
	start := time.Now()
	res, err := benchmarks.RunPenetration(ctx, env, p.Penetration, benchmarks.PenetrationVariants(p.Penetration))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("penetration %v: %+v", time.Since(start), res.Rows)
}
