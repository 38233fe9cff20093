package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo"
)

// NewAfterCommitCollector returns a Collector of the process's
// repo.AfterCommitStats, read at each scrape by stats (nil:
// repo.GetAfterCommitStats, what a service passes):
//
//	asidekit_repo_upkeep_failures_total           counter, writes whose upkeep failed after the commit
//	asidekit_repo_upkeep_retried_total            counter, ids and keys a background retry applied
//	asidekit_repo_upkeep_dropped_total            counter, ids and keys dropped: the retry queue was full
//	asidekit_repo_upkeep_pending                  gauge, ids and keys awaiting a retry
//	asidekit_repo_unknown_outcome_writes_total    counter, writes whose commit may have happened
//	asidekit_repo_filter_distrusts_total          counter, primary-key filters made untrusted by them
//
// Alert on upkeep_dropped_total growing (those rows stay stale until
// their TTL unless repo/cdc applies them) and on upkeep_pending staying
// above zero while Redis answers.
func NewAfterCommitCollector(stats func() repo.AfterCommitStats) prometheus.Collector {
	if stats == nil {
		stats = repo.GetAfterCommitStats
	}
	c := &gaugedCollector[repo.AfterCommitStats]{snapshotCollector: &snapshotCollector[repo.AfterCommitStats]{stats: stats, subsystem: "repo"}}
	c.counter(c.desc("upkeep_failures_total", "Writes whose cache upkeep failed after the commit (their call returned ErrAfterCommit)."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Failures) })
	c.counter(c.desc("upkeep_retried_total", "Ids and keys whose failed upkeep a background retry then applied."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Retried) })
	c.counter(c.desc("upkeep_dropped_total", "Ids and keys of failed upkeep dropped because the retry queue was full."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Dropped) })
	c.counter(c.desc("unknown_outcome_writes_total", "Writes whose database reply was lost: they did their upkeep, then returned their error."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Unknown) })
	c.counter(c.desc("filter_distrusts_total", "Primary-key Bloom filters made untrusted by a Create whose generated key was lost with the reply."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Distrusts) })
	c.gauge(c.desc("upkeep_pending", "Ids and keys of failed upkeep awaiting a background retry."),
		func(s repo.AfterCommitStats) float64 { return float64(s.Pending) })
	return c
}
