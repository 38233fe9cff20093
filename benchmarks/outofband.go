package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"gorm.io/driver/postgres"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// Metrics of the outofband scenario.
const (
	MetricWrites          = "writes"
	MetricStaleP50        = "staleness_p50_ms"
	MetricStaleP99        = "staleness_p99_ms"
	MetricStaleMax        = "staleness_max_ms"
	MetricStaleAtEnd      = "stale_at_end"
	MetricBloomFalseNeg   = "bloom_false_negatives"
	MetricLostInvalidated = "lost_invalidations"
	MetricBulkRows        = "bulk_rows"
	MetricBulkApplyMS     = "bulk_apply_ms"
	MetricApplyRowsPerSec = "apply_rows_per_s"
	MetricBulkStale       = "bulk_stale"
	// The same UPDATE again, on the table with REPLICA IDENTITY FULL.
	MetricBulkApplyFullMS     = "bulk_apply_full_ms"
	MetricApplyRowsPerSecFull = "apply_rows_per_s_full"
	// The same UPDATE a third time, with the default identity again, of
	// rows the Invalidator does not remember (cdc.Options.RecentRows: the
	// change of identity made it forget them, as a restart would).
	MetricBulkApplyColdMS = "bulk_apply_cold_ms"
)

// OutOfBandParams size the outofband scenario.
type OutOfBandParams struct {
	// Instances is the number of simulated processes reading through
	// their own repository (one Redis client and Cache each).
	Instances int `json:"instances"`
	// Rate is the writer's plain-SQL writes per second, and Duration how
	// long it writes: 70% UPDATEs, 20% INSERTs of new ids, 10% DELETEs,
	// each of a row no other write of the run touches.
	Rate     int           `json:"writes_per_sec"`
	Duration time.Duration `json:"duration"`
	// Cap is how long a write's staleness is followed; a write not seen
	// by every process by then counts as Cap.
	Cap time.Duration `json:"staleness_cap"`
	// BulkRows is the size of the one plain-SQL UPDATE the cdc variant
	// makes after its writes, timed from its COMMIT returning to the
	// Invalidator having applied it; 0 skips it.
	BulkRows int `json:"bulk_rows"`
	// BurstRate is the single-row plain-SQL UPDATEs per second of the
	// burst the cdc variant sends after its bulk UPDATE, over the bulk's
	// rows, for BurstFor; burst_lag_ms is the Invalidator's lag when it
	// ends. 0 skips it.
	BurstRate int           `json:"burst_writes_per_sec"`
	BurstFor  time.Duration `json:"burst_for"`
	// TruncateRows is the size of the transaction the cdc variant ends
	// with: BEGIN; TRUNCATE users; INSERT TruncateRows rows; COMMIT,
	// timed from its COMMIT returning to the Invalidator having applied
	// it. 0 skips it.
	TruncateRows int `json:"truncate_rows"`
}

// DefaultOutOfBandParams are the sizes the targets are stated at:
// 500 writes/s for 6 s, read by 2 processes, then an UPDATE of 50,000
// rows, a burst of 5,000 writes/s for 5 s, and a TRUNCATE and INSERT of
// 50,000 rows in one transaction.
func DefaultOutOfBandParams() OutOfBandParams {
	return OutOfBandParams{Instances: 2, Rate: 500, Duration: 6 * time.Second, Cap: time.Second, BulkRows: 50_000,
		BurstRate: 5000, BurstFor: 5 * time.Second, TruncateRows: 50_000}
}

// oobWrite is one out-of-band write and what every process must read
// after it: the row with name, or no row (gone).
type oobWrite struct {
	id     int64
	name   string
	gone   bool
	insert bool
	at     time.Time // the COMMIT returned
	seen   []time.Duration
}

