package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo"
)

// InspectStatser is what NewInspectCollector reads: a *repo.InspectCounter
// passed as repo.InspectOptions.Stats to the inspections to export.
type InspectStatser interface {
	Stats() repo.InspectStats
}

// NewInspectCollector returns a Collector of src's repo.InspectStats, read
// at each scrape, with the constant label inspector=name:
//
//	asidekit_inspect_runs_total{inspector}             counter
//	asidekit_inspect_inspected_total{inspector}        counter, items judged
//	asidekit_inspect_consistent_total{inspector}       counter
//	asidekit_inspect_violations_total{inspector,kind}  counter, kind = stale, ghost, false_not_found, divergent_mapping
//	asidekit_inspect_suspects_total{inspector}         counter, disagreements at a first look
//	asidekit_inspect_skipped_total{inspector}          counter
//	asidekit_inspect_repaired_total{inspector}         counter
//	asidekit_inspect_nines{inspector}                  gauge, repo.InspectStats.Nines of all runs
//
// Alert on violations_total growing: the cache served (or could serve) a
// value older than a completed write. A nil src panics here rather than at
// every scrape: it is a wiring mistake, best found when the service starts.
func NewInspectCollector(name string, src InspectStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewInspectCollector with a nil source")
	}
	c := &inspectCollector{snapshotCollector: newSnapshotCollector("inspect", "inspector", name, src.Stats)}
	desc := c.desc
	c.counter(desc("runs_total", "Inspections run."),
		func(s repo.InspectStats) float64 { return float64(s.Runs) })
	c.counter(desc("inspected_total", "Items judged: cached entries and Bloom filter probes."),
		func(s repo.InspectStats) float64 { return float64(s.Inspected) })
	c.counter(desc("consistent_total", "Items that agreed with the database (at the first or the second look)."),
		func(s repo.InspectStats) float64 { return float64(s.Consistent) })
	v := desc("violations_total", "Confirmed inconsistencies, by kind.", "kind")
	c.counter(v, func(s repo.InspectStats) float64 { return float64(s.Stale) }, "stale")
	c.counter(v, func(s repo.InspectStats) float64 { return float64(s.Ghost) }, "ghost")
	c.counter(v, func(s repo.InspectStats) float64 { return float64(s.FalseNotFound) }, "false_not_found")
	c.counter(v, func(s repo.InspectStats) float64 { return float64(s.DivergentMapping) }, "divergent_mapping")
	c.counter(desc("suspects_total", "Disagreements seen at a first look (most are invalidations in flight)."),
		func(s repo.InspectStats) float64 { return float64(s.Suspects) })
	c.counter(desc("skipped_total", "Sampled entries that could not be judged."),
		func(s repo.InspectStats) float64 { return float64(s.Skipped) })
	c.counter(desc("repaired_total", "Violations repaired (InspectOptions.Repair)."),
		func(s repo.InspectStats) float64 { return float64(s.Repaired) })
	c.nines = desc("nines", "Consistency measured over all runs, in nines (3 = 99.9 %).")
	return c
}

// inspectCollector is a snapshotCollector with the nines gauge.
type inspectCollector struct {
	*snapshotCollector[repo.InspectStats]
	nines *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *inspectCollector) Describe(ch chan<- *prometheus.Desc) {
	c.snapshotCollector.Describe(ch)
	ch <- c.nines
}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *inspectCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, m.value(s), m.labels...)
	}
	ch <- prometheus.MustNewConstMetric(c.nines, prometheus.GaugeValue, s.Nines())
}
