package cdc_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// hrow is the row of the log-stores history: ver counts its writes.
type hrow struct {
	ID      int64  `gorm:"primaryKey"`
	Ver     int64  `gorm:"not null"`
	Name    string `gorm:"not null"`
	Deleted gorm.DeletedAt
}

// hgone holds the version of a deleted hrow (its DELETE's), which its
// next INSERT continues.
type hgone struct {
	ID  int64 `gorm:"primaryKey"`
	Ver int64 `gorm:"not null"`
}

// hAcks are one row's acknowledged writes, and the DELETEs begun.
type hAcks struct {
	mu      sync.Mutex
	acks    []hAck
	deletes []hAck // at: when the DELETE began
}

type hAck struct {
	ver    int64
	absent bool // a DELETE's
	at     time.Time
}

func (h *hAcks) add(list *[]hAck, a hAck) {
	h.mu.Lock()
	*list = append(*list, a)
	h.mu.Unlock()
}

// newest returns the newest write acknowledged before t (version 0, the
// inserted row, if none).
func (h *hAcks) newest(t time.Time) hAck {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n hAck
	for _, a := range h.acks {
		if a.at.Before(t) && a.ver > n.ver {
			n = a
		}
	}
	return n
}

// old reports whether a read that began at begin and ended at end is
// older than a write acknowledged before it began: a row of a lower
// version, or an absence where a row was acknowledged and no newer
// DELETE began before the read ended.
func (h *hAcks) old(begin, end time.Time, got *hrow) bool {
	want := h.newest(begin)
	if got != nil {
		return got.Ver < want.ver
	}
	if want.absent {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.deletes {
		if d.ver > want.ver && d.at.Before(end) {
			return false
		}
	}
	return true
}

// Sizes of logStoresHistory.
const (
	hRows      = 3
	hProcs     = 3
	hReaders   = 2 // per process
	hWritesPer = 30
)

// Rows from the log (Options.LogStores) where they meet repository writes:
// three processes (one writing through) read a few rows back to back
// while two writers change them with plain SQL (UPDATEs, soft deletes and
// their undoing, DELETEs and INSERTs again of the same ids: absences are
// stored too; acknowledged once Invalidator.Wait returned) and two with
// the repository's Modify (acknowledged when it returned), and the
// Invalidator lags (0–3 ms after each transaction it applies; and 0–20
// ms, the lag of the rule-off plays), so that it stores rows of changes
// older than repository writes that completed. Every read must return a
// version at least the newest acknowledged before it began (an absence:
// unless a DELETE began before it ended).
func TestInvalidator_logStoresHistory(t *testing.T) {
	t.Parallel()
	for _, lag := range []time.Duration{3 * time.Millisecond, lagRuleOff} {
		t.Run(fmt.Sprintf("lag=%v", lag), func(t *testing.T) {
			t.Parallel()
			old, reads := logStoresHistory(t, logStoresHistoryDB(t), true, lag)
			if old != 0 {
				t.Fatalf("%d of %d reads returned a row older than a write acknowledged before they began", old, reads)
			}
			t.Logf("0 of %d reads old", reads)
		})
	}
}

// With the rule off (testswitch.LogStoreCompareOff: a row from the log
// stored over any version that records a position) the Invalidator's
// older rows overwrite the repository's newer ones: reads find them
// within a few plays (at lagRuleOff: at 3 ms a quiet machine needed up to
// 6 plays). Not parallel: the switch is the process's (a
// parallel test's plays with the rule on would run with it off).
func TestInvalidator_logStoresHistory_failsRuleOff(t *testing.T) {
	pg := logStoresHistoryDB(t)
	testswitch.LogStoreCompareOff.Store(true)
	defer testswitch.LogStoreCompareOff.Store(false)
	for play := 1; play <= 20; play++ {
		old, reads := logStoresHistory(t, pg, false, lagRuleOff)
		t.Logf("play %d: %d of %d reads old", play, old, reads)
		if old > 0 {
			return
		}
	}
	t.Fatal("no old read in 20 plays: the test shows nothing")
}

// logStoresHistoryDB returns a database with the history's tables.
func logStoresHistoryDB(t *testing.T) *testcontainers.PostgresDB {
	pg := testcontainers.LogicalPostgres(t)
	if err := pg.DB.AutoMigrate(&hrow{}, &hgone{}); err != nil {
		t.Fatal(err)
	}
	return pg
}

// logStoresHistory plays the history once on a database of pg, the
// Invalidator sleeping up to lag after each transaction it applies, and
// returns the reads that returned an old row, and all reads.
func logStoresHistory(t *testing.T, pg *testcontainers.PostgresDB, rule bool, lag time.Duration) (old, reads int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	rn := testcontainers.Redis(t)
	db := pg.DB
	if err := db.Exec("TRUNCATE hrows, hgones").Error; err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= hRows; id++ {
		if err := db.Exec("INSERT INTO hrows (id, ver, name) VALUES (?, 0, 'v0')", id).Error; err != nil {
			t.Fatal(err)
		}
	}
	var caches []*cacheaside.Cache
	open := func(writeThrough bool) *repo.Repository[hrow, int64] {
		cache, err := cacheaside.New(rn.NewClient(t), &cacheaside.Options{Namespace: rn.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cache.Close() })
		caches = append(caches, cache)
		r, err := repo.New[hrow, int64](db, cache, &repo.Options{Policy: cacheaside.Policy{TTL: time.Hour},
			LogStores: true, WriteThrough: writeThrough})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	procs := make([]*repo.Repository[hrow, int64], hProcs)
	for i := range procs {
		procs[i] = open(i == 0)
	}
	slot := fmt.Sprintf("test_h%d_%x", map[bool]int{true: 1, false: 0}[rule], rand.Uint64())
	inv, err := cdc.New(pg.DSN, &cdc.Options{Slot: slot})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(procs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Drop(context.Background()) })
	cdc.SetAfterApply(inv, func(cdc.LSN) error { // the Invalidator lags
		time.Sleep(rand.N(lag))
		return nil
	})
	run(t, inv)
	if err := inv.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		if err := c.WaitRecovered(ctx); err != nil {
			t.Fatal(err)
		}
	}

	acked := make([]hAcks, hRows+1)
	ack := func(id, ver int64, absent bool, at time.Time) {
		acked[id].add(&acked[id].acks, hAck{ver: ver, absent: absent, at: at})
	}
	// The plain-SQL writes: an UPDATE, a soft delete or its undoing, a
	// DELETE (its version moved to hgones), or an INSERT of a deleted id
	// (the version after it); each returns the version it wrote, none if
	// the row was not there (or was).
	sqlWrites := []struct {
		absent bool
		sql    string
	}{
		{false, "UPDATE hrows SET ver = ver + 1, name = ? WHERE id = ? AND deleted IS NULL RETURNING ver"},
		{false, "UPDATE hrows SET ver = ver + 1, name = ? WHERE id = ? AND deleted IS NULL RETURNING ver"},
		{true, "UPDATE hrows SET ver = ver + 1, name = ?, deleted = now() WHERE id = ? AND deleted IS NULL RETURNING ver"},
		{false, "UPDATE hrows SET ver = ver + 1, name = ?, deleted = NULL WHERE id = ? AND deleted IS NOT NULL RETURNING ver"},
		{true, `WITH d AS (DELETE FROM hrows WHERE id = @id RETURNING id, ver)
			INSERT INTO hgones (id, ver) SELECT id, ver + 1 FROM d WHERE @name <> ''
			ON CONFLICT (id) DO UPDATE SET ver = EXCLUDED.ver RETURNING ver`},
		{false, `WITH g AS (DELETE FROM hgones WHERE id = @id RETURNING id, ver)
			INSERT INTO hrows (id, ver, name) SELECT id, ver + 1, @name FROM g RETURNING ver`},
	}
	var deletes, absentReads atomic.Int64
	var writers, readers sync.WaitGroup
	var stop atomic.Bool
	fail := make(chan error, 16)
	// Plain SQL: acknowledged once the Invalidator applied it.
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range hWritesPer {
				id := int64(1 + rand.IntN(hRows))
				op := sqlWrites[rand.IntN(len(sqlWrites))]
				name := fmt.Sprint("sql", w)
				var args []any
				if op.sql[0] == 'W' {
					args = []any{sql.Named("id", id), sql.Named("name", name)}
				} else {
					args = []any{name, id}
				}
				begin := time.Now()
				var vers []int64
				if err := db.Raw(op.sql, args...).Scan(&vers).Error; err != nil {
					fail <- err
					return
				}
				if len(vers) == 0 {
					continue // not there (or there already): no write
				}
				ver := vers[0]
				if op.absent {
					acked[id].add(&acked[id].deletes, hAck{ver: ver, absent: true, at: begin})
					deletes.Add(1)
				}
				if err := waitWritten(ctx, db, inv); err != nil {
					fail <- err
					return
				}
				ack(id, ver, op.absent, time.Now())
			}
		}()
	}
	// Through the repository, in two processes (one writes through).
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			r := procs[w]
			for range hWritesPer {
				id := int64(1 + rand.IntN(hRows))
				v, err := r.Modify(ctx, id, map[string]any{"ver": gorm.Expr("ver + 1"), "name": fmt.Sprint("repo", w)})
				if errors.Is(err, repo.ErrNotFound) {
					continue // deleted: no write
				}
				if err != nil {
					fail <- err
					return
				}
				ack(id, v.Ver, false, time.Now())
			}
		}()
	}
	// The reads, judged once every write is recorded: a DELETE that
	// began before a read ended is recorded only once it returned.
	type hRead struct {
		id         int64
		begin, end time.Time
		row        *hrow // nil: absent
	}
	var observed [hProcs * hReaders][]hRead
	for i, r := range procs {
		for j := range hReaders {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for !stop.Load() {
					id := int64(1 + rand.IntN(hRows))
					begin := time.Now()
					got, err := r.Get(ctx, id)
					end := time.Now()
					row := &got
					if errors.Is(err, repo.ErrNotFound) {
						row = nil
						absentReads.Add(1)
					} else if err != nil {
						fail <- err
						return
					}
					observed[i*hReaders+j] = append(observed[i*hReaders+j], hRead{id, begin, end, row})
				}
			}()
		}
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	for _, obs := range observed {
		for _, o := range obs {
			reads++
			if acked[o.id].old(o.begin, o.end, o.row) {
				old++
			}
		}
	}
	select {
	case err := <-fail:
		t.Fatal(err)
	default:
	}
	if s := inv.Stats(); s.Skipped != 0 || s.Undecoded != 0 {
		t.Fatalf("%d changes skipped, %d undecoded: %v", s.Skipped, s.Undecoded, s.LastError)
	}
	var loads uint64
	for _, r := range procs {
		loads += r.Stats().Loads
	}
	t.Logf("rule %v: %d loads for %d reads (%d of them absent) and %d writes tried (%d DELETEs and soft deletes)", rule, loads, reads, absentReads.Load(), 4*hWritesPer, deletes.Load())
	return old, reads
}