// RunOutOfBand measures how long processes reading through repo keep
// serving a row after a writer changed it with plain SQL, outside the
// repository: variant ttl_only (only TTLs and repo's own invalidation,
// which such writes bypass) against cdc (a repo/cdc Invalidator following
// the WAL), and cdc_restart (the Invalidator killed halfway and another
// started), whose stale rows at the end are lost_invalidations. It needs
// PostgreSQL with wal_level=logical; on the embedded backend it returns a
// Result with a note and no rows.
func RunOutOfBand(ctx context.Context, env *Env, p OutOfBandParams) (Result, error) {
	res := Result{Scenario: "outofband", Backend: env.Backend, Params: paramsMap(p)}
	if env.EmbeddedDB {
		res.Notes = append(res.Notes, "skipped: SQLite has no WAL stream to follow (needs PostgreSQL with wal_level=logical)")
		return res, nil
	}
	var level string
	if err := env.DB.WithContext(ctx).Raw("SHOW wal_level").Scan(&level).Error; err != nil {
		return res, err
	}
	p.Instances, p.Rate = max(p.Instances, 1), max(p.Rate, 1)
	n := int(float64(p.Rate) * p.Duration.Seconds())
	keys := max(n, 1)
	variants := []struct {
		name, notes string
		cdc, kill   bool
	}{
		{"ttl_only", "repo over cacheaside with a Bloom filter, TTL 10 min: plain-SQL writes invalidate nothing", false, false},
		{"cdc", "the same, with a repo/cdc Invalidator following the WAL", true, false},
		{"cdc_restart", "cdc, with the Invalidator killed halfway and a new one started", true, true},
	}
	for vi, v := range variants {
		if v.cdc && level != "logical" {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: wal_level is %s, not logical", v.name, level))
			continue
		}
		row, err := runOutOfBandVariant(ctx, env, p, keys, int64(vi+1)*int64(100*keys), v.name, v.cdc, v.kill)
		if err != nil {
			return res, fmt.Errorf("outofband: %s: %w", v.name, err)
		}
		row.Notes = v.notes
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("staleness: from the writer's COMMIT returning to every process reading the new state, capped at %v", p.Cap))
	return res, nil
}

// runOutOfBandVariant runs one variant on rows of its own: ids base+1 …
// base+keys exist (updated or deleted once each), ids from base+50·keys up
// are inserted.
func runOutOfBandVariant(ctx context.Context, env *Env, p OutOfBandParams, keys int, base int64, name string, withCDC, kill bool) (Row, error) {
	row := Row{Variant: name}
	err := env.DB.WithContext(ctx).Exec(`INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'oob' || i || '@example.com', 'before', now(), now() FROM generate_series(?::bigint, ?::bigint) i`,
		base+1, base+int64(keys)).Error
	if err != nil {
		return row, err
	}
	ns := env.Sub("oob-" + name)
	pol := cacheaside.Policy{TTL: 10 * time.Minute, NullTTL: time.Minute}
	repos := make([]*repo.Repository[sample.User, int64], p.Instances)
	for i := range repos {
		cache, err := cacheaside.New(env.NewClient(), &cacheaside.Options{Namespace: ns})
		if err != nil {
			return row, err
		}
		defer cache.Close()
		repos[i], err = repo.New[sample.User, int64](env.DB, cache, &repo.Options{Policy: pol,
			Filter: &bloom.Options{Namespace: ns, Capacity: int64(20 * keys), FalsePositiveRate: 0.001}})
		if err != nil {
			return row, err
		}
	}
	if err := repos[0].WarmFilter(ctx); err != nil {
		return row, err
	}

	// The writes, planned: distinct rows, in a shuffled order.
	writes := make([]*oobWrite, keys)
	for i := range writes {
		w := &oobWrite{id: base + int64(i+1), name: fmt.Sprintf("%s-%d", name, i), seen: make([]time.Duration, p.Instances)}
		switch r := i % 10; {
		case r < 2:
			w.id, w.insert = base+int64(50*keys+i), true
		case r == 2:
			w.gone = true
		}
		writes[i] = w
	}
	rand.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
	// Every process reads every row first: rows cached, new ids ruled out.
	ids := make([]int64, len(writes))
	for i, w := range writes {
		ids[i] = w.id
	}
	for _, r := range repos {
		if _, err := r.GetMany(ctx, ids); err != nil {
			return row, err
		}
	}

	var inv *cdc.Invalidator
	stopInv := func() {}
	if withCDC {
		dsn := env.DB.Dialector.(*postgres.Dialector).Config.DSN
		slot := "asidebench_" + randomHex(6)
		start := func() (*cdc.Invalidator, func(), error) {
			inv, err := cdc.New(dsn, &cdc.Options{Slot: slot, StandbyRetry: 100 * time.Millisecond})
			if err != nil {
				return nil, nil, err
			}
			if err := inv.Register(repos[0]); err != nil {
				return nil, nil, err
			}
			if err := inv.Setup(ctx); err != nil {
				return nil, nil, err
			}
			ictx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = inv.Run(ictx) }()
			stop := func() { cancel(); <-done }
			// The writes start once it streams (the slot captures them
			// from Setup on anyway; this keeps start-up out of the
			// staleness figures, except cdc_restart's second start).
			for deadline := time.Now().Add(time.Minute); !inv.Stats().Active; {
				if time.Now().After(deadline) {
					stop()
					return nil, nil, fmt.Errorf("the Invalidator did not take the slot: %v", inv.Stats().LastError)
				}
				time.Sleep(time.Millisecond)
			}
			return inv, stop, nil
		}
		var err error
		if inv, stopInv, err = start(); err != nil {
			return row, err
		}
		defer func() {
			stopInv()
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			for inv.Drop(dctx) != nil && dctx.Err() == nil {
				time.Sleep(50 * time.Millisecond) // the stopped walsender is exiting
			}
		}()
		if kill {
			// Halfway, the Invalidator dies mid-stream (whatever it had
			// not confirmed is replayed) and a new one starts.
			restart := func() error {
				stopInv()
				var err error
				inv, stopInv, err = start()
				return err
			}
			if err := oobWriteAll(ctx, env, p, repos, writes, len(writes)/2, restart); err != nil {
				return row, err
			}
			return oobFinish(ctx, repos, writes, row, true)
		}
	}
	if err := oobWriteAll(ctx, env, p, repos, writes, -1, nil); err != nil {
		return row, err
	}
	if row, err = oobFinish(ctx, repos, writes, row, false); err != nil || inv == nil || p.BulkRows <= 0 {
		return row, err
	}
	if row, err = oobBulk(ctx, env, repos[0], inv, bulkBase+base, p.BulkRows, row); err != nil {
		return row, err
	}
	if row, err = oobBurst(ctx, env, inv, bulkBase+base, p.BulkRows, p, row); err != nil {
		return row, err
	}
	return oobTruncate(ctx, env, repos[0], inv, bulkBase+base, p.TruncateRows, row)
}

