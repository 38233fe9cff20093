package benchmarks_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

// RunSkew at the smallest sizes, on a standalone Redis and on a 3-master
// Cluster: every variant reads and writes with no error and no stale read
// after the window; the automatic near cache answers some reads within its
// budget, redis_only none. Counts, never speed.
func TestRunSkew(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run("cluster="+strconv.FormatBool(cluster), func(t *testing.T) {
			t.Parallel()
			pg := testcontainers.Postgres(t)
			cfg := benchmarks.Config{PostgresDSN: pg.DSN, DBPool: 8}
			if cluster {
				cfg.RedisCluster = testcontainers.RedisCluster(t).Addrs
			} else {
				cfg.RedisAddr = testcontainers.Redis(t).Addrs[0]
			}
			env, err := benchmarks.Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := env.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			// A window of half a second: the test checks that writes
			// reach the other processes, not how fast on a starved
			// machine (a lost invalidation leaves a copy for Local.TTL).
			p := benchmarks.SkewParams{Load: benchmarks.Load{Instances: 2, Goroutines: 4}, Rows: 2000, Warmup: 500 * time.Millisecond,
				Duration: 1500 * time.Millisecond, Window: 500 * time.Millisecond}
			res, err := benchmarks.RunSkew(context.Background(), env, p)
			if err != nil {
				t.Fatal(err)
			}
			checkSkew(t, res, p)
		})
	}
}

func checkSkew(t *testing.T, res benchmarks.Result, p benchmarks.SkewParams) {
	t.Helper()
	logRows(t, res)
	for _, v := range []string{"redis_only", "local_configured", "auto"} {
		if metric(t, res, v, benchmarks.MetricRequests) == 0 || metric(t, res, v, benchmarks.MetricWrites) == 0 {
			t.Errorf("%s: %v reads, %v writes; want some of each", v, metric(t, res, v, benchmarks.MetricRequests), metric(t, res, v, benchmarks.MetricWrites))
		}
		for _, m := range []string{benchmarks.MetricErrors, benchmarks.MetricStaleAfter} {
			if got := metric(t, res, v, m); got != 0 {
				t.Errorf("%s: %s = %v, want 0", v, m, got)
			}
		}
	}
	budget := float64(cacheaside.DefaultHotKeyBudget * p.Instances)
	if r, b := metric(t, res, "auto", benchmarks.MetricLocalHitRatio), metric(t, res, "auto", benchmarks.MetricLocalBytes); r <= 0 || b <= 0 || b > budget {
		t.Errorf("auto: local_hit_ratio %v, local_bytes %v; want both > 0, bytes ≤ %v", r, b, budget)
	}
	if got := metric(t, res, "auto", benchmarks.MetricLocalBudget); got != budget {
		t.Errorf("auto: local_budget_bytes %v, want %v", got, budget)
	}
	if r, b := metric(t, res, "redis_only", benchmarks.MetricLocalHitRatio), metric(t, res, "redis_only", benchmarks.MetricLocalBytes); r != 0 || b != 0 {
		t.Errorf("redis_only: local_hit_ratio %v, local_bytes %v; want 0, 0", r, b)
	}
	if metric(t, res, "local_configured", benchmarks.MetricLocalHitRatio) <= 0 {
		t.Errorf("local_configured: no local hit")
	}
}
