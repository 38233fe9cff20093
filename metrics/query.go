package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo"
)

// QueryStatser is what NewQueryCollector reads: a *repo.Query.
type QueryStatser interface {
	Stats() repo.QueryStats
}

// NewQueryCollector returns a Collector of the list invalidations of src,
// a cached query (repo.NewQuery), read from its Stats at each scrape, with
// the constant label query=name:
//
//	asidekit_query_invalidations_total{query}  lists changed by writes (bumped or patched)
//	asidekit_query_patches_total{query}        lists patched in place (their pages stay cached)
//	asidekit_query_fallbacks_total{query}      bumps of all the query's lists
//
// A fallback (a change whose old filter values were unknown, or a
// TRUNCATE) empties every list of the query at once: a rising rate means
// the table lacks REPLICA IDENTITY FULL under repo/cdc. The query's page
// and count hits, misses and loads are cache events of its entity
// ("<entity>.query.<name>") and come through the CacheObserver. A nil src
// panics here.
func NewQueryCollector(name string, src QueryStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewQueryCollector with a nil source")
	}
	c := newSnapshotCollector("query", "query", name, src.Stats)
	c.counter(c.desc("invalidations_total", "Lists changed by writes: generation bumps (of one filter value's lists, or of all lists) and patches."),
		func(s repo.QueryStats) float64 { return float64(s.Invalidations) })
	c.counter(c.desc("patches_total", "Lists patched in place by a write through the repository: their pages stay cached."),
		func(s repo.QueryStats) float64 { return float64(s.Patches) })
	c.counter(c.desc("fallbacks_total", "Bumps of all the query's lists: a change whose old filter values were unknown, or a TRUNCATE."),
		func(s repo.QueryStats) float64 { return float64(s.Fallbacks) })
	return c
}