// bulkBase is where the ids of oobBulk's rows start, above those of every
// variant's writes.
const bulkBase = 1_000_000_000_000

// oobBulk inserts rows ids from+1 … from+n, updates them all in one plain-SQL
// statement and times the Invalidator's apply of it: from the COMMIT
// returning to CatchUp returning (Position, then Wait). It does so three
// times: with the table's default REPLICA IDENTITY, the log holding no old
// row, but the Invalidator remembering every row it inserted
// (cdc.Options.RecentRows: an unchanged email needs nothing); with FULL
// (the old email is in the log); and with the default identity again,
// the Invalidator having forgotten the rows when the identity changed
// (every row's email mapping is dropped and its email added to the
// filter: bulk_apply_cold_ms). A sample of the rows
// is read through r before each UPDATE (cached) and after it: bulk_stale
// counts those still old, in both.
func oobBulk(ctx context.Context, env *Env, r *repo.Repository[sample.User, int64], inv *cdc.Invalidator, from int64, n int, row Row) (Row, error) {
	db := env.DB.WithContext(ctx)
	err := db.Exec(`INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'bulk' || i || '@example.com', 'before', now(), now() FROM generate_series(?::bigint, ?::bigint) i`,
		from+1, from+int64(n)).Error
	if err != nil {
		return row, err
	}
	if err := inv.CatchUp(ctx); err != nil { // the inserts are not part of the figure
		return row, err
	}
	sample := sampleIDs(from, n) // cached before each UPDATE, read again after it is applied
	update := func(name string) (time.Duration, int, error) {
		return timedApply(ctx, r, inv, sample, name, func() error {
			return db.Exec("UPDATE users SET name = ? WHERE id > ? AND id <= ?", name, from, from+int64(n)).Error
		})
	}
	took, stale, err := update("bulk")
	if err != nil {
		return row, err
	}
	if err := db.Exec("ALTER TABLE users REPLICA IDENTITY FULL").Error; err != nil {
		return row, err
	}
	defer func() { _ = db.Exec("ALTER TABLE users REPLICA IDENTITY DEFAULT").Error }()
	tookFull, staleFull, err := update("bulk full")
	if err != nil {
		return row, err
	}
	if err := db.Exec("ALTER TABLE users REPLICA IDENTITY DEFAULT").Error; err != nil {
		return row, err
	}
	tookCold, staleCold, err := update("bulk cold")
	if err != nil {
		return row, err
	}
	row.Set(MetricBulkRows, float64(n))
	row.Set(MetricBulkApplyMS, float64(took.Microseconds())/1000)
	row.Set(MetricApplyRowsPerSec, float64(n)/took.Seconds())
	row.Set(MetricBulkApplyFullMS, float64(tookFull.Microseconds())/1000)
	row.Set(MetricApplyRowsPerSecFull, float64(n)/tookFull.Seconds())
	row.Set(MetricBulkApplyColdMS, float64(tookCold.Microseconds())/1000)
	row.Set(MetricBulkStale, float64(stale+staleFull+staleCold))
	return row, nil
}

