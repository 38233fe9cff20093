package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/bloom"
)

// BloomStatser is what NewBloomCollector reads: a *bloom.Filter.
type BloomStatser interface {
	Stats(ctx context.Context) (bloom.Stats, error)
}

// BloomScrapeTimeout bounds the Stats call of one scrape.
const BloomScrapeTimeout = 5 * time.Second

// bloomCollector exports one filter's bloom.Stats as gauges.
type bloomCollector struct {
	src    BloomStatser
	gauges []bloomGauge
}

type bloomGauge struct {
	desc  *prometheus.Desc
	value func(bloom.Stats) float64
}

// NewBloomCollector returns a Collector of f's bloom.Stats, read from
// Redis at each scrape (bounded by BloomScrapeTimeout), as gauges with the
// constant label filter=name:
//
//	asidekit_bloom_bits{filter}                      m, all shards
//	asidekit_bloom_bits_set{filter}
//	asidekit_bloom_fill_ratio{filter}                bits set / bits
//	asidekit_bloom_estimated_count{filter}           distinct elements added (estimate)
//	asidekit_bloom_false_positive_rate{filter}       estimated, now
//	asidekit_bloom_generation{filter}
//	asidekit_bloom_rebuilding{filter}                1 while a Rebuild fills a generation
//
// Stats runs BITCOUNT over every shard, a few milliseconds per MiB of
// filter on the server: fine at a scrape interval of seconds. When Redis
// fails the scrape reports the error for this collector. A nil f panics
// here, when the service starts.
func NewBloomCollector(name string, f BloomStatser) prometheus.Collector {
	if f == nil {
		panic("metrics: NewBloomCollector with a nil filter")
	}
	labels := prometheus.Labels{"filter": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(DefaultNamespace, "bloom", metric), help, nil, labels)
	}
	return &bloomCollector{src: f, gauges: []bloomGauge{
		{desc("bits", "Size of the filter in bits (m), all shards."),
			func(s bloom.Stats) float64 { return float64(s.Bits) }},
		{desc("bits_set", "Bits set in the current generation."),
			func(s bloom.Stats) float64 { return float64(s.BitsSet) }},
		{desc("fill_ratio", "Bits set divided by bits: past 0.5 the filter is over its capacity."),
			func(s bloom.Stats) float64 {
				if s.Bits == 0 {
					return 0
				}
				return float64(s.BitsSet) / float64(s.Bits)
			}},
		{desc("estimated_count", "Estimated number of distinct elements added."),
			func(s bloom.Stats) float64 { return s.EstimatedCount }},
		{desc("false_positive_rate", "Estimated current false-positive rate."),
			func(s bloom.Stats) float64 { return s.FalsePositiveRate }},
		{desc("generation", "Current generation; each Rebuild adds one."),
			func(s bloom.Stats) float64 { return float64(s.Generation) }},
		{desc("rebuilding", "1 while a Rebuild is filling the next generation."),
			func(s bloom.Stats) float64 {
				if s.Rebuilding {
					return 1
				}
				return 0
			}},
	}}
}

// Describe implements prometheus.Collector.
func (c *bloomCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		ch <- g.desc
	}
}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *bloomCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), BloomScrapeTimeout)
	defer cancel()
	s, err := c.src.Stats(ctx)
	for _, g := range c.gauges {
		if err != nil {
			ch <- prometheus.NewInvalidMetric(g.desc, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(s))
	}
}
