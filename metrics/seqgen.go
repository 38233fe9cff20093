package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/seqgen"
)

// SeqgenStatser is what NewSeqgenCollector reads: a *seqgen.Generator.
type SeqgenStatser interface {
	Stats() seqgen.Stats
}

// NewSeqgenCollector returns a Collector of src's seqgen.Stats, read at
// each scrape, with the constant label generator=name:
//
//	asidekit_seqgen_segments_reserved_total{generator}
//	asidekit_seqgen_segments_dropped_total{generator}
//	asidekit_seqgen_refills_total{generator,mode}    mode = background | sync
//	asidekit_seqgen_waits_total{generator}
//	asidekit_seqgen_fallbacks_total{generator}
//	asidekit_seqgen_redis_errors_total{generator}
//	asidekit_seqgen_batches_total{generator}
//	asidekit_seqgen_abandoned_total{generator}
//
// Next calls per batch (the calls' rate over batches_total's) is how many
// concurrent calls each script call served; abandoned_total counts numbers
// skipped because their caller left before they were handed out.
//
// refills_total{mode="sync"} and waits_total count the calls that waited
// on the DB: they stay near zero while segments are large enough for the
// background refill to keep ahead. A nil src panics here.
func NewSeqgenCollector(name string, src SeqgenStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewSeqgenCollector with a nil source")
	}
	c := newSnapshotCollector("seqgen", "generator", name, src.Stats)
	c.counter(c.desc("segments_reserved_total", "Segments of numbers reserved in the database."),
		func(s seqgen.Stats) float64 { return float64(s.Reserved) })
	c.counter(c.desc("segments_dropped_total", "Reserved segments never installed in Redis; their numbers are skipped."),
		func(s seqgen.Stats) float64 { return float64(s.Dropped) })
	refills := c.counter(c.desc("refills_total", "Segment reservations, by mode: background (ahead of need) or sync (a call waited for it).", "mode"),
		func(s seqgen.Stats) float64 { return float64(s.BackgroundRefills) }, "background")
	c.counter(refills, func(s seqgen.Stats) float64 { return float64(s.SyncRefills) }, "sync")
	c.counter(c.desc("waits_total", "Pauses of calls that found the segment used up while another call or process reserved the next."),
		func(s seqgen.Stats) float64 { return float64(s.Waits) })
	c.counter(c.desc("fallbacks_total", "Numbers issued from a database segment, in process, because Redis failed or its breaker was open."),
		func(s seqgen.Stats) float64 { return float64(s.Fallbacks) })
	c.counter(c.desc("redis_errors_total", "Redis calls that failed or got no reply within Options.RedisTimeout."),
		func(s seqgen.Stats) float64 { return float64(s.RedisErrors) })
	c.counter(c.desc("batches_total", "Script calls of joined Next calls: each served every call queued (up to Options.MaxBatch)."),
		func(s seqgen.Stats) float64 { return float64(s.Batches) })
	c.counter(c.desc("abandoned_total", "Numbers taken for joined Next calls whose caller had left before they were handed out: skipped."),
		func(s seqgen.Stats) float64 { return float64(s.Abandoned) })
	return c
}
