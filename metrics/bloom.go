package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/bloom"
)

// BloomStatser is what NewBloomCollector reads: a *bloom.Filter.
type BloomStatser interface {
	Stats(ctx context.Context) (bloom.Stats, error)
}

// BloomOptions configure a Bloom collector. The zero BloomOptions are
// usable.
type BloomOptions struct {
	// Timeout bounds the Stats call of one scrape; a scrape that reaches
	// it counts as failed. Default DefaultBloomScrapeTimeout.
	Timeout time.Duration
}

// Defaults of BloomOptions, and how often a Bloom collector logs.
const (
	// DefaultBloomScrapeTimeout is short: the scrape must answer during
	// a Redis outage, and Stats takes a few milliseconds per MiB of filter.
	DefaultBloomScrapeTimeout = 200 * time.Millisecond

	// BloomLogInterval is the least time between two warnings of one
	// collector whose scrapes keep failing.
	BloomLogInterval = time.Minute
)

// NewBloomCollector returns a Collector of f's bloom.Stats, as
// NewBloomCollectorWithOptions does with the default options.
func NewBloomCollector(name string, f BloomStatser) prometheus.Collector {
	return NewBloomCollectorWithOptions(name, f, nil)
}

// NewBloomCollectorWithOptions returns a Collector of f's bloom.Stats,
// read from Redis at each scrape (bounded by opts.Timeout), with the
// constant label filter=name (opts may be nil):
//
//	asidekit_bloom_bits{filter}                         m, all shards
//	asidekit_bloom_bits_set{filter}
//	asidekit_bloom_fill_ratio{filter}                   bits set / bits
//	asidekit_bloom_estimated_count{filter}              distinct elements added (estimate)
//	asidekit_bloom_false_positive_rate{filter}          estimated, now
//	asidekit_bloom_generation{filter}
//	asidekit_bloom_rebuilding{filter}                   1 while a Rebuild fills a generation
//	asidekit_bloom_untrusted_shards{filter}             shards answering "maybe"; 0 when Ready
//	asidekit_bloom_untrusted_checks_total{filter}       counter, keys checked on an untrusted shard
//	asidekit_bloom_auto_rebuilds_total{filter}          counter
//	asidekit_bloom_auto_rebuild_failures_total{filter}  counter
//	asidekit_bloom_up{filter}                           1 if this scrape read Stats, else 0
//	asidekit_bloom_scrape_errors_total{filter}          counter, failed Stats reads
//
// Stats runs BITCOUNT over every shard, a few milliseconds per MiB of
// filter on the server: fine at a scrape interval of seconds.
//
// A failed read never fails the scrape, so that a Redis outage does not
// turn /metrics into an error and hide every other metric of the process:
// the scrape reports up 0, counts the error, and repeats the values of
// the last successful read (none before the first), which keep alerts on
// the fill ratio firing. The collector logs a warning (log/slog) at the
// first failure and at most once per BloomLogInterval while they go on,
// and an Info when a read succeeds again. A nil f panics here, when the
// service starts.
func NewBloomCollectorWithOptions(name string, f BloomStatser, opts *BloomOptions) prometheus.Collector {
	if f == nil {
		panic("metrics: NewBloomCollector with a nil filter")
	}
	timeout := DefaultBloomScrapeTimeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	labels := prometheus.Labels{"filter": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(DefaultNamespace, "bloom", metric), help, nil, labels)
	}
	gauge := func(metric, help string, value func(bloom.Stats) float64) bloomMetric {
		return bloomMetric{desc(metric, help), prometheus.GaugeValue, value}
	}
	counter := func(metric, help string, value func(bloom.Stats) float64) bloomMetric {
		return bloomMetric{desc(metric, help), prometheus.CounterValue, value}
	}
	return &bloomCollector{
		name: name, src: f, timeout: timeout,
		up:     desc("up", "1 if this scrape read the filter's Stats from Redis, 0 if it repeats the last values read."),
		errors: desc("scrape_errors_total", "Scrapes that could not read the filter's Stats (Redis failing or slower than the scrape timeout)."),
		metrics: []bloomMetric{
			gauge("bits", "Size of the filter in bits (m), all shards.",
				func(s bloom.Stats) float64 { return float64(s.Bits) }),
			gauge("bits_set", "Bits set in the current generation.",
				func(s bloom.Stats) float64 { return float64(s.BitsSet) }),
			gauge("fill_ratio", "Bits set divided by bits: past 0.5 the filter is over its capacity.",
				func(s bloom.Stats) float64 {
					if s.Bits == 0 {
						return 0
					}
					return float64(s.BitsSet) / float64(s.Bits)
				}),
			gauge("estimated_count", "Estimated number of distinct elements added.",
				func(s bloom.Stats) float64 { return s.EstimatedCount }),
			gauge("false_positive_rate", "Estimated current false-positive rate.",
				func(s bloom.Stats) float64 { return s.FalsePositiveRate }),
			gauge("generation", "Current generation; each Rebuild adds one.",
				func(s bloom.Stats) float64 { return float64(s.Generation) }),
			gauge("rebuilding", "1 while a Rebuild is filling the next generation.",
				func(s bloom.Stats) float64 { return bool01(s.Rebuilding) }),
			gauge("untrusted_shards", "Shards not known complete, whose checks answer maybe; 0 when the filter is Ready.",
				func(s bloom.Stats) float64 { return float64(s.UntrustedShards) }),
			counter("untrusted_checks_total", "Keys checked on an untrusted shard, answered maybe whatever the bits said.",
				func(s bloom.Stats) float64 { return float64(s.UntrustedChecks) }),
			counter("auto_rebuilds_total", "Automatic rebuilds (bloom.Options.Source) this process ran to the end.",
				func(s bloom.Stats) float64 { return float64(s.AutoRebuilds) }),
			counter("auto_rebuild_failures_total", "Automatic rebuilds that failed or could not take their lease.",
				func(s bloom.Stats) float64 { return float64(s.AutoRebuildFailures) }),
		},
	}
}

