package peers

import (
	"context"
	"fmt"
	"strings"

	"github.com/asidekit/asidekit/benchmarks"
)

// The asidekit rows each scenario's vs_asidekit is relative to.
const (
	// RefHit is asidebench's hit variant (cacheaside.Entity.Get, Mutex
	// policy); hit rows are compared with it at the same value size.
	RefHit = "asidekit"
	// RefPenetration is asidekit's null cache, the guard every peer but
	// go-redis/cache has too. (asidekit/bloom_null, its recommended guard,
	// often makes no DB load at all, which no ratio can be taken to.)
	RefPenetration = "asidekit/null_cache"
	// RefBreakdown is asidekit's shared rebuild: one load across processes
	// under a Redis lease, waiters woken by pub/sub.
	RefBreakdown = "asidekit/mutex"
)

// MetricVsAsidekit is a row's key figure over the reference row's. Hit: its
// time over asidekit's in the same batches of reads (RunHit's per-batch
// ratio to bare over asidekit's), the median of the runs. Penetration:
// db_loads. Breakdown: db_loads_per_expiry. Below 1 is better than asidekit.
// MetricVsAsidekitMin and MetricVsAsidekitMax are the smallest and largest
// per-round ratios: the spread that tells a difference from noise.
const (
	MetricVsAsidekit    = "vs_asidekit"
	MetricVsAsidekitMin = "vs_asidekit_min"
	MetricVsAsidekitMax = "vs_asidekit_max"
)

// Progress, if set, is told when each round of a comparison starts.
type Progress func(scenario string, round, rounds int)

// CompareHit runs benchmarks.RunHit p.Rounds times over asidekit's hit
// variant, AsidekitMsgpack and the peers' (the harness adds its bare GET +
// decode baseline and runs every variant in each batch of reads, in
// rotating order; whole runs alternate forward and reverse order). Rows
// keep RunHit's metrics, folded over the runs, plus vs_asidekit.
func CompareHit(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	vs := append(benchmarks.HitVariants(), msgpackVariant())
	vs = append(vs, HitVariants()...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return benchmarks.RunHit(ctx, env, p.Hit, vs)
	}
	rounds, err := interleave(ctx, "hit", p.rounds(), vs, false, run, progress)
	if err != nil {
		return benchmarks.Result{}, err
	}
	res := fold(rounds)
	ratios(&res, rounds, hitKey, func(row string) string {
		i := strings.LastIndexByte(row, '/')
		return RefHit + row[i:] // same value size
	}, true)
	res.Notes = append(res.Notes,
		fmt.Sprintf("vs_asidekit: time per read over %s's at the same value size in the same batches (ratio over %s's ratio), median of %d interleaved runs (min/max: the runs' extremes)", RefHit, RefHit, len(rounds)),
		"rows marked +local answer hits from process memory: they are outside the remote-only comparison")
	return res, nil
}

// ComparePenetration runs benchmarks.RunPenetration p.Rounds times over
// asidekit's penetration variants (named asidekit/…) and the peers', in
// alternating order, each variant in a fresh key namespace every round.
// vs_asidekit is db_loads over RefPenetration's.
func ComparePenetration(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	vs := append(prefixed(benchmarks.PenetrationVariants(p.Penetration)), PenetrationVariants(p.Penetration)...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return benchmarks.RunPenetration(ctx, env, p.Penetration, vs)
	}
	rounds, err := interleave(ctx, "penetration", p.rounds(), vs, true, run, progress)
	if err != nil {
		return benchmarks.Result{}, err
	}
	res := fold(rounds)
	ratios(&res, rounds, metric(benchmarks.MetricDBLoads), func(string) string { return RefPenetration }, false)
	res.Notes = append(res.Notes, fmt.Sprintf("vs_asidekit: db_loads over %s's (min/max: the rounds' extremes)", RefPenetration))
	return res, nil
}

// CompareBreakdown runs benchmarks.RunBreakdown p.Rounds times over
// asidekit's strategies (named asidekit/…) and the peers', in alternating
// order, each variant in a fresh key namespace every round.
// db_loads_per_expiry is recomputed over all rounds (loads / expiries);
// vs_asidekit is it over RefBreakdown's.
func CompareBreakdown(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	vs := append(prefixed(benchmarks.BreakdownVariants(p.Breakdown)), BreakdownVariants(p.Breakdown)...)
	run := func(ctx context.Context, vs []benchmarks.Variant) (benchmarks.Result, error) {
		return benchmarks.RunBreakdown(ctx, env, p.Breakdown, vs)
	}
	rounds, err := interleave(ctx, "breakdown", p.rounds(), vs, true, run, progress)
	if err != nil {
		return benchmarks.Result{}, err
	}
	res := fold(rounds)
	ratios(&res, rounds, metric(benchmarks.MetricDBLoadsPerExpiry), func(string) string { return RefBreakdown }, false)
	res.Notes = append(res.Notes, fmt.Sprintf("vs_asidekit: db_loads_per_expiry over %s's (min/max: the rounds' extremes)", RefBreakdown))
	return res, nil
}

// hitKey is the figure hit rows are compared by: RunHit's ratio (the
// median over batches of the row's time over bare's in the same batch), so
// that ratio over ratio compares two variants read in the same batches;
// ns_per_op if the row has no ratio.
func hitKey(r *benchmarks.Row) (float64, bool) {
	if v, ok := r.Get(benchmarks.MetricRatio); ok {
		return v, true
	}
	return r.Get(benchmarks.MetricNsPerOp)
}

// metric returns a key function reading metric name.
func metric(name string) func(*benchmarks.Row) (float64, bool) {
	return func(r *benchmarks.Row) (float64, bool) { return r.Get(name) }
}

// prefixed returns asidekit's variants named "asidekit/<name>".
func prefixed(vs []benchmarks.Variant) []benchmarks.Variant {
	out := make([]benchmarks.Variant, len(vs))
	for i, v := range vs {
		v.Name = "asidekit/" + v.Name
		out[i] = v
	}
	return out
}

// roundSep separates a variant's name from its round number when each
// round needs fresh keys (the harness derives the namespace from the name).
const roundSep = "#"

// interleave calls run rounds times: odd rounds with vs in order, even
// rounds reversed. With fresh, each round's variants are renamed
// name#round so that they start with empty keys; the returned rows carry
// the plain names again.
func interleave(ctx context.Context, scenario string, rounds int, vs []benchmarks.Variant, fresh bool,
	run func(context.Context, []benchmarks.Variant) (benchmarks.Result, error), progress Progress) ([]benchmarks.Result, error) {
	out := make([]benchmarks.Result, 0, rounds)
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(scenario, r+1, rounds)
		}
		order := make([]benchmarks.Variant, len(vs))
		for i := range vs {
			j := i
			if r%2 == 1 {
				j = len(vs) - 1 - i
			}
			v := vs[j]
			if fresh {
				v.Name = fmt.Sprintf("%s%s%d", v.Name, roundSep, r+1)
			}
			order[i] = v
		}
		res, err := run(ctx, order)
		if err != nil {
			return nil, fmt.Errorf("%s: round %d: %w", scenario, r+1, err)
		}
		if fresh {
			suffix := fmt.Sprintf("%s%d", roundSep, r+1)
			for i := range res.Rows {
				res.Rows[i].Variant = strings.TrimSuffix(res.Rows[i].Variant, suffix)
			}
			for i, n := range res.Notes {
				res.Notes[i] = strings.ReplaceAll(n, suffix+":", ":")
			}
		}
		out = append(out, res)
	}
	return out, nil
}
