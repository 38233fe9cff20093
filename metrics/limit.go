package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/limit"
)

// LimitStatser is what NewLimitCollector reads: any limit.Limiter, or a
// *limit.Semaphore.
type LimitStatser interface {
	Stats() limit.Stats
}

// NewLimitCollector returns a Collector of src's limit.Stats, read at each
// scrape, with the constant label limiter=name:
//
//	asidekit_limit_calls_total{limiter,outcome}   outcome = allowed | refused | error
//	asidekit_limit_failed_open_total{limiter}     errors FailOpen let through
//	asidekit_limit_local_fallbacks_total{limiter} calls decided in the process while Redis failed
//
// A call failed open counts under both outcome="allowed" and
// outcome="error". Give each limiter on one registry its own name. A nil
// src panics here, when the service starts, rather than at every scrape.
func NewLimitCollector(name string, src LimitStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewLimitCollector with a nil source")
	}
	c := newSnapshotCollector("limit", "limiter", name, src.Stats)
	calls := c.counter(c.desc("calls_total", "Calls of the limiter (Allow, AllowN, each attempt of Wait; TryAcquire and Acquire attempts of a Semaphore), by outcome.", "outcome"),
		func(s limit.Stats) float64 { return float64(s.Allowed) }, "allowed")
	c.counter(calls, func(s limit.Stats) float64 { return float64(s.Refused) }, "refused")
	c.counter(calls, func(s limit.Stats) float64 { return float64(s.Errors) }, "error")
	c.counter(c.desc("failed_open_total", "Calls let through because Redis failed and the limiter fails open."),
		func(s limit.Stats) float64 { return float64(s.FailedOpen) })
	c.counter(c.desc("local_fallbacks_total", "Calls decided in this process (Options.LocalFallback) because Redis failed."),
		func(s limit.Stats) float64 { return float64(s.LocalFallbacks) })
	return c
}
