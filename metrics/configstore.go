package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo/configstore"
)

// ConfigStoreStatser is what NewConfigStoreCollector reads: a
// *configstore.Store.
type ConfigStoreStatser interface {
	Stats() configstore.Stats
}

// NewConfigStoreCollector returns a Collector of src's configstore.Stats,
// read at each scrape and exported as asidekit_configstore_*_total
// counters with the constant label store=name (see the package doc for
// the list). Give each Store registered on one registry its own name.
//
// A nil src panics here rather than at every scrape: it is a wiring
// mistake, best found when the service starts.
func NewConfigStoreCollector(name string, src ConfigStoreStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewConfigStoreCollector with a nil source")
	}
	c := newSnapshotCollector("configstore", "store", name, src.Stats)
	desc := c.desc
	c.counter(desc("rebuilds_total", "Hash rebuilds this Store ran, one database query each."),
		func(s configstore.Stats) float64 { return float64(s.Rebuilds) })
	c.counter(desc("rebuild_waits_total", "Reads that waited for another process's rebuild."),
		func(s configstore.Stats) float64 { return float64(s.RebuildWaits) })
	c.counter(desc("rebuilds_lost_total", "Rebuilds refused because the hash was deleted meanwhile."),
		func(s configstore.Stats) float64 { return float64(s.RebuildsLost) })
	c.counter(desc("repairs_total", "Foreign or corrupt hash entries that reads replaced from the database."),
		func(s configstore.Stats) float64 { return float64(s.Repairs) })
	c.counter(desc("mirror_errors_total", "Committed writes that could not be copied into the hash."),
		func(s configstore.Stats) float64 { return float64(s.MirrorErrors) })
	c.counter(desc("reconciles_total", "Reconcile calls that completed."),
		func(s configstore.Stats) float64 { return float64(s.Reconciles) })
	c.counter(desc("fixes_total", "Hash fields that Reconcile repaired."),
		func(s configstore.Stats) float64 { return float64(s.Fixes) })
	c.counter(desc("db_fallbacks_total", "Reads that Redis failed and the table answered."),
		func(s configstore.Stats) float64 { return float64(s.DBFallbacks) })
	c.counter(desc("fallback_queries_total", "Table reads run for reads that Redis failed."),
		func(s configstore.Stats) float64 { return float64(s.FallbackQueries) })
	return c
}
