package peers

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

func row(name string, kv ...float64) benchmarks.Row {
	names := []string{benchmarks.MetricDBLoads, benchmarks.MetricExpiries, benchmarks.MetricDBLoadsPerExpiry, benchmarks.MetricP99, benchmarks.MetricMax}
	r := benchmarks.Row{Variant: name, Notes: name + " notes"}
	for i, v := range kv {
		r.Set(names[i], v)
	}
	return r
}

func get(t *testing.T, res benchmarks.Result, variant, metric string) float64 {
	t.Helper()
	r := res.Row(variant)
	if r == nil {
		t.Fatalf("no row %q", variant)
	}
	v, ok := r.Get(metric)
	if !ok {
		t.Fatalf("%s: no metric %q", variant, metric)
	}
	return v
}

// TestFold_breakdownRounds folds three breakdown rounds: counts are means,
// p99 the median, max the largest, loads per expiry recomputed from the
// totals (not the mean of the rounds' ratios), rows in first-seen order,
// notes without repeats, params with the round count.
func TestFold_breakdownRounds(t *testing.T) {
	rounds := []benchmarks.Result{
		{Scenario: "breakdown", Params: map[string]any{"ttl": "3s"}, Notes: []string{"n1"},
			Rows: []benchmarks.Row{row(RefBreakdown, 2, 2, 1, 10, 50), row(GoZero, 8, 2, 4, 1, 20)}},
		{Scenario: "breakdown", Notes: []string{"n1", "n2"},
			Rows: []benchmarks.Row{row(GoZero, 3, 1, 3, 3, 90), row(RefBreakdown, 3, 3, 1, 30, 40)}},
		{Scenario: "breakdown",
			Rows: []benchmarks.Row{row(RefBreakdown, 4, 4, 1, 20, 60), row(GoZero, 1, 1, 1, 2, 10)}},
	}
	res := fold(rounds)
	if got := []string{res.Rows[0].Variant, res.Rows[1].Variant}; !slices.Equal(got, []string{RefBreakdown, GoZero}) {
		t.Errorf("row order %v", got)
	}
	if v := get(t, res, GoZero, benchmarks.MetricDBLoads); v != 4 {
		t.Errorf("go-zero db_loads = %v, want mean 4", v)
	}
	if v := get(t, res, GoZero, benchmarks.MetricDBLoadsPerExpiry); v != 3 {
		t.Errorf("go-zero db_loads_per_expiry = %v, want 12/4 = 3", v)
	}
	if v := get(t, res, RefBreakdown, benchmarks.MetricP99); v != 20 {
		t.Errorf("p99 = %v, want median 20", v)
	}
	if v := get(t, res, GoZero, benchmarks.MetricMax); v != 90 {
		t.Errorf("max = %v, want 90", v)
	}
	if !slices.Equal(res.Notes, []string{"n1", "n2"}) {
		t.Errorf("notes %q", res.Notes)
	}
	if p := res.Params.(map[string]any); p["interleaved_runs"] != 3 || p["ttl"] != "3s" {
		t.Errorf("params %v", p)
	}
	if res.Rows[1].Notes != GoZero+" notes" {
		t.Errorf("row notes %q", res.Rows[1].Notes)
	}

	ratios(&res, rounds, metric(benchmarks.MetricDBLoadsPerExpiry), func(string) string { return RefBreakdown }, false)
	if v := get(t, res, GoZero, MetricVsAsidekit); v != 3 {
		t.Errorf("vs_asidekit = %v, want 3", v)
	}
	if lo, hi := get(t, res, GoZero, MetricVsAsidekitMin), get(t, res, GoZero, MetricVsAsidekitMax); lo != 1 || hi != 4 {
		t.Errorf("vs_asidekit range %v–%v, want 1–4", lo, hi)
	}
	if v := get(t, res, RefBreakdown, MetricVsAsidekit); v != 1 {
		t.Errorf("reference's own vs_asidekit = %v", v)
	}
}

// TestRatio_zeros: 0/0 is equal, x/0 infinite.
func TestRatio_zeros(t *testing.T) {
	if r := ratio(0, 0); r != 1 {
		t.Errorf("0/0 = %v", r)
	}
	if r := ratio(3, 0); !math.IsInf(r, 1) {
		t.Errorf("3/0 = %v", r)
	}
	if r := ratio(3, 2); r != 1.5 {
		t.Errorf("3/2 = %v", r)
	}
}

