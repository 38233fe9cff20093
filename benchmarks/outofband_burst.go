package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// Metrics of the outofband scenario's burst and truncate steps (the cdc
// variant, after its bulk UPDATE).
const (
	MetricBurstWrites   = "burst_writes"
	MetricBurstRate     = "burst_writes_per_s"
	MetricBurstLagMS    = "burst_lag_ms"
	MetricTruncateRows  = "truncate_rows"
	MetricTruncateMS    = "truncate_insert_apply_ms"
	MetricTruncateStale = "truncate_stale"
)

const (
	burstConns           = 16 // the burst's writers: one connection each
	truncateInsertedName = "reinserted"
)

// oobBurst sends single-row plain-SQL UPDATEs of the rows ids from+1 …
// from+n at p.BurstRate for p.BurstFor, from burstConns connections, and
// times the Invalidator's lag when the burst ends: from the last write's
// COMMIT returning to CatchUp returning. It reports the writes made and
// the rate reached (a 2-core machine may not reach the rate asked).
func oobBurst(ctx context.Context, env *Env, inv *cdc.Invalidator, from int64, n int, p OutOfBandParams, row Row) (Row, error) {
	if p.BurstRate <= 0 || p.BurstFor <= 0 || n <= 0 {
		return row, nil
	}
	db := env.DB.WithContext(ctx)
	interval := time.Duration(float64(time.Second) * burstConns / float64(p.BurstRate))
	start := time.Now()
	end := start.Add(p.BurstFor)
	var mu sync.Mutex
	var writes int
	var firstErr error
	var wg sync.WaitGroup
	for c := range burstConns {
		wg.Go(func() {
			next := start.Add(interval * time.Duration(c) / burstConns)
			for k := 0; ; k++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if !time.Now().Before(end) {
					return
				}
				id := from + 1 + rand.Int64N(int64(n))
				err := db.Exec("UPDATE users SET name = ? WHERE id = ?", fmt.Sprintf("burst-%d-%d", c, k), id).Error
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				writes++
				mu.Unlock()
				if err != nil {
					return
				}
				next = next.Add(interval)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return row, firstErr
	}
	ended := time.Now()
	if err := inv.CatchUp(ctx); err != nil {
		return row, err
	}
	lag := time.Since(ended)
	row.Set(MetricBurstWrites, float64(writes))
	row.Set(MetricBurstRate, float64(writes)/ended.Sub(start).Seconds())
	row.Set(MetricBurstLagMS, float64(lag.Microseconds())/1000)
	return row, nil
}

// oobTruncate empties users and fills it again with n rows, ids from+1 …
// from+n, in one transaction (BEGIN; TRUNCATE; INSERT …; COMMIT), and
// times the Invalidator's apply of it from the COMMIT returning to
// CatchUp returning. A sample of the rows is read through r before (cached,
// as the bulk steps left them) and after: truncate_stale counts those not
// read as inserted.
func oobTruncate(ctx context.Context, env *Env, r *repo.Repository[sample.User, int64], inv *cdc.Invalidator, from int64, n int, row Row) (Row, error) {
	if n <= 0 {
		return row, nil
	}
	sql := fmt.Sprintf(`BEGIN;
		TRUNCATE users;
		INSERT INTO users (id, email, name, created_at, updated_at)
			SELECT i, 'bulk' || i || '@example.com', '%s', now(), now() FROM generate_series(%d::bigint, %d::bigint) i;
		COMMIT`, truncateInsertedName, from+1, from+int64(n))
	took, stale, err := timedApply(ctx, r, inv, sampleIDs(from, n), truncateInsertedName, func() error {
		return env.DB.WithContext(ctx).Exec(sql).Error
	})
	if err != nil {
		return row, err
	}
	row.Set(MetricTruncateRows, float64(n))
	row.Set(MetricTruncateMS, float64(took.Microseconds())/1000)
	row.Set(MetricTruncateStale, float64(stale))
	return row, nil
}

// sampleIDs returns about 100 ids spread over from+1 … from+n: the rows
// a bulk step reads before and after it.
func sampleIDs(from int64, n int) []int64 {
	ids := make([]int64, 0, 100)
	for id := from + 1; id <= from+int64(n); id += max(int64(n)/100, 1) {
		ids = append(ids, id)
	}
	return ids
}

// timedApply reads ids through r (cached), runs write, and times the
// Invalidator's apply of it: from write returning (its COMMIT) to
// CatchUp returning. stale counts the rows of ids read afterwards whose
// name is not want.
func timedApply(ctx context.Context, r *repo.Repository[sample.User, int64], inv *cdc.Invalidator, ids []int64, want string, write func() error) (took time.Duration, stale int, err error) {
	if _, err := r.GetMany(ctx, ids); err != nil {
		return 0, 0, err
	}
	if err := write(); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := inv.CatchUp(ctx); err != nil {
		return 0, 0, err
	}
	took = time.Since(start)
	got, err := r.GetMany(ctx, ids)
	if err != nil {
		return 0, 0, err
	}
	for _, id := range ids {
		if got[id].Name != want {
			stale++
		}
	}
	return took, stale, nil
}
