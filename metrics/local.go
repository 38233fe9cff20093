package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/cacheaside"
)

// LocalStatser is what NewLocalCollector reads: a *cacheaside.Entity[T]
// whose Policy has a near cache (Local), or a *repo.Repository over one.
type LocalStatser interface {
	Stats() cacheaside.Stats
}

// NewLocalCollector returns a Collector of src's near cache counters,
// read at each scrape and exported as asidekit_local_*_total counters
// with the constant label entity=name: hits, misses, evictions,
// invalidations (received from Redis, or a broadcast) and flushes (the
// near cache emptied because its invalidation connection was lost); for
// the automatic near cache of hot keys (cacheaside.Options.HotKeys) also
// promotions and demotions, and the gauge asidekit_local_bytes. A
// CacheObserver counts the same events among the others
// (event="local_hit", …); this collector is for a service that wants the
// near cache's series alone, under their own names.
//
// A nil src panics here rather than at every scrape: it is a wiring
// mistake, best found when the service starts.
func NewLocalCollector(name string, src LocalStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewLocalCollector with a nil source")
	}
	c := &gaugedCollector[cacheaside.Stats]{snapshotCollector: newSnapshotCollector("local", "entity", name, src.Stats)}
	desc := c.desc
	c.counter(desc("hits_total", "Reads answered by the near cache (values and \"not found\")."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalHits) })
	c.counter(desc("misses_total", "Reads the near cache could not answer, which went on to Redis."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalMisses) })
	c.counter(desc("evictions_total", "Near cache entries evicted to stay within Local.MaxEntries."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalEvictions) })
	c.counter(desc("invalidations_total", "Changes of the entity's entries reported by Redis (or a broadcast)."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalInvalidations) })
	c.counter(desc("flushes_total", "Times the near cache was emptied because its invalidation connection was lost."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalFlushes) })
	c.counter(desc("promotions_total", "Hot keys' values kept by the automatic near cache (cacheaside.Options.HotKeys)."),
		func(s cacheaside.Stats) float64 { return float64(s.HotPromotions) })
	c.counter(desc("demotions_total", "Promoted values that left the automatic near cache: cooled, expired or evicted for its budget."),
		func(s cacheaside.Stats) float64 { return float64(s.HotDemotions) })
	c.gauge(desc("bytes", "Estimated bytes of the values the automatic near cache holds (0 for a Policy.Local near cache)."),
		func(s cacheaside.Stats) float64 { return float64(s.LocalBytes) })
	return c
}
