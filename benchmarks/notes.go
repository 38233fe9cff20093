package benchmarks

import (
	"fmt"
	"math"
	"time"
)

// jitterReloadNote explains why the jitter row of the avalanche table
// counts more DB loads in total than no_jitter: lifetimes spread over
// [TTL·(1−j), TTL·(1+j)] let a key that expires early be reloaded and
// expire again inside the window, which a key living exactly TTL never
// does (its second expiry, at 2·TTL, is past the window). It returns ""
// when no key can expire twice.
func jitterReloadNote(ttl, window time.Duration, j float64) string {
	loads := expectedLoads(ttl, window, j)
	if loads <= 1 {
		return ""
	}
	return fmt.Sprintf("jitter counts more loads in total than no_jitter, by design of the window: lifetimes spread over "+
		"[%.1f·TTL, %.1f·TTL], so a key that expires early is reloaded and can expire again before the run ends at %.2f·TTL: "+
		"%.0f%% of keys expire twice, and a key is loaded %.2f times on average against once (more when loads are slow: "+
		"SingleFlight shares a load within one instance, so instances that miss a key while it loads each load it). "+
		"What jitter buys is the peak per 100 ms, not fewer loads.",
		1-j, 1+j, float64(window)/float64(ttl), 100*secondExpiryShare(ttl, window, j), loads)
}

// expectedLoads is the mean number of expiries of a key inside window,
// each followed by a load, when every lifetime is uniform on
// [TTL·(1−j), TTL·(1+j)]: Σₖ P(L1 + … + Lk ≤ window), k ≥ 1.
func expectedLoads(ttl, window time.Duration, j float64) float64 {
	if j <= 0 || j >= 1 {
		return 1
	}
	var sum float64
	for k := 1; k <= 64; k++ {
		p := sumOfUniformsCDF(k, float64(ttl)*(1-j), float64(ttl)*2*j, float64(window))
		if p == 0 {
			break
		}
		sum += p
	}
	return sum
}

// secondExpiryShare is P(L1 + L2 ≤ window): the share of keys that
// expire twice in the window.
func secondExpiryShare(ttl, window time.Duration, j float64) float64 {
	if j <= 0 || j >= 1 {
		return 0
	}
	return sumOfUniformsCDF(2, float64(ttl)*(1-j), float64(ttl)*2*j, float64(window))
}

// sumOfUniformsCDF is P(U1 + … + Uk ≤ x) for Ui uniform on [lo, lo+w]:
// the Irwin–Hall distribution, (1/k!) Σᵢ (−1)ⁱ C(k, i) (y − i)ᵏ for
// y = (x − k·lo)/w, i from 0 to ⌊y⌋.
func sumOfUniformsCDF(k int, lo, w, x float64) float64 {
	y := (x - float64(k)*lo) / w
	switch {
	case y <= 0:
		return 0
	case y >= float64(k):
		return 1
	}
	var sum, binom, fact float64 = 0, 1, 1
	for i := 1; i <= k; i++ {
		fact *= float64(i)
	}
	for i := 0; float64(i) <= y; i++ {
		term := binom * math.Pow(y-float64(i), float64(k))
		if i%2 == 1 {
			term = -term
		}
		sum += term
		binom = binom * float64(k-i) / float64(i+1)
	}
	return min(max(sum/fact, 0), 1)
}

// embeddedSeqgenNote explains the seqgen table on miniredis. Profiled
// with a benchmark of Generator.Next on miniredis + SQLite (go test
// -cpuprofile): 45% of the CPU is miniredis's EVALSHA, which builds a
// fresh gopher-lua VM for every script call (lua.NewState, seven standard
// libraries, cjson, the redis module) under miniredis's one global lock;
// SQLite, where the segments are reserved, is under 1%. One Next cost
// 1.05 ms there against 35 µs for a plain GET on the same miniredis.
const embeddedSeqgenNote = "embedded Redis: miniredis runs every Lua script in a new gopher-lua VM (about 1 ms per EVALSHA against 35 µs per GET, " +
	"serialized by its global lock), and Generator.Next is one script per id while nextval here is one in-process SQLite statement: " +
	"this table measures miniredis's Lua engine, not seqgen. On real servers (-redis, -postgres) Next is one Redis round trip " +
	"with no SQL on the hot path, and NextN amortizes it over the batch."
