package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo"
)

// ReadStatser is what NewReadCollector reads: a *repo.Repository.
type ReadStatser interface {
	ReadStats() repo.ReadStats
}

// NewReadCollector returns a Collector of where src's cache misses loaded
// from (a repository's ReadStats), read at each scrape, with the constant
// label repository=name:
//
//	asidekit_reads_loads_total{repository,target}      target = replica | primary
//	asidekit_reads_redirects_total{repository,reason}  reason = lag | unavailable | unknown
//	asidekit_reads_replica_errors_total{repository}
//	asidekit_reads_write_position_errors_total{repository}
//	asidekit_reads_lag_bytes{repository}               gauge
//
// A redirect is a load that could have gone to a replica and went to the
// primary: reason lag when the replica had not replayed a write the load
// must see, unavailable when it was down, promoted or not read yet,
// unknown when the position the load must see could not be read (Redis
// failed, or lost the version: see repo.ReadStats) (each redirect is also
// a primary load). replica_errors_total counts loads that failed on a
// replica and ran again on the primary. write_position_errors_total
// counts the writes of the process whose commit position could not be
// read (repo.UnknownLSN; the same for every repository of a process),
// load_positions_total the queries of the primary's position after loads
// of rows whose versions recorded none (also process-wide). lag_bytes is the
// WAL distance the replica was behind at the last redirect for lag.
// Without replicas every load is a primary load. A share of primary loads
// that keeps rising points at a replica falling behind the write rate; a
// rising unavailable rate at a replica that is down. A nil src panics
// here.
func NewReadCollector(name string, src ReadStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewReadCollector with a nil source")
	}
	c := &gaugedCollector[repo.ReadStats]{snapshotCollector: newSnapshotCollector("reads", "repository", name, src.ReadStats)}
	loads := c.counter(c.desc("loads_total", "Cache-miss loads, by the server that served them: replica or primary.", "target"),
		func(s repo.ReadStats) float64 { return float64(s.ReplicaLoads) }, "replica")
	c.counter(loads, func(s repo.ReadStats) float64 { return float64(s.PrimaryLoads) }, "primary")
	redirects := c.counter(c.desc("redirects_total", "Loads sent to the primary instead of a replica, by reason: lag (the replica had not replayed a write the load must see), unavailable (down, promoted, not read yet) or unknown (the position the load must see could not be read).", "reason"),
		func(s repo.ReadStats) float64 { return float64(s.RedirectedLag) }, "lag")
	c.counter(redirects, func(s repo.ReadStats) float64 { return float64(s.RedirectedUnavailable) }, "unavailable")
	c.counter(redirects, func(s repo.ReadStats) float64 { return float64(s.RedirectedUnknown) }, "unknown")
	c.counter(c.desc("replica_errors_total", "Loads that failed on a replica and ran again on the primary."),
		func(s repo.ReadStats) float64 { return float64(s.ReplicaErrors) })
	c.counter(c.desc("write_position_errors_total", "Writes of the process whose commit position could not be read on the primary (their rows load from the primary)."),
		func(s repo.ReadStats) float64 { return float64(s.WritePositionErrors) })
	c.counter(c.desc("load_positions_total", "Queries of the primary's WAL position after loads of rows whose versions recorded none (with replicas; with repo.Options.LogStores, loads that found no row), in the process."),
		func(s repo.ReadStats) float64 { return float64(s.LoadPositions) })
	c.gauge(c.desc("lag_bytes", "WAL bytes a replica was behind the position a load needed, at the last redirect for lag."),
		func(s repo.ReadStats) float64 { return float64(s.LagBytes) })
	return c
}
