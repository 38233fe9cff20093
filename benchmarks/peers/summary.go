package peers

import (
	"fmt"
	"math"
	"strings"

	"github.com/asidekit/asidekit/benchmarks"
)

// RefBloomNull is asidekit's recommended penetration guard: Bloom filter
// and null cache. Summary compares it with the peers' best too.
const RefBloomNull = "asidekit/bloom_null"

// Summary answers the comparison's questions from folded results, one line
// per finding:
//
//   - hit: for each value size, asidekit's time per read over the fastest
//     remote-only peer's (the inverse of that peer's vs_asidekit), with the
//     runs' range, and whether that is at least as fast, within noise or
//     slower (see hitVerdict); then the same for AsidekitMsgpack;
//   - breakdown: RefBreakdown's DB loads per expiry against every peer's;
//   - penetration: RefBloomNull's and RefPenetration's DB loads against
//     every peer's.
func Summary(results []benchmarks.Result) []string {
	var out []string
	for _, res := range results {
		switch res.Scenario {
		case "hit":
			out = append(out, hitSummary(res)...)
		case "breakdown":
			out = append(out, countSummary(res, RefBreakdown, benchmarks.MetricDBLoadsPerExpiry, "DB loads per hot-key expiry"))
		case "hot_key", HotKeyFleet:
			out = append(out, hotKeySummary(res)...)
		case "outside_write", "outside_set", OutsideWriteFleet, LibraryDelete, LibraryDeleteFleet:
			out = append(out, outsideWriteSummary(res)...)
		case "penetration":
			out = append(out,
				countSummary(res, RefBloomNull, benchmarks.MetricDBLoads, "DB loads for absent ids"),
				countSummary(res, RefPenetration, benchmarks.MetricDBLoads, "DB loads for absent ids"))
		}
	}
	return out
}

// hitSummary compares RefHit (and AsidekitMsgpack) with the fastest
// remote-only peer at each value size.
func hitSummary(res benchmarks.Result) []string {
	var out []string
	for _, ref := range res.Rows {
		size, ok := strings.CutPrefix(ref.Variant, RefHit+"/")
		if !ok {
			continue
		}
		best, bestVs := fastestPeer(res, size)
		if best == nil {
			continue
		}
		refNs, _ := ref.Get(benchmarks.MetricNsPerOp)
		peerNs, _ := best.Get(benchmarks.MetricNsPerOp)
		lo, _ := best.Get(MetricVsAsidekitMin)
		hi, _ := best.Get(MetricVsAsidekitMax)
		// asidekit over the peer is the inverse of the peer over asidekit.
		r, rlo, rhi := 1/bestVs, 1/hi, 1/lo
		floor := 0.0
		if bare := res.Row("bare/" + size); bare != nil {
			if v, ok := bare.Get(MetricVsAsidekitMax); ok {
				floor = max(v-1, 0)
			}
		}
		peer := strings.TrimSuffix(best.Variant, "/"+size)
		out = append(out, fmt.Sprintf("hit %s: %s %.0f ns/op, %s the fastest remote-only peer %s (%.0f ns/op): time ratio %.3f (runs %.3f–%.3f; noise floor %.1f%%)",
			size, RefHit, refNs, hitVerdict(r, rlo, floor), peer, peerNs, r, rlo, rhi, 100*floor))
		if m := res.Row(AsidekitMsgpack + "/" + size); m != nil {
			mvs, _ := m.Get(MetricVsAsidekit)
			mNs, _ := m.Get(benchmarks.MetricNsPerOp)
			out = append(out, fmt.Sprintf("hit %s: %s %.0f ns/op: time ratio %.3f to %s (medians)", size, AsidekitMsgpack, mNs, mvs/bestVs, peer))
		}
	}
	return out
}

// hitVerdict judges asidekit's time ratio r to a peer, whose runs ranged
// down to rlo: at least as fast (r ≤ 1), within noise (some run reached 1,
// or r exceeds 1 by no more than floor) or slower. floor is how much slower
// than asidekit the bare GET + json.Unmarshal baseline measured in its
// worst run: bare does strictly less work than asidekit, so a difference of
// that size is the measurement's own error.
func hitVerdict(r, rlo, floor float64) string {
	switch {
	case r <= 1:
		return "at least as fast as"
	case rlo <= 1 || r-1 <= floor:
		return "within noise of"
	}
	return "slower than"
}

// fastestPeer returns the remote-only peer row of size with the lowest
// vs_asidekit.
func fastestPeer(res benchmarks.Result, size string) (*benchmarks.Row, float64) {
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
	return best, bestVs
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
	s := fmt.Sprintf("%s: %s, %s %s", res.Scenario, what, ref, num(refV))
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
