package repo

import (
	"sync/atomic"

	"github.com/asidekit/asidekit/cacheaside"
)

// What happens when the cache upkeep after a commit fails (Redis down or
// slow): the write is in the database, so returning an error would only
// make callers retry a write that succeeded (a duplicate order). By
// default the write returns nil, and the work that failed (invalidations,
// Bloom filter adds) is retried in the background until Redis takes it,
// by the retrier of the Cache it belongs to
// (cacheaside's Cache.Apply: the only retrier, which also keeps the ids
// off Redis meanwhile and tries at once when Redis answers again); it is
// counted and logged (AfterCommitStats).
// Options.AfterCommitErrors makes a repository's own writes return an
// error matching ErrAfterCommit instead (the work is retried all the same).

// AfterCommitStats counts the cache upkeep that failed after commits, in
// this process, and the upkeep of writes whose commit may have happened.
type AfterCommitStats struct {
	Failures int64 // writes whose upkeep failed after the commit
	Retried  int64 // ids and keys that a background retry then applied
	Dropped  int64 // ids and keys dropped: the retry queue was full (2^20 in the process)
	Pending  int   // ids and keys awaiting a retry now

	// Unknown counts the writes and transactions whose database call
	// failed with the outcome unknown (a reply lost with the connection, a
	// context that ended meanwhile): they returned their error, after the
	// upkeep they would have done on success.
	Unknown int64
	// Distrusts counts the Creates of unknown outcome whose generated
	// primary key was lost with the reply: the primary-key Bloom filter was
	// made untrusted (bloom's Distrust), so that it answers "maybe" until
	// it has rebuilt itself from the table.
	Distrusts int64
}

// outcomes counts AfterCommitStats.Unknown and Distrusts; the rest of
// the stats are cacheaside's RetryStats, the retriers' own counts.
var outcomes struct {
	unknown, distrusts atomic.Int64
}

// GetAfterCommitStats returns the counters of after-commit upkeep failures
// of every repository of the process. Failures, Retried, Dropped and
// Pending are those of the retriers of every cacheaside.Cache of the
// process (cacheaside.GetRetryStats): Pending and Retried include the
// invalidations that failed outside an upkeep (a direct Invalidate, a
// repo/cdc change), which the same retriers hold.
func GetAfterCommitStats() AfterCommitStats {
	r := cacheaside.GetRetryStats()
	return AfterCommitStats{
		Failures: r.Failures,
		Retried:  r.Retried,
		Dropped:  r.Dropped,
		Pending:  r.Pending,

		Unknown:   outcomes.unknown.Load(),
		Distrusts: outcomes.distrusts.Load(),
	}
}