// TestInterleave_alternatesAndRenames checks the order of the rounds
// (forward, reverse, forward), the per-round names that give each round
// fresh keys, and that rows and notes come back with plain names.
func TestInterleave_alternatesAndRenames(t *testing.T) {
	vs := []benchmarks.Variant{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	var orders [][]string
	var seen []int
	run := func(_ context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		var names []string
		res := benchmarks.Result{}
		for _, v := range vs {
			names = append(names, v.Name)
			res.Rows = append(res.Rows, benchmarks.Row{Variant: v.Name})
		}
		res.Notes = []string{vs[0].Name + ": first error: boom"}
		orders = append(orders, names)
		return res, nil
	}
	rounds, err := interleave(context.Background(), "x", 3, vs, true, run, func(_ string, r, n int) {
		if n != 3 {
			t.Errorf("rounds = %d", n)
		}
		seen = append(seen, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a#1", "b#1", "c#1"}, {"c#2", "b#2", "a#2"}, {"a#3", "b#3", "c#3"}}
	for i := range want {
		if !slices.Equal(orders[i], want[i]) {
			t.Errorf("round %d order %v, want %v", i+1, orders[i], want[i])
		}
	}
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Errorf("progress rounds %v", seen)
	}
	if got := rounds[1].Rows[0].Variant; got != "c" {
		t.Errorf("round 2 row 0 = %q, want c", got)
	}
	if got := rounds[1].Notes[0]; got != "c: first error: boom" {
		t.Errorf("round 2 note = %q", got)
	}

	orders = nil
	if _, err := interleave(context.Background(), "x", 2, vs, false, run, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(orders[1], []string{"c", "b", "a"}) {
		t.Errorf("without fresh names, round 2 order %v", orders[1])
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := interleave(ctx, "x", 2, vs, false, run, nil); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestSummary_verdicts checks the hit verdicts (at least as fast, within
// noise, slower; local caches left out) and the count comparisons.
func TestSummary_verdicts(t *testing.T) {
	hitRow := func(name string, ns, vs, lo, hi float64) benchmarks.Row {
		r := benchmarks.Row{Variant: name}
		r.Set(benchmarks.MetricNsPerOp, ns)
		r.Set(MetricVsAsidekit, vs)
		r.Set(MetricVsAsidekitMin, lo)
		r.Set(MetricVsAsidekitMax, hi)
		return r
	}
	hit := benchmarks.Result{Scenario: "hit", Rows: []benchmarks.Row{
		hitRow("bare/16KB", 100, 1, 0.98, 1.03), // bare up to 3% slower than asidekit
		hitRow("asidekit/16KB", 100, 1, 1, 1),
		hitRow(Rockscache+"/16KB", 98, 0.98, 0.975, 0.985),
		hitRow("asidekit/200B", 100, 1, 1, 1),
		hitRow(GoZero+"/200B", 120, 1.2, 1.1, 1.3),
		hitRow(GoRedisCacheLocal+"/200B", 5, 0.05, 0.04, 0.06), // local: ignored
		hitRow("asidekit/4KB", 100, 1, 1, 1),
		hitRow(Jetcache+"/4KB", 98, 0.98, 0.95, 1.02),
		hitRow("asidekit/8KB", 100, 1, 1, 1),
		hitRow(GoRedisCache+"/8KB", 80, 0.8, 0.75, 0.85),
	}}
	bd := benchmarks.Result{Scenario: "breakdown", Rows: []benchmarks.Row{row(RefBreakdown, 4, 4, 1), row(Rockscache, 3, 3, 1), row(GoZero, 8, 4, 2)}}
	bad := benchmarks.Result{Scenario: "breakdown", Rows: []benchmarks.Row{row(RefBreakdown, 6, 4, 1.5), row(Rockscache, 4, 4, 1)}}
	got := strings.Join(Summary([]benchmarks.Result{hit, bd, bad}), "\n")
	for _, want := range []string{
		"hit 200B: asidekit 100 ns/op, at least as fast as the fastest remote-only peer go-zero",
		"hit 4KB: asidekit 100 ns/op, within noise of the fastest remote-only peer jetcache",
		"hit 8KB: asidekit 100 ns/op, slower than the fastest remote-only peer go-redis/cache (80 ns/op): time ratio 1.250",
		"hit 16KB: asidekit 100 ns/op, within noise of the fastest remote-only peer rockscache (98 ns/op): time ratio 1.020 (runs 1.015–1.026; noise floor 3.0%)",
		"asidekit/mutex 1, no higher than any peer's (rockscache 1, go-zero 2)",
		"asidekit/mutex 1.50, HIGHER than rockscache 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestRefreshInterval(t *testing.T) {
	for _, c := range []struct{ ttl, want time.Duration }{
		{3 * time.Second, 2 * time.Second},
		{time.Second, time.Second},
		{time.Hour, 40 * time.Minute},
	} {
		if got := refreshInterval(c.ttl); got != c.want {
			t.Errorf("refreshInterval(%v) = %v, want %v", c.ttl, got, c.want)
		}
	}
}
