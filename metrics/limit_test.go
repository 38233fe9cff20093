package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

var (
	_ metrics.LimitStatser = limit.Limiter(nil)
	_ metrics.LimitStatser = (*limit.Semaphore)(nil)
)

func TestLimitCollector_matchesStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	ctx := context.Background()
	lim, err := limit.NewTokenBucket(rn.Client, limit.TokenBucket{Rate: limit.PerMinute(2)}, &limit.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := limit.NewConcurrency(rn.Client, limit.Concurrency{Limit: 1, LeaseTTL: time.Minute}, &limit.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewLimitCollector("per-ip", lim), metrics.NewLimitCollector("exports", sem))
	for range 5 {
		if _, err := lim.Allow(ctx, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = lim.AllowN(ctx, "192.0.2.1", 3) // more than the burst: invalid
	lease, err := sem.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	_, _ = sem.TryAcquire(ctx, "job")

	for _, c := range []struct {
		limiter, outcome string
		want             float64
	}{
		{"per-ip", "allowed", 2}, {"per-ip", "refused", 3}, {"per-ip", "error", 1},
		{"exports", "allowed", 1}, {"exports", "refused", 1}, {"exports", "error", 0},
	} {
		if got := gather(t, reg, "asidekit_limit_calls_total", "limiter", c.limiter, "outcome", c.outcome).value; got != c.want {
			t.Errorf("calls_total{limiter=%s,outcome=%s} = %v, want %v", c.limiter, c.outcome, got, c.want)
		}
	}
	if got := gather(t, reg, "asidekit_limit_failed_open_total", "limiter", "per-ip").value; got != 0 {
		t.Errorf("failed_open_total = %v, want 0", got)
	}
	if s := lim.Stats(); s != (limit.Stats{Allowed: 2, Refused: 3, Errors: 1}) {
		t.Errorf("Stats = %+v", s)
	}
}
