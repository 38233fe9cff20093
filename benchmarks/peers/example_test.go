package peers_test

import (
	"fmt"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/benchmarks/peers"
)

// Summary reads folded results: here a breakdown where asidekit's shared
// rebuild loads once per expiry and go-zero once per process.
func ExampleSummary() {
	row := func(name string, perExpiry float64) benchmarks.Row {
		r := benchmarks.Row{Variant: name}
		r.Set(benchmarks.MetricDBLoadsPerExpiry, perExpiry)
		return r
	}
	res := benchmarks.Result{Scenario: "breakdown", Rows: []benchmarks.Row{
		row(peers.RefBreakdown, 1), row(peers.GoZero, 4), row(peers.Rockscache, 1),
	}}
	for _, line := range peers.Summary([]benchmarks.Result{res}) {
		fmt.Println(line)
	}
	// Output:
	// breakdown: DB loads per hot-key expiry, asidekit/mutex 1, no higher than any peer's (go-zero 4, rockscache 1)
}

// The local-cache variants answer hits from memory, so the hit summary
// leaves them out of the remote-only comparison.
func ExampleLocalCached() {
	for _, name := range []string{peers.Jetcache, peers.JetcacheLocal, peers.GoRedisCacheLocal} {
		fmt.Println(name, peers.LocalCached(name))
	}
	// Output:
	// jetcache false
	// jetcache+local true
	// go-redis/cache+local true
}
