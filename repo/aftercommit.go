package repo

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
)

// What happens when the cache upkeep after a commit fails (Redis down or
// slow): the write is in the database, so returning an error would only
// make callers retry a write that succeeded (a duplicate order). By
// default the write returns nil, and the work that failed (invalidations,
// Bloom filter adds) is retried in the background, process-wide, until
// Redis takes it; it is counted and logged (AfterCommitStats).
// Options.AfterCommitErrors makes a repository's own writes return an
// error matching ErrAfterCommit instead (the work is retried all the same).

// maxPendingUpkeep bounds the ids and keys awaiting a retry; past it, new
// failed work is dropped and counted (Dropped), and a stale row or a
// missing filter key may then last until the TTL or a filter rebuild.
const maxPendingUpkeep = 1 << 20

// The background retry's pace. Each try is bounded well below
// AfterCommitTimeout and the pause between tries stays short, so that a
// stalled Redis cannot hold the queue for seconds after it answers again:
// the upkeep lands within about retryMaxWait + retryTryTimeout of the
// recovery (the cache's own retrier, which also keeps the ids off Redis
// meanwhile, is woken at once).
const (
	retryMaxWait    = 500 * time.Millisecond
	retryTryTimeout = time.Second
)

// AfterCommitStats counts the cache upkeep that failed after commits, in
// this process, and the upkeep of writes whose commit may have happened.
type AfterCommitStats struct {
	Failures int64 // writes whose upkeep failed after the commit
	Retried  int64 // ids and keys that a background retry then applied
	Dropped  int64 // ids and keys dropped: the retry queue was full
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

// upkeepRetrier retries failed after-commit work in the background, one
// goroutine while there is work, none otherwise.
type upkeepRetrier struct {
	mu      sync.Mutex // guards pending and running
	pending cacheaside.Effects
	running bool

	failures, retried, dropped atomic.Int64
	unknown, distrusts         atomic.Int64 // AfterCommitStats.Unknown, Distrusts
}

var retrier upkeepRetrier

// GetAfterCommitStats returns the counters of after-commit upkeep failures
// of every repository of the process.
func GetAfterCommitStats() AfterCommitStats {
	r := &retrier
	r.mu.Lock()
	pending := r.pending.Len()
	r.mu.Unlock()
	return AfterCommitStats{
		Failures: r.failures.Load(),
		Retried:  r.retried.Load(),
		Dropped:  r.dropped.Load(),
		Pending:  pending,

		Unknown:   r.unknown.Load(),
		Distrusts: r.distrusts.Load(),
	}
}

// queue adds failed work to retry; err is why it failed, for the log.
func (r *upkeepRetrier) queue(failed *cacheaside.Effects, err error) {
	r.failures.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending.Len()+failed.Len() > maxPendingUpkeep {
		r.dropped.Add(int64(failed.Len()))
		slog.Error("asidekit: cache upkeep after a commit failed and the retry queue is full; dropped",
			"keys", failed.Len(), "err", err)
		return
	}
	r.pending.Merge(failed)
	if !r.running { // the first failure of a streak: one line, not one per write
		slog.Warn("asidekit: cache upkeep after a commit failed; retrying in the background",
			"keys", failed.Len(), "err", err)
		r.running = true
		go r.loop()
	}
}

// loop retries the pending work with backoff until none is left.
func (r *upkeepRetrier) loop() {
	b := backoff.New(20*time.Millisecond, retryMaxWait)
	for {
		_ = b.Wait(context.Background())
		r.mu.Lock()
		w := r.pending
		r.pending = cacheaside.Effects{}
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), retryTryTimeout)
		failed, _ := w.Try(ctx)
		cancel()
		done := w.Len()
		r.mu.Lock()
		if failed != nil {
			done -= failed.Len()
			r.pending.Merge(failed)
		}
		r.retried.Add(int64(done))
		if r.pending.Len() == 0 {
			r.running = false
			r.mu.Unlock()
			slog.Info("asidekit: cache upkeep after commits applied by the background retry",
				"retried", r.retried.Load(), "failures", r.failures.Load())
			return
		}
		r.mu.Unlock()
		if failed == nil {
			b.Reset()
		}
	}
}
