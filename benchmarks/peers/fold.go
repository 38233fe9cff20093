package peers

import (
	"maps"
	"math"
	"slices"

	"github.com/asidekit/asidekit/benchmarks"
)

// fold merges the rounds of one scenario into one Result: rows in the
// first round's order, each metric folded over the rounds (see foldMetric),
// db_loads_per_expiry recomputed from the folded loads and expiries, notes
// of every round without repeats, params with "rounds" added.
func fold(rounds []benchmarks.Result) benchmarks.Result {
	if len(rounds) == 0 {
		return benchmarks.Result{}
	}
	first := rounds[0]
	res := benchmarks.Result{Scenario: first.Scenario, Backend: first.Backend, Busy: first.Busy, BusyMode: first.BusyMode}
	params := map[string]any{}
	if m, ok := first.Params.(map[string]any); ok {
		maps.Copy(params, m)
	}
	params["interleaved_runs"] = len(rounds) // "rounds" is asidebench's own (hit batches)
	res.Params = params

	var names []string
	for _, r := range rounds {
		for _, row := range r.Rows {
			if !slices.Contains(names, row.Variant) {
				names = append(names, row.Variant)
			}
		}
	}
	for _, name := range names {
		out := benchmarks.Row{Variant: name}
		var metrics []string
		values := map[string][]float64{}
		for _, r := range rounds {
			row := r.Row(name)
			if row == nil {
				continue
			}
			if out.Notes == "" {
				out.Notes = row.Notes
			}
			for _, m := range row.Metrics {
				if _, seen := values[m.Name]; !seen {
					metrics = append(metrics, m.Name)
				}
				values[m.Name] = append(values[m.Name], m.Value)
			}
		}
		for _, m := range metrics {
			out.Set(m, foldMetric(m, values[m]))
		}
		if _, ok := out.Get(benchmarks.MetricDBLoadsPerExpiry); ok {
			loads, _ := out.Get(benchmarks.MetricDBLoads)
			exp, _ := out.Get(benchmarks.MetricExpiries)
			per := 0.0
			if exp > 0 {
				per = loads / exp
			}
			out.Set(benchmarks.MetricDBLoadsPerExpiry, per)
		}
		res.Rows = append(res.Rows, out)
	}
	for _, r := range rounds {
		for _, n := range r.Notes {
			if !slices.Contains(res.Notes, n) {
				res.Notes = append(res.Notes, n)
			}
		}
	}
	return res
}

// foldMetric folds one metric's per-round values: the median for
// ns_per_op, ratios and latency percentiles, the largest for max_ms,
// invalidation_max_ms and stale_age_max_ms, the
// first for value_bytes, the mean for counts (requests, errors, DB loads,
// expiries, round trips, allocations).
func foldMetric(name string, v []float64) float64 {
	switch name {
	case benchmarks.MetricNsPerOp, benchmarks.MetricRatio, benchmarks.MetricP50, benchmarks.MetricP99,
		benchmarks.MetricP50us, benchmarks.MetricP99us, benchmarks.MetricInvalidationP50, benchmarks.MetricInvalidationP99:
		return median(v)
	case benchmarks.MetricMax, benchmarks.MetricInvalidationMax, benchmarks.MetricStaleAgeMax:
		return slices.Max(v)
	case benchmarks.MetricValueBytes:
		return v[0]
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// ratios sets vs_asidekit, vs_asidekit_min and vs_asidekit_max on every
// row of res: key of the row over key of ref(row), per round (min, max)
// and overall, either the median of the per-round ratios (medianOfRounds)
// or the ratio of the folded values.
func ratios(res *benchmarks.Result, rounds []benchmarks.Result, key func(*benchmarks.Row) (float64, bool), ref func(row string) string, medianOfRounds bool) {
	for i := range res.Rows {
		row := &res.Rows[i]
		refName := ref(row.Variant)
		var per []float64
		for _, r := range rounds {
			a, b := r.Row(row.Variant), r.Row(refName)
			if a == nil || b == nil {
				continue
			}
			x, okx := key(a)
			y, oky := key(b)
			if okx && oky {
				per = append(per, ratio(x, y))
			}
		}
		refRow := res.Row(refName)
		if len(per) == 0 || refRow == nil {
			continue
		}
		var overall float64
		if medianOfRounds {
			overall = median(per)
		} else {
			x, _ := key(row)
			y, _ := key(refRow)
			overall = ratio(x, y)
		}
		row.Set(MetricVsAsidekit, overall)
		row.Set(MetricVsAsidekitMin, slices.Min(per))
		row.Set(MetricVsAsidekitMax, slices.Max(per))
	}
}

// ratio is a/b, with 0/0 = 1 (equal) and a/0 = +Inf.
func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
