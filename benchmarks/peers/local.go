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
	return compareHotKey(ctx, env, p, progress, "hot_key")
}

func compareHotKey(ctx context.Context, env *benchmarks.Env, p Params, progress Progress, scenario string) (benchmarks.Result, error) {
	vs := append(benchmarks.HitVariants(), HotKeyVariants()...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return benchmarks.RunHotKey(ctx, env, p.HotKey, vs)
	}
	rounds, err := interleave(ctx, scenario, p.rounds(), vs, false, run, progress)
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
	return compareOutside(ctx, env, p, progress, "outside_write", RefOutsideWrite, benchmarks.RunOutsideWrite, OutsideWriteVariants)
}

// CompareOutsideSet is CompareOutsideWrite with benchmarks.RunOutsideSet:
// the outside writer SETs the new value into each library's key, in the
// library's encoding (see the Subjects' OutsideValue), instead of deleting
// it. vs_asidekit is invalidation_max_ms over RefOutsideSet's.
func CompareOutsideSet(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	return compareOutside(ctx, env, p, progress, "outside_set", RefOutsideSet, benchmarks.RunOutsideSet, OutsideWriteVariants)
}

// outsideRun is benchmarks.RunOutsideWrite or RunOutsideSet.
type outsideRun func(context.Context, *benchmarks.Env, benchmarks.LocalInvalidationParams, []benchmarks.Variant) (benchmarks.Result, error)

// peerVariants are a scenario's peer variants for its sizes.
type peerVariants func(benchmarks.LocalInvalidationParams) []benchmarks.Variant

func compareOutside(ctx context.Context, env *benchmarks.Env, p Params, progress Progress, scenario, ref string, runOutside outsideRun, peers peerVariants) (benchmarks.Result, error) {
	vs := append(benchmarks.OutsideWriteVariants(p.OutsideWrite), peers(p.OutsideWrite)...)
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
	for _, name := range []string{JetcacheLocal, GoRedisCacheLocal, "asidekit", Jetcache, GoRedisCache} {
		r := res.Row(name)
		if r == nil {
			continue
		}
		ns, _ := r.Get(benchmarks.MetricNsPerOp)
		p99, _ := r.Get(benchmarks.MetricP99us)
		refP99, _ := ref.Get(benchmarks.MetricP99us)
		out = append(out, fmt.Sprintf("%s: %s %.0f ns/op (p99 %.1f µs), %s %.0f ns/op (p99 %.1f µs): %.2f× its time per read",
			res.Scenario, RefHotKey, refNs, refP99, name, ns, p99, ratio(refNs, ns)))
	}
	return out
}

// outsideWriteSummary states, for every row, how long the old value was
// served after an outside DEL (outside_write) or SET (outside_set) and how
// many stale reads that made.
func outsideWriteSummary(res benchmarks.Result) []string {
	how := outsideSummaryHow(res.Scenario)
	var out []string
	for _, r := range res.Rows {
		mx, _ := r.Get(benchmarks.MetricInvalidationMax)
		p50, _ := r.Get(benchmarks.MetricInvalidationP50)
		stale, _ := r.Get(benchmarks.MetricStaleReads)
		after, _ := r.Get(benchmarks.MetricStaleAfter)
		age, _ := r.Get(benchmarks.MetricStaleAgeMax)
		unseen, _ := r.Get(benchmarks.MetricWritesUnseen)
		reads := fmt.Sprintf("%s stale reads, %s after the window, the oldest %.1f ms", num(stale), num(after), age)
		if unseen > 0 {
			out = append(out, fmt.Sprintf("%s: %s still served the old value when the run ended, %.1f ms after %s, for %s of the writes (%s)",
				res.Scenario, r.Variant, mx, how, num(unseen), reads))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s served the old value up to %.1f ms after %s (p50 %.1f ms; %s)",
			res.Scenario, r.Variant, mx, how, p50, reads))
	}
	return out
}
