package peers

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// TestNearCacheRows runs hot_key and outside_write at tiny sizes on real
// Redis: every row reads without errors; after an outside DEL asidekit's
// near cache (entries living a minute) serves every reader the new value
// before the run ends (none unseen), with no stale read past its window.
// The peers' figures are logged, not asserted: their local caches hear of
// no outside change and serve the old value up to their TTL, past the
// run's end.
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

	hot, err := CompareHotKey(ctx, env, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	results = append(results, hot)
	for _, name := range []string{"asidekit", RefHotKey, Jetcache, JetcacheLocal, GoRedisCache, GoRedisCacheLocal} {
		r := hot.Row(name)
		if r == nil {
			t.Fatalf("hot_key: no row %q", name)
		}
		if n, _ := r.Get(benchmarks.MetricRequests); n == 0 {
			t.Errorf("hot_key: %s: no reads", name)
		}
		if e, _ := r.Get(benchmarks.MetricErrors); e != 0 {
			t.Errorf("hot_key: %s: %v errors", name, e)
		}
	}

	out, err := CompareOutsideWrite(ctx, env, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	results = append(results, out)
	for _, name := range []string{"asidekit", RefOutsideWrite, Jetcache, JetcacheLocal, GoRedisCache, GoRedisCacheLocal} {
		r := out.Row(name)
		if r == nil {
			t.Fatalf("outside_write: no row %q", name)
		}
		if e, _ := r.Get(benchmarks.MetricErrors); e != 0 {
			t.Errorf("outside_write: %s: %v errors", name, e)
		}
	}
	ref := out.Row(RefOutsideWrite)
	if n, _ := ref.Get(benchmarks.MetricWritesUnseen); n != 0 {
		t.Errorf("%s: %v outside writes some reader never served, want 0", RefOutsideWrite, n)
	}
	if n, _ := ref.Get(benchmarks.MetricStaleAfter); n != 0 {
		t.Errorf("%s: %v stale reads after the window, want 0", RefOutsideWrite, n)
	}
	var b bytes.Buffer
	_ = WriteMarkdown(&b, results)
	for _, line := range Summary(results) {
		b.WriteString("summary: " + line + "\n")
	}
	t.Log("\n" + b.String())
}
