package benchmarks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/testcontainers"
)

// realEnv opens an Env on the test's PostgreSQL server and Redis.
func realEnv(t *testing.T) *benchmarks.Env {
	t.Helper()
	pg := testcontainers.Postgres(t)
	rd := testcontainers.Redis(t)
	env, err := benchmarks.Open(context.Background(), benchmarks.Config{RedisAddr: rd.Addrs[0], PostgresDSN: pg.DSN, DBPool: 8})
	if err != nil {
		t.Fatal(err)
	}
	if env.Embedded() {
		t.Fatalf("backend %s is embedded", env.Backend)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return env
}

func metric(t *testing.T, res benchmarks.Result, variant, name string) float64 {
	t.Helper()
	r := res.Row(variant)
	if r == nil {
		t.Fatalf("%s: no row %q", res.Scenario, variant)
	}
	v, ok := r.Get(name)
	if !ok {
		t.Fatalf("%s/%s: no metric %q", res.Scenario, variant, name)
	}
	return v
}

func logRows(t *testing.T, res benchmarks.Result) {
	t.Helper()
	var b bytes.Buffer
	_ = benchmarks.WriteTable(&b, res)
	t.Log("\n" + b.String())
}

// TestScenarios_real runs every scenario with small sizes on real Redis and
// PostgreSQL and checks the counts each one exists to show.
// Once every Env and client is closed, no goroutine is left behind (the
// check runs last, after every other cleanup).
func TestScenarios_real(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, testcontainers.GoleakOptions(ignore)...) })
	env := realEnv(t)
	ctx := context.Background()
	p := benchmarks.QuickParams()
	l := benchmarks.Load{Instances: 2, Goroutines: 4}
	var results []benchmarks.Result

	t.Run("penetration", func(t *testing.T) {
		pp := p.Penetration
		pp.Load, pp.Rows, pp.AbsentIDs, pp.Reads = l, 500, 500, 1500
		res, err := benchmarks.RunPenetration(ctx, env, pp, benchmarks.PenetrationVariants(pp))
		if err != nil {
			t.Fatal(err)
		}
		logRows(t, res)
		results = append(results, res)
		for _, v := range []string{"none", "null_cache", "bloom", "bloom_null"} {
			if got := metric(t, res, v, benchmarks.MetricRequests); got != 1500 {
				t.Errorf("%s: requests = %v, want 1500", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricErrors); got != 0 {
				t.Errorf("%s: errors = %v, want 0", v, got)
			}
		}
		if got := metric(t, res, "none", benchmarks.MetricDBLoads); got != 1500 {
			t.Errorf("none: db_loads = %v, want every request (1500)", got)
		}
		if got := metric(t, res, "null_cache", benchmarks.MetricDBLoads); got != 500 {
			t.Errorf("null_cache: db_loads = %v, want one per distinct id (500)", got)
		}
		if got := metric(t, res, "bloom", benchmarks.MetricDBLoads); got > 0.015*500 {
			t.Errorf("bloom: db_loads = %v, want at most 1.5%% of 500", got)
		}
		if b, bn := metric(t, res, "bloom", benchmarks.MetricDBLoads), metric(t, res, "bloom_null", benchmarks.MetricDBLoads); bn > b {
			t.Errorf("bloom_null: db_loads = %v, more than bloom alone (%v)", bn, b)
		}
	})

	t.Run("breakdown", func(t *testing.T) {
		bp := p.Breakdown
		bp.Load = benchmarks.Load{Instances: 2, Goroutines: 8}
		bp.TTL, bp.Duration = 600*time.Millisecond, 1900*time.Millisecond
		res, err := benchmarks.RunBreakdown(ctx, env, bp, benchmarks.BreakdownVariants(bp))
		if err != nil {
			t.Fatal(err)
		}
		logRows(t, res)
		results = append(results, res)
		for _, v := range []string{"mutex", "async_refresh", "early_refresh"} {
			if got := metric(t, res, v, benchmarks.MetricDBLoadsPerExpiry); got != 1 {
				t.Errorf("%s: db_loads_per_expiry = %v, want 1", v, got)
			}
		}
		// Mutex readers that arrive during a rebuild wait for it: the
		// slowest of them wait about the whole load.
		if got, want := metric(t, res, "mutex", benchmarks.MetricBurstP99), float64(bp.LoadDelay/2)/float64(time.Millisecond); got < want {
			t.Errorf("mutex: burst_p99_ms = %v, want at least %v", got, want)
		}
		for _, v := range []string{"none", "singleflight", "mutex", "async_refresh", "early_refresh"} {
			if got := metric(t, res, v, benchmarks.MetricExpiries); got < 1 {
				t.Errorf("%s: %v expiries seen, want at least 1", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricErrors); got != 0 {
				t.Errorf("%s: errors = %v, want 0", v, got)
			}
		}
		if got := metric(t, res, "none", benchmarks.MetricDBLoadsPerExpiry); got <= 2 {
			t.Errorf("none: db_loads_per_expiry = %v, want a stampede (> 2) from 16 readers", got)
		}
		if got := metric(t, res, "singleflight", benchmarks.MetricDBLoadsPerExpiry); got > 2 {
			t.Errorf("singleflight: db_loads_per_expiry = %v, want at most one per process (2)", got)
		}
	})

	t.Run("avalanche", func(t *testing.T) {
		ap := p.Avalanche
		ap.Load, ap.Rate = benchmarks.Load{Instances: 2, Goroutines: 64}, 1000
		ap.Keys, ap.TTL, ap.Jitter, ap.Tail = 300, 3*time.Second, 0.5, 300*time.Millisecond
		ap.OutageAt, ap.OutageFor = 500*time.Millisecond, 1500*time.Millisecond
		// The peaks are a rate: on a starved machine (the race detector,
		// other packages' tests, a burner) the readers fall behind, drop
		// reads, and smear no_jitter's burst over many buckets. A run whose
		// readers dropped reads measured the machine, not the jitter: such
		// runs are repeated (at most three in all), and if the readers never
		// kept up the peaks are reported but not judged (an open-loop load
		// that fell behind its rate is no measurement).
		var res benchmarks.Result
		var dropped float64
		for attempt := 1; ; attempt++ {
			var err error
			res, err = benchmarks.RunAvalanche(ctx, env, ap, benchmarks.AvalancheVariants(ap))
			if err != nil {
				t.Fatal(err)
			}
			logRows(t, res)
			dropped = metric(t, res, "no_jitter", "dropped") + metric(t, res, "jitter", "dropped")
			if dropped == 0 || attempt == 3 {
				break
			}
			t.Logf("attempt %d: the readers dropped %v reads; running again", attempt, dropped)
		}
		results = append(results, res)
		nj := metric(t, res, "no_jitter", benchmarks.MetricPeakPer100ms)
		j := metric(t, res, "jitter", benchmarks.MetricPeakPer100ms)
		switch {
		case dropped > 0:
			t.Logf("peak DB loads per 100 ms: jitter %v, no_jitter %v: not judged, the readers dropped %v reads in each of 3 runs (machine too busy to hold the rate)", j, nj, dropped)
		case j*2 > nj:
			t.Errorf("peak DB loads per 100 ms: jitter %v, no_jitter %v; want jitter at most half", j, nj)
		}
		for _, v := range []string{"no_jitter", "jitter"} {
			// Like the peaks, the reload count needs readers that held their
			// rate: a starved run reads few keys after their expiry.
			if got := metric(t, res, v, benchmarks.MetricDBLoads); dropped == 0 && got < 150 {
				t.Errorf("%s: db_loads = %v, want most of the 300 keys reloaded once their TTL passed", v, got)
			}
			if tl := res.Row(v).Timeline; len(tl) < 20 {
				t.Errorf("%s: timeline of %d buckets, want the whole run", v, len(tl))
			}
		}
		capped := metric(t, res, "cache_down", benchmarks.MetricLoadCap)
		if capped != 2*4 {
			t.Errorf("cache_down: db_load_cap = %v, want 2 processes × 4", capped)
		}
		if got := metric(t, res, "cache_down", benchmarks.MetricMaxInflight); got > capped || got < 1 {
			t.Errorf("cache_down: max_inflight_db_loads = %v, want 1..%v", got, capped)
		}
		if got := metric(t, res, "cache_down", benchmarks.MetricDBLoads); got < 1 {
			t.Errorf("cache_down: no DB load during the outage: was Redis cut off at all?")
		}
	})

	t.Run("hit", func(t *testing.T) {
		hp := p.Hit
		hp.Keys, hp.Ops, hp.Rounds = 20, 200, 2
		res, err := benchmarks.RunHit(ctx, env, hp, benchmarks.HitVariants())
		if err != nil {
			t.Fatal(err)
		}
		logRows(t, res)
		results = append(results, res)
		for _, v := range []string{"bare/200B", "asidekit/200B", "asidekit/local/200B", "bare/4KB", "asidekit/4KB", "asidekit/local/4KB"} {
			if got := metric(t, res, v, benchmarks.MetricErrors); got != 0 {
				t.Errorf("%s: errors = %v", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricNsPerOp); got <= 0 {
				t.Errorf("%s: ns_per_op = %v", v, got)
			}
		}
		if got := metric(t, res, "bare/4KB", benchmarks.MetricRatio); got != 1 {
			t.Errorf("bare/4KB: ratio = %v, want 1 (the reference)", got)
		}
		if got := metric(t, res, "asidekit/4KB", benchmarks.MetricValueBytes); got < 3500 || got > 4500 {
			t.Errorf("asidekit/4KB: value_bytes = %v, want about 4096", got)
		}
	})

	t.Run("seqgen", func(t *testing.T) {
		sp := p.Seqgen
		sp.Load, sp.Ops, sp.Batch = l, 2000, 50
		res, err := benchmarks.RunSeqgen(ctx, env, sp)
		if err != nil {
			t.Fatal(err)
		}
		logRows(t, res)
		results = append(results, res)
		for _, v := range []string{"seqgen", "seqgen_unbatched", "seqgen_nextn", "seqgen_keys_lost", "nextval"} {
			if got := metric(t, res, v, benchmarks.MetricDuplicates); got != 0 {
				t.Errorf("%s: %v duplicates", v, got)
			}
			if got := metric(t, res, v, "ids"); got < 2000 {
				t.Errorf("%s: %v ids, want 2000", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricErrors); got != 0 {
				t.Errorf("%s: errors = %v", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricRatio); got <= 0 {
				t.Errorf("%s: ratio = %v, want ids_per_sec over nextval's", v, got)
			}
		}
		if got := metric(t, res, "nextval", benchmarks.MetricRatio); got != 1 {
			t.Errorf("nextval: ratio = %v, want 1 (the reference)", got)
		}
		// Joined calls: fewer Redis round trips than ids.
		if rt, ids := metric(t, res, "seqgen", benchmarks.MetricRedisRoundTrips), metric(t, res, "seqgen", "ids"); rt >= ids {
			t.Errorf("seqgen: %v Redis round trips for %v ids, want fewer (calls join)", rt, ids)
		}
	})

	t.Run("local_invalidation", func(t *testing.T) {
		lp := p.LocalInvalidation
		lp.Load, lp.Keys, lp.Writes = benchmarks.Load{Instances: 2, Goroutines: 1}, 4, 40
		res, err := benchmarks.RunLocalInvalidation(ctx, env, lp)
		if err != nil {
			t.Fatal(err)
		}
		logRows(t, res)
		results = append(results, res)
		for _, v := range []string{"tracking/asidekit", "tracking/repo", "tracking/plain_del", "tracking/plain_del/kill", "broadcast/asidekit", "broadcast/repo"} {
			if got := metric(t, res, v, benchmarks.MetricStaleAfter); got != 0 {
				t.Errorf("%s: %v stale reads after the window", v, got)
			}
			if got := metric(t, res, v, benchmarks.MetricErrors); got != 0 {
				t.Errorf("%s: errors = %v", v, got)
			}
		}
		// A plain DEL is not announced: broadcast serves the old value
		// until the local entry expires, which bounds it by Local.TTL. How
		// long that is depends on when the entries were filled (anything
		// from 0 to Local.TTL), so only the bound is asserted; the margin
		// is for a busy machine's scheduling.
		if got := metric(t, res, "broadcast/plain_del", benchmarks.MetricInvalidationMax); got > 2*float64(lp.LocalTTL.Milliseconds()) {
			t.Errorf("broadcast/plain_del: invalidation_max_ms = %v, want at most about Local.TTL (%v)", got, lp.LocalTTL)
		}
	})

	t.Run("output", func(t *testing.T) {
		checkJSON(t, results)
		dir := t.TempDir()
		if err := benchmarks.WriteReport(dir, results, "asidebench test"); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"report.md", benchmarks.AvalancheChart, benchmarks.CacheDownChart, benchmarks.BreakdownChart} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Ext(f) == ".png" && !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("%s is not a PNG", f)
			}
		}
	})
}

// checkJSON checks WriteJSON's shape: one object per scenario with
// scenario, backend, params and results, each result a variant and numbers.
func checkJSON(t *testing.T, results []benchmarks.Result) {
	t.Helper()
	var b bytes.Buffer
	if err := benchmarks.WriteJSON(&b, results); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if len(got) != len(results) {
		t.Fatalf("%d objects, want %d", len(got), len(results))
	}
	want := map[string][]string{
		"penetration": {"db_loads", "requests", "errors", "p50_ms", "p99_ms", "max_ms"},
		"breakdown":   {"db_loads", "db_loads_per_expiry", "errors", "p50_ms", "p99_ms", "max_ms", "burst_p99_ms"},
		"avalanche":   {"db_loads", "peak_db_loads_per_100ms", "db_loads_per_100ms"},
		"hit":         {"ns_per_op", "ratio", "allocs_per_op"},
		"seqgen":      {"duplicates", "ids_per_sec", "ratio", "requests"},
		"local_invalidation": {"invalidation_p50_ms", "invalidation_p99_ms", "invalidation_max_ms",
			"stale_reads_after_window", "requests", "errors"},
	}
	for i, o := range got {
		for _, k := range []string{"scenario", "backend", "params", "results"} {
			if _, ok := o[k]; !ok {
				t.Errorf("object %d has no %q", i, k)
			}
		}
		sc, _ := o["scenario"].(string)
		rows, _ := o["results"].([]any)
		if len(rows) == 0 {
			t.Errorf("%s: no results", sc)
		}
		for _, r := range rows {
			m := r.(map[string]any)
			if _, ok := m["variant"].(string); !ok {
				t.Errorf("%s: result without a variant: %v", sc, m)
			}
			for _, k := range want[sc] {
				if _, ok := m[k]; !ok {
					t.Errorf("%s/%v: no %q", sc, m["variant"], k)
				}
			}
		}
	}
}