// oobWriteAll runs the writer at p.Rate while one follower per process
// reads the written rows until it sees each write's new state (or Cap
// passes). At write number killAt it calls kill.
func oobWriteAll(ctx context.Context, env *Env, p OutOfBandParams, repos []*repo.Repository[sample.User, int64], writes []*oobWrite, killAt int, kill func() error) error {
	feeds := make([]chan *oobWrite, len(repos))
	var wg sync.WaitGroup
	for i, r := range repos {
		feeds[i] = make(chan *oobWrite, len(writes))
		wg.Go(func() { oobFollow(ctx, r, i, feeds[i], p.Cap) })
	}
	defer func() {
		for _, f := range feeds {
			close(f)
		}
		wg.Wait()
	}()
	interval := time.Second / time.Duration(p.Rate)
	next := time.Now()
	var killErr chan error
	for i, w := range writes {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(interval)
		if i == killAt && kill != nil {
			killErr = make(chan error, 1)
			go func() { killErr <- kill() }()
		}
		var err error
		switch {
		case w.insert:
			err = env.DB.WithContext(ctx).Exec("INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, ?, now(), now())",
				w.id, fmt.Sprintf("oob%d@example.com", w.id), w.name).Error
		case w.gone:
			err = env.DB.WithContext(ctx).Exec("DELETE FROM users WHERE id = ?", w.id).Error
		default:
			err = env.DB.WithContext(ctx).Exec("UPDATE users SET name = ? WHERE id = ?", w.name, w.id).Error
		}
		if err != nil {
			return err
		}
		w.at = time.Now()
		for _, f := range feeds {
			f <- w
		}
	}
	if killErr != nil {
		return <-killErr
	}
	return nil
}

// oobFollow reads, through process i's repository, every pending write's
// row in one GetMany per round until it shows the write.
func oobFollow(ctx context.Context, r *repo.Repository[sample.User, int64], i int, feed <-chan *oobWrite, capAge time.Duration) {
	var pending []*oobWrite
	open := true
	for open || len(pending) > 0 {
		if len(pending) == 0 {
			w, ok := <-feed
			if !ok {
				return
			}
			pending = append(pending, w)
		}
	drain:
		for {
			select {
			case w, ok := <-feed:
				if !ok {
					open = false
					break drain
				}
				pending = append(pending, w)
			default:
				break drain
			}
		}
		ids := make([]int64, len(pending))
		for j, w := range pending {
			ids[j] = w.id
		}
		got, err := r.GetMany(ctx, ids)
		now := time.Now()
		pending = slices.DeleteFunc(pending, func(w *oobWrite) bool {
			u, ok := got[w.id]
			fresh := err == nil && ((w.gone && !ok) || (!w.gone && ok && u.Name == w.name))
			switch {
			case fresh:
				w.seen[i] = now.Sub(w.at)
			case now.Sub(w.at) >= capAge:
				w.seen[i] = capAge
			default:
				return false
			}
			return true
		})
		if len(pending) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// oobFinish waits one second after the last write, then counts the rows
// some process still reads stale, and fills the row's metrics.
func oobFinish(ctx context.Context, repos []*repo.Repository[sample.User, int64], writes []*oobWrite, row Row, lost bool) (Row, error) {
	time.Sleep(time.Second)
	ids := make([]int64, len(writes))
	for i, w := range writes {
		ids[i] = w.id
	}
	stale := map[int64]bool{}
	bloomFN := map[int64]bool{}
	for _, r := range repos {
		got, err := r.GetMany(ctx, ids)
		if err != nil && !errors.Is(err, repo.ErrNotFound) {
			return row, err
		}
		for _, w := range writes {
			u, ok := got[w.id]
			if (w.gone && ok) || (!w.gone && (!ok || u.Name != w.name)) {
				stale[w.id] = true
				if w.insert && !ok {
					bloomFN[w.id] = true
				}
			}
		}
	}
	lat := make([]time.Duration, len(writes))
	for i, w := range writes {
		lat[i] = slices.Max(w.seen)
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
	}
	row.Set(MetricWrites, float64(len(writes)))
	row.Set(MetricStaleP50, q(0.50))
	row.Set(MetricStaleP99, q(0.99))
	row.Set(MetricStaleMax, float64(lat[len(lat)-1].Microseconds())/1000)
	row.Set(MetricStaleAtEnd, float64(len(stale)))
	row.Set(MetricBloomFalseNeg, float64(len(bloomFN)))
	if lost {
		row.Set(MetricLostInvalidated, float64(len(stale)))
	}
	return row, nil
}
