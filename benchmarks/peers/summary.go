package peers

import (
	"fmt"
	"math"
	"strings"

	"github.com/asidekit/asidekit/benchmarks"
)

// Summary answers the comparison's two questions from folded results, one
// line per finding:
//
//   - hit: for each value size, asidekit's ns/op over the fastest
//     remote-only peer's (the inverse of that peer's vs_asidekit), with the
//     per-run range, and whether that is faster, within noise (the range
//     reaches 1) or slower;
//   - breakdown: RefBreakdown's DB loads per expiry against every peer's;
//   - penetration: RefPenetration's DB loads against every peer's.
func Summary(results []benchmarks.Result) []string {
	var out []string
	for _, res := range results {
		switch res.Scenario {
		case "hit":
			out = append(out, hitSummary(res)...)
		case "breakdown":
			out = append(out, countSummary(res, RefBreakdown, benchmarks.MetricDBLoadsPerExpiry, "DB loads per hot-key expiry"))
		case "penetration":
			out = append(out, countSummary(res, RefPenetration, benchmarks.MetricDBLoads, "DB loads for absent ids"))
		}
	}
	return out
}

// hitSummary compares RefHit with the fastest remote-only peer per size.
func hitSummary(res benchmarks.Result) []string {
	var out []string
	for _, ref := range res.Rows {
		name, size, ok := strings.Cut(ref.Variant, "/")
		if !ok || name != RefHit {
			continue
		}
		refNs, _ := ref.Get(benchmarks.MetricNsPerOp)
		var best *benchmarks.Row
		bestVs := math.Inf(1)
		for i := range res.Rows {
			r := &res.Rows[i]
			peer, ok := strings.CutSuffix(r.Variant, "/"+size)
			if !ok || !isPeer(peer) || LocalCached(peer) {
				continue
			}
			if vs, ok := r.Get(MetricVsAsidekit); ok && vs < bestVs {
				best, bestVs = r, vs
			}
		}
		if best == nil {
			continue
		}
		peerNs, _ := best.Get(benchmarks.MetricNsPerOp)
		lo, _ := best.Get(MetricVsAsidekitMin)
		hi, _ := best.Get(MetricVsAsidekitMax)
		// asidekit over the peer is the inverse of the peer over asidekit.
		r, rlo, rhi := 1/bestVs, 1/hi, 1/lo
		verdict := "slower than"
		switch {
		case r <= 1:
			verdict = "at least as fast as"
		case rlo <= 1:
			verdict = "within noise of"
		}
		out = append(out, fmt.Sprintf("hit %s: asidekit %.0f ns/op, %s the fastest remote-only peer %s (%.0f ns/op): ratio %.3f (runs %.3f–%.3f)",
			size, refNs, verdict, strings.TrimSuffix(best.Variant, "/"+size), peerNs, r, rlo, rhi))
	}
	return out
}

// countSummary compares ref's metric with every peer's: lower is better.
func countSummary(res benchmarks.Result, ref, metric, what string) string {
	refRow := res.Row(ref)
	if refRow == nil {
		return fmt.Sprintf("%s: no %s row", res.Scenario, ref)
	}
	refV, _ := refRow.Get(metric)
	var worse, better []string
	for _, r := range res.Rows {
		if !isPeer(r.Variant) {
			continue
		}
		v, ok := r.Get(metric)
		if !ok {
			continue
		}
		item := fmt.Sprintf("%s %s", r.Variant, num(v))
		if v < refV {
			better = append(better, item)
		} else {
			worse = append(worse, item)
		}
	}
	s := fmt.Sprintf("%s: %s %s %s", res.Scenario, what, ref, num(refV))
	if len(better) == 0 {
		return s + fmt.Sprintf(", no higher than any peer's (%s)", strings.Join(worse, ", "))
	}
	return s + fmt.Sprintf(", HIGHER than %s (the others: %s)", strings.Join(better, ", "), strings.Join(worse, ", "))
}

func isPeer(name string) bool {
	switch name {
	case GoZero, Rockscache, Jetcache, JetcacheLocal, GoRedisCache, GoRedisCacheLocal:
		return true
	}
	return false
}

func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
