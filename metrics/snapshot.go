package metrics

import "github.com/prometheus/client_golang/prometheus"

// snapshotCollector exports counters read from one Stats snapshot per
// scrape, as const metrics: the source keeps its own atomics, and an idle
// registry costs it nothing.
type snapshotCollector[S any] struct {
	stats       func() S
	subsystem   string
	constLabels prometheus.Labels
	descs       []*prometheus.Desc
	metrics     []snapshotMetric[S]
}

// snapshotMetric is one series: a desc, its variable label values, and the
// field of S it reads.
type snapshotMetric[S any] struct {
	desc   *prometheus.Desc
	labels []string
	value  func(S) float64
}

// newSnapshotCollector returns an empty collector of stats, whose metrics
// are named asidekit_<subsystem>_… and carry the constant label
// label=name.
func newSnapshotCollector[S any](subsystem, label, name string, stats func() S) *snapshotCollector[S] {
	return &snapshotCollector[S]{stats: stats, subsystem: subsystem, constLabels: prometheus.Labels{label: name}}
}

// desc describes the metric asidekit_<subsystem>_<metric>, with variable
// labels.
func (c *snapshotCollector[S]) desc(metric, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(DefaultNamespace, c.subsystem, metric), help, labels, c.constLabels)
}

// counter adds a counter series read by value and returns its desc, for
// further series of the same metric with other label values.
func (c *snapshotCollector[S]) counter(desc *prometheus.Desc, value func(S) float64, labels ...string) *prometheus.Desc {
	if len(c.descs) == 0 || c.descs[len(c.descs)-1] != desc {
		c.descs = append(c.descs, desc)
	}
	c.metrics = append(c.metrics, snapshotMetric[S]{desc: desc, labels: labels, value: value})
	return desc
}

// Describe implements prometheus.Collector.
func (c *snapshotCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *snapshotCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, m.value(s), m.labels...)
	}
}

// gaugedCollector is a snapshotCollector with gauges too.
type gaugedCollector[S any] struct {
	*snapshotCollector[S]
	gauges []snapshotMetric[S]
}

func (c *gaugedCollector[S]) gauge(desc *prometheus.Desc, value func(S) float64) {
	c.gauges = append(c.gauges, snapshotMetric[S]{desc: desc, value: value})
}

// Describe implements prometheus.Collector.
func (c *gaugedCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	c.snapshotCollector.Describe(ch)
	for _, g := range c.gauges {
		ch <- g.desc
	}
}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *gaugedCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, m.value(s), m.labels...)
	}
	for _, g := range c.gauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(s))
	}
}
