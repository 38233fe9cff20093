package peers

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/benchmarks"
)

// The asidekit rows of the near cache comparisons.
const (
	// RefHotKey is asidekit with a near cache (Policy.Local): hot_key's
	// vs_asidekit is ns_per_op over its.
	RefHotKey = "asidekit/local"
	// RefOutsideWrite is the same in outside_write: vs_asidekit is
	// invalidation_max_ms over its.
	RefOutsideWrite = "asidekit/local"
	// RefOutsideSet is the same in outside_set.
	RefOutsideSet = "asidekit/local"
)

// CompareHotKey runs benchmarks.RunHotKey p.Rounds times over asidekit's
// hit variants (remote only and with Policy.Local) and HotKeyVariants, in
// alternating order. Rows keep RunHotKey's metrics folded over the runs
// (ops/s and counts: means; ns/op and percentiles: medians), plus
// vs_asidekit: ns_per_op over RefHotKey's (below 1 is faster).
func CompareHotKey(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	vs := append(benchmarks.HitVariants(), HotKeyVariants()...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return benchmarks.RunHotKey(ctx, env, p.HotKey, vs)
	}
	rounds, err := interleave(ctx, "hot_key", p.rounds(), vs, false, run, progress)
	if err != nil {
		return benchmarks.Result{}, err
	}
	res := fold(rounds)
	ratios(&res, rounds, metric(benchmarks.MetricNsPerOp), func(string) string { return RefHotKey }, true)
	res.Notes = append(res.Notes,
		fmt.Sprintf("vs_asidekit: ns_per_op over %s's, median of %d interleaved runs (min/max: the runs' extremes)", RefHotKey, len(rounds)),
		"rows marked local (asidekit/local, +local) answer hits from process memory; the others make one Redis round trip per read")
	return res, nil
}

// CompareOutsideWrite runs benchmarks.RunOutsideWrite p.Rounds times over
// asidekit's OutsideWriteVariants and the peers', in alternating order,
// each variant with fresh keys every round. vs_asidekit is
// invalidation_max_ms over RefOutsideWrite's.
func CompareOutsideWrite(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	return compareOutside(ctx, env, p, progress, "outside_write", RefOutsideWrite, benchmarks.RunOutsideWrite)
}

// CompareOutsideSet is CompareOutsideWrite with benchmarks.RunOutsideSet:
// the outside writer SETs the new value into each library's key, in the
// library's encoding (see the Subjects' OutsideValue), instead of deleting
// it. vs_asidekit is invalidation_max_ms over RefOutsideSet's.
func CompareOutsideSet(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	return compareOutside(ctx, env, p, progress, "outside_set", RefOutsideSet, benchmarks.RunOutsideSet)
}

// outsideRun is benchmarks.RunOutsideWrite or RunOutsideSet.
type outsideRun func(context.Context, *benchmarks.Env, benchmarks.LocalInvalidationParams, []benchmarks.Variant) (benchmarks.Result, error)

func compareOutside(ctx context.Context, env *benchmarks.Env, p Params, progress Progress, scenario, ref string, runOutside outsideRun) (benchmarks.Result, error) {
	vs := append(benchmarks.OutsideWriteVariants(p.OutsideWrite), OutsideWriteVariants(p.OutsideWrite)...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return runOutside(ctx, env, p.OutsideWrite, vs)
	}
	rounds, err := interleave(ctx, scenario, p.rounds(), vs, true, run, progress)
	if err != nil {
		return benchmarks.Result{}, err
	}
	res := fold(rounds)
	ratios(&res, rounds, metric(benchmarks.MetricInvalidationMax), func(string) string { return ref }, false)
	res.Notes = append(res.Notes, fmt.Sprintf("vs_asidekit: invalidation_max_ms over %s's (min/max: the rounds' extremes)", ref))
	return res, nil
}

// hotKeySummary compares RefHotKey's time per read with the fastest local
// peer's.
func hotKeySummary(res benchmarks.Result) []string {
	ref := res.Row(RefHotKey)
	if ref == nil {
		return []string{"hot_key: no " + RefHotKey + " row"}
	}
	refNs, _ := ref.Get(benchmarks.MetricNsPerOp)
	var out []string
	for _, name := range []string{JetcacheLocal, GoRedisCacheLocal, "asidekit"} {
		r := res.Row(name)
		if r == nil {
			continue
		}
		ns, _ := r.Get(benchmarks.MetricNsPerOp)
		p99, _ := r.Get(benchmarks.MetricP99us)
		refP99, _ := ref.Get(benchmarks.MetricP99us)
		out = append(out, fmt.Sprintf("hot_key: %s %.0f ns/op (p99 %.1f µs), %s %.0f ns/op (p99 %.1f µs): %.2f× its time per read",
			RefHotKey, refNs, refP99, name, ns, p99, ratio(refNs, ns)))
	}
	return out
}

// outsideWriteSummary states, for every row, how long the old value was
// served after an outside DEL (outside_write) or SET (outside_set) and how
// many stale reads that made.
func outsideWriteSummary(res benchmarks.Result) []string {
	cmd := "DEL"
	if res.Scenario == "outside_set" {
		cmd = "SET"
	}
	var out []string
	for _, r := range res.Rows {
		mx, _ := r.Get(benchmarks.MetricInvalidationMax)
		p50, _ := r.Get(benchmarks.MetricInvalidationP50)
		stale, _ := r.Get(benchmarks.MetricStaleReads)
		unseen, _ := r.Get(benchmarks.MetricWritesUnseen)
		if unseen > 0 {
			out = append(out, fmt.Sprintf("%s: %s still served the old value when the run ended, %.1f ms after a plain %s, for %s of the writes (%s stale reads)",
				res.Scenario, r.Variant, mx, cmd, num(unseen), num(stale)))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s served the old value up to %.1f ms after a plain %s (p50 %.1f ms; %s stale reads)",
			res.Scenario, r.Variant, mx, cmd, p50, num(stale)))
	}
	return out
}