// bloomCollector exports one filter's bloom.Stats.
type bloomCollector struct {
	name       string
	src        BloomStatser
	timeout    time.Duration
	up, errors *prometheus.Desc
	metrics    []bloomMetric

	mu       sync.Mutex  // guards the fields below; never held while reading Redis
	last     bloom.Stats // of the last successful read
	haveLast bool
	failures uint64    // failed reads, since New
	warned   time.Time // of the last warning; zero if none
	told     bool      // a warning was logged since the last successful read
}

// bloomMetric is one series read from a Stats.
type bloomMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(bloom.Stats) float64
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Describe implements prometheus.Collector.
func (c *bloomCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.errors
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: one Stats call per scrape.
func (c *bloomCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	s, err := c.src.Stats(ctx)
	cancel()
	s, ok, failures := c.record(s, err)
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, bool01(err == nil))
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(failures))
	if !ok {
		return
	}
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
}

// record notes the outcome of one read, logs as the collector's doc says,
// and returns the Stats to export (ok false if none was ever read) and the
// failures so far.
func (c *bloomCollector) record(s bloom.Stats, err error) (_ bloom.Stats, ok bool, failures uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		if c.told {
			slog.Info("asidekit: metrics: Bloom filter stats readable again", "filter", c.name, "failures", c.failures)
		}
		c.last, c.haveLast, c.told = s, true, false
		return s, true, c.failures
	}
	c.failures++
	if now := time.Now(); c.warned.IsZero() || now.Sub(c.warned) >= BloomLogInterval {
		c.warned, c.told = now, true
		slog.Warn("asidekit: metrics: cannot read Bloom filter stats; exporting the last values read",
			"filter", c.name, "failures", c.failures, "err", err)
	}
	return c.last, c.haveLast, c.failures
}
