package peers

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// TestNearCacheRows runs hot_key, outside_write and outside_set at tiny
// sizes on real Redis: every row reads without errors; after an outside
// DEL, and after an outside SET of the new value into the library's key,
// asidekit's near cache (entries living a minute) serves every reader the
// new value before the run ends (none unseen), with no stale read past its
// window. The peers' figures are logged, not asserted: their local caches
// hear of no outside change and serve the old value up to their TTL, past
// the run's end.
func TestNearCacheRows(t *testing.T) {
	env := realEnv(t)
	ctx := context.Background()
	p := QuickParams()
	p.Rounds = 1
	p.HotKey.Duration = 200 * time.Millisecond
	// Local entries would live a minute: a change not heard of is served
	// stale until the run ends, Tail after the last write.
	p.OutsideWrite.Writes, p.OutsideWrite.LocalTTL, p.OutsideWrite.Tail = 8, time.Minute, 3*time.Second
	var results []benchmarks.Result
	t.Cleanup(func() {
		var b bytes.Buffer
		_ = WriteMarkdown(&b, results)
		for _, line := range Summary(results) {
			b.WriteString("summary: " + line + "\n")
		}
		t.Log("\n" + b.String())
	})

	t.Run("hot_key", func(t *testing.T) {
		hot, err := CompareHotKey(ctx, env, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, hot)
		for _, name := range []string{"asidekit", RefHotKey, Jetcache, JetcacheLocal, GoRedisCache, GoRedisCacheLocal} {
			r := hot.Row(name)
			if r == nil {
				t.Fatalf("no row %q", name)
			}
			if n, _ := r.Get(benchmarks.MetricRequests); n == 0 {
				t.Errorf("%s: no reads", name)
			}
			if e, _ := r.Get(benchmarks.MetricErrors); e != 0 {
				t.Errorf("%s: %v errors", name, e)
			}
		}
	})

	outside := []struct {
		scenario string
		ref      string
		compare  func(context.Context, *benchmarks.Env, Params, Progress) (benchmarks.Result, error)
	}{
		{"outside_write", RefOutsideWrite, CompareOutsideWrite},
		{"outside_set", RefOutsideSet, CompareOutsideSet},
	}
	for _, c := range outside {
		t.Run(c.scenario, func(t *testing.T) {
			res, err := c.compare(ctx, env, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
			checkOutsideRows(t, res, c.ref)
		})
	}
}

// checkOutsideRows asserts that every row of an outside_write or
// outside_set result read without errors, and that ref saw every write
// (writes_unseen 0) with no stale read after its window.
func checkOutsideRows(t *testing.T, res benchmarks.Result, ref string) {
	t.Helper()
	for _, name := range []string{"asidekit", ref, Jetcache, JetcacheLocal, GoRedisCache, GoRedisCacheLocal} {
		r := res.Row(name)
		if r == nil {
			t.Fatalf("no row %q", name)
		}
		if e, _ := r.Get(benchmarks.MetricErrors); e != 0 {
			t.Errorf("%s: %v errors", name, e)
		}
	}
	r := res.Row(ref)
	if n, _ := r.Get(benchmarks.MetricWritesUnseen); n != 0 {
		t.Errorf("%s: %v outside writes some reader never served, want 0", ref, n)
	}
	if n, _ := r.Get(benchmarks.MetricStaleAfter); n != 0 {
		t.Errorf("%s: %v stale reads after the window, want 0", ref, n)
	}
}
