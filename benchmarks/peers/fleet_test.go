package peers

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// TestFleetRows runs library_delete and the fleet-shape scenarios at tiny
// sizes on real Redis: every variant read (and, in the outside scenarios,
// wrote) without an error, and asidekit's near cache left no write unseen
// and no stale read past the window, whether the writer deleted with a
// plain DEL or through asidekit, while the peers' local tiers (entries
// living a minute, told of nothing) served some past the fleet window: so
// no scenario read another's keys (it did once, sharing namespaces, and
// every row looked fresh). Counts only: the speeds are logged.
func TestFleetRows(t *testing.T) {
	env := realEnv(t)
	ctx := context.Background()
	p := QuickParams()
	p.Rounds = 1
	p.HotKeyFleet.Load = benchmarks.Load{Instances: 2, Goroutines: 2}
	p.HotKeyFleet.KeySpace, p.HotKeyFleet.Duration = 200, 200*time.Millisecond
	p.OutsideWrite.Writes, p.OutsideWrite.LocalTTL, p.OutsideWrite.Tail = 8, time.Minute, 2*time.Second
	w := &p.OutsideWriteFleet
	w.Load = benchmarks.Load{Instances: 2, Goroutines: 2}
	w.KeySpace, w.Writes, w.WriteEvery, w.LocalTTL, w.Tail = 100, 12, 20*time.Millisecond, time.Minute, time.Second
	var results []benchmarks.Result
	t.Cleanup(func() {
		var b bytes.Buffer
		_ = WriteMarkdown(&b, results)
		for _, line := range Summary(results) {
			b.WriteString("summary: " + line + "\n")
		}
		t.Log("\n" + b.String())
	})

	t.Run(HotKeyFleet, func(t *testing.T) {
		res, err := CompareHotKeyFleet(ctx, env, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		if res.Scenario != HotKeyFleet || len(res.Rows) != 6 {
			t.Fatalf("scenario %q with %d rows, want %s with 6", res.Scenario, len(res.Rows), HotKeyFleet)
		}
		checkRows(t, res, false)
	})
	for _, c := range []struct {
		scenario string
		compare  func(context.Context, *benchmarks.Env, Params, Progress) (benchmarks.Result, error)
		rows     int
	}{
		{LibraryDelete, CompareLibraryDelete, 8},
		{OutsideWriteFleet, CompareOutsideWriteFleet, 6},
		{LibraryDeleteFleet, CompareLibraryDeleteFleet, 8},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			res, err := c.compare(ctx, env, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
			if res.Scenario != c.scenario || len(res.Rows) != c.rows {
				t.Fatalf("scenario %q with %d rows, want %s with %d", res.Scenario, len(res.Rows), c.scenario, c.rows)
			}
			checkRows(t, res, true)
			if c.scenario != LibraryDelete {
				for _, name := range []string{JetcacheLocal, GoRedisCacheLocal} {
					if n, _ := res.Row(name).Get(benchmarks.MetricStaleAfter); n == 0 {
						t.Errorf("%s: no stale read after the window from a local tier that hears of no write", name)
					}
				}
			}
			r := res.Row(RefLibraryDelete)
			for _, m := range []string{benchmarks.MetricWritesUnseen, benchmarks.MetricStaleAfter} {
				if n, _ := r.Get(m); n != 0 {
					t.Errorf("%s: %s %v, want 0", RefLibraryDelete, m, n)
				}
			}
		})
	}
}

// checkRows asserts that every row read, wrote when writes, and had no
// error.
func checkRows(t *testing.T, res benchmarks.Result, writes bool) {
	t.Helper()
	for _, r := range res.Rows {
		if n, _ := r.Get(benchmarks.MetricRequests); n == 0 {
			t.Errorf("%s: no reads", r.Variant)
		}
		if n, _ := r.Get(benchmarks.MetricWrites); writes && n == 0 {
			t.Errorf("%s: no writes", r.Variant)
		}
		if e, _ := r.Get(benchmarks.MetricErrors); e != 0 {
			t.Errorf("%s: %v errors", r.Variant, e)
		}
	}
}
