package cacheaside

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// RetryStats counts, in this process, the work that failed after a write
// of the source of truth and that the Caches' retriers (one per Cache)
// hold or held; it is the one source of these counts (repo's
// AfterCommitStats reads it).
type RetryStats struct {
	// Failures counts the Apply calls some of whose effects failed: a
	// repository write whose upkeep failed after its commit counts one.
	Failures int64
	// Retried counts the ids and keys that a background retry then
	// applied.
	Retried int64
	// Dropped counts the ids and keys dropped because the retriers of the
	// process held maxPendingUpkeep of them already; a stale value or a
	// missing filter key may then last until the TTL or a filter rebuild.
	Dropped int64
	// Pending is the number of ids and keys awaiting a retry now: failed
	// invalidations (whoever asked for them: Apply, Entity.Invalidate,
	// Set) and the other effects that Apply queued. Those of a Cache that
	// is closed are dropped, uncounted.
	Pending int
}

// retryStats are the counters of RetryStats, shared by every Cache.
var retryStats struct {
	failures, retried, dropped, pending atomic.Int64
}

// GetRetryStats returns the counters of the retriers of every Cache of
// the process.
func GetRetryStats() RetryStats {
	return RetryStats{
		Failures: retryStats.failures.Load(),
		Retried:  retryStats.retried.Load(),
		Dropped:  retryStats.dropped.Load(),
		Pending:  int(retryStats.pending.Load()),
	}
}

// maxPendingUpkeep bounds the ids and keys awaiting a retry in the
// process; past it, new failed work is dropped and counted (Dropped). A
// variable for tests only, which lower it while nothing else runs.
var maxPendingUpkeep int64 = 1 << 20

// Apply does w's effects, as Effects.Run does, and queues the ones that
// failed in the background retry of one Cache, in order: an invalidation
// (Invalidate, StoreIfVersion) and InvalidateAll in its entity's Cache,
// where reads of its keys are held meanwhile; a Bump or a Patch in its
// lists' Cache; a filter's AddToFilter and Distrust in c. Each Cache
// retries until Redis takes the work or the Cache is closed, trying at
// once when Redis answers again; nothing else retries it. An effect whose
// Redis client was closed is not retried: it can never succeed.
//
// Apply returns nil when nothing needs a retry; otherwise it counts one
// failure (RetryStats), logs the first of a streak (and the streak's end,
// once the retry applied everything), and returns the errors joined.
// Past maxPendingUpkeep ids and keys queued in the process, what failed
// is dropped instead, counted and logged.
func (c *Cache) Apply(ctx context.Context, w *Effects) error {
	failed, held, err := w.try(ctx)
	if failed == nil && held == 0 {
		return nil
	}
	retryStats.failures.Add(1)
	if failed != nil {
		byCache := map[*Cache]*Effects{}
		var order []*Cache
		for _, e := range failed.list {
			home := e.cache()
			if home == nil {
				home = c
			}
			q := byCache[home]
			if q == nil {
				q = &Effects{lsn: failed.lsn}
				byCache[home] = q
				order = append(order, home)
			}
			q.add(e)
		}
		for _, home := range order {
			home.retry.addEffects(byCache[home], err)
		}
	}
	n := held
	if failed != nil {
		n += failed.Len()
	}
	r := &c.retry
	r.mu.Lock()
	first := !r.streak
	r.streak = r.streak || r.running // one line per streak of failures, not one per write
	r.mu.Unlock()
	if first {
		slog.Warn("asidekit: cache upkeep after a commit failed; retrying in the background",
			"keys", n, "err", err)
	}
	return err
}

// logDropped logs n ids and keys dropped: the retry queue was full.
func logDropped(n int, err error) {
	retryStats.dropped.Add(int64(n))
	slog.Error("asidekit: cache upkeep after a commit failed and the retry queue is full; dropped",
		"keys", n, "err", err)
}

// logApplied logs the end of a streak of failures: the retry applied all.
func logApplied() {
	s := GetRetryStats()
	slog.Info("asidekit: cache upkeep after commits applied by the background retry",
		"retried", s.Retried, "failures", s.Failures)
}

// cache returns the Cache that retries e when it fails, or nil for a
// filter's effect (Apply's receiver retries it).
func (e *Effect) cache() *Cache {
	switch {
	case e.ent != nil:
		return e.ent.cache()
	case e.lists != nil:
		return e.lists.c
	}
	return nil
}

// queuesItself reports whether e's entity queues the keys of e that fail
// in its Cache's retrier itself, its error then matching
// ErrInvalidationPending.
func (e *Effect) queuesItself() bool {
	return e.kind == effectInvalidate || e.kind == effectStoreIfVersion || e.kind == effectStoreFromLog
}
