package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/rowchange"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// A TRUNCATE that commits after a WriteThrough Update, and that repo/cdc
// applies (the Update's change, then the TRUNCATE's InvalidateAll, in
// commit order) between the Update's COMMIT and its store: the store
// must be refused, so that a read after the apply finds no row.
// InvalidateAll deletes versions (drop.lua), so the store is refused only
// because the version the Update read before its statement is a token of
// its own, which nothing recreates: Entity.Version starts one when the
// row has none. Two interleavings: nothing else, and a load of the row in
// another process after the COMMIT. With the version read a plain GET
// (the rule off) the Update compares with "", and finds "" again once
// InvalidateAll deleted the version that CDC's invalidation (or the load)
// started: it stores its row over the truncated table.
func TestWriteThrough_truncateBeforeStore(t *testing.T) {
	for _, load := range []bool{false, true} {
		name := "noLoad"
		if load {
			name = "loadBetween"
		}
		t.Run(name, func(t *testing.T) {
			if stale := writeThroughTruncate(t, load); stale != nil {
				t.Fatal(stale)
			}
		})
		t.Run(name+"_failsWithoutStart", func(t *testing.T) {
			repo.SetVersionStartOff(t, true)
			if stale := writeThroughTruncate(t, load); stale == nil {
				t.Fatal("with the version read a plain GET, no stale read: the test does not reach the store it is about")
			}
		})
	}
}

// writeThroughTruncate runs the interleaving (load: a load in another
// process between the Update's COMMIT and the TRUNCATE) and returns the
// stale read it found, or nil.
func writeThroughTruncate(t *testing.T, load bool) error {
	h := newTruncateHarness(t)
	ctx := context.Background()
	h.sql(t, `INSERT INTO wt_rows (id, name, at) VALUES (1, 'inserted', now())`)
	var once atomic.Bool
	repo.SetBeforeUpkeep(t, func() { // after the Update's COMMIT, before its store
		if !once.CompareAndSwap(false, true) {
			return
		}
		if load { // another process caches the row
			if _, err := h.reader.Get(ctx, 1); err != nil {
				t.Error(err)
			}
		}
		h.sql(t, `TRUNCATE wt_rows`)
		h.applyRow(t, 1) // repo/cdc, in commit order: the Update's change,
		h.truncate(t)    // then the TRUNCATE's
	})
	v := wtRow{ID: 1, Name: "updated", At: time.Now()}
	if err := h.writer.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	if !once.Load() {
		t.Fatal("the Update ran no upkeep")
	}
	got, err := h.reader.Get(ctx, 1)
	switch {
	case errors.Is(err, repo.ErrNotFound):
		return nil
	case err != nil:
		t.Fatal(err)
	}
	return errors.New("a read after the TRUNCATE was applied returned " + got.Name + ": the row the Update stored after it")
}

// A randomized history of WriteThrough writes (Create, Update) of three
// rows, plain-SQL updates, and plain-SQL transactions that TRUNCATE the
// table and insert some rows again, with a reader in another process and
// a change-data-capture apply that trails the log by a random number of
// changes: between a write's COMMIT and its store, CDC may apply none,
// some or all of what committed, the write's own change and a TRUNCATE
// after it included, and the reader may load a row. After each write,
// and now and then for every row, CDC catches up and the rows must read
// as the table holds them. It fails with the writers' version read a
// plain GET (the rule off).
func TestWriteThrough_truncateHistory(t *testing.T) {
	seed := rand.Uint64()
	if stale := truncateHistory(t, seed); len(stale) > 0 {
		t.Fatalf("seed %d: %d stale reads, first: %s", seed, len(stale), stale[0])
	}
}

func TestWriteThrough_truncateHistory_failsWithoutStart(t *testing.T) {
	repo.SetVersionStartOff(t, true)
	seed := rand.Uint64()
	stale := truncateHistory(t, seed)
	if len(stale) == 0 {
		t.Fatalf("seed %d: with the version read a plain GET, no stale read in the history", seed)
	}
	t.Logf("seed %d: %d stale reads, first: %s", seed, len(stale), stale[0])
}

// truncateHistory runs the history of seed and returns its stale reads.
func truncateHistory(t *testing.T, seed uint64) (stale []string) {
	const rows, steps = 3, 200
	h := newTruncateHarness(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	truth := map[int64]string{} // the table: id → name
	var log []int64             // committed changes CDC has not applied: a row's id, or 0 for a TRUNCATE
	apply := func(n int) {
		for _, id := range log[:n] {
			if id == 0 {
				h.truncate(t)
			} else {
				h.applyRow(t, id)
			}
		}
		log = log[n:]
	}
	for id := int64(1); id <= rows; id++ {
		name := "inserted"
		h.sql(t, `INSERT INTO wt_rows (id, name, at) VALUES (?, ?, now())`, id, name)
		truth[id] = name
	}
	var step int
	var writing wtRow // the write whose upkeep is next
	repo.SetBeforeUpkeep(t, func() {
		truth[writing.ID] = writing.Name // committed
		log = append(log, writing.ID)    // the write's own change
		if rng.IntN(2) == 0 {            // another process loads a row
			_, _ = h.reader.Get(ctx, 1+rng.Int64N(rows))
		}
		if rng.IntN(2) == 0 { // BEGIN; TRUNCATE; INSERT some; COMMIT
			h.sql(t, `TRUNCATE wt_rows`)
			clear(truth)
			for id := int64(1); id <= rows; id++ {
				if rng.IntN(2) == 0 {
					name := "t" + strconv.Itoa(step)
					h.sql(t, `INSERT INTO wt_rows (id, name, at) VALUES (?, ?, now())`, id, name)
					truth[id] = name
				}
			}
			log = append(log, 0) // the inserts after it are covered: it alone
		}
		switch rng.IntN(3) { // CDC trails the log by none, some or all of it
		case 0:
			apply(len(log))
		case 1:
			apply(rng.IntN(len(log) + 1))
		}
	})
	judge := func(ids ...int64) { // CDC catches up; the rows read as the table holds them
		apply(len(log))
		for _, id := range ids {
			got, err := h.reader.Get(ctx, id)
			want, ok := truth[id]
			switch {
			case !ok && errors.Is(err, repo.ErrNotFound), ok && err == nil && got.Name == want:
			case err != nil && !errors.Is(err, repo.ErrNotFound):
				t.Fatal(err)
			default:
				stale = append(stale, fmt.Sprintf("step %d: row %d read %q (err %v), the table holds %q (present %v)", step, id, got.Name, err, want, ok))
			}
		}
	}
	for step = range steps {
		id := 1 + rng.Int64N(rows)
		switch rng.IntN(8) {
		case 0, 1, 2, 3, 4: // a write through the repository
			v := wtRow{ID: id, Name: "w" + strconv.Itoa(step), At: time.Now()}
			writing = v
			var err error
			if _, ok := truth[id]; ok {
				err = h.writer.Update(ctx, &v)
			} else {
				err = h.writer.Create(ctx, &v)
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			judge(id) // only its row: a read starts versions, which the history needs without
		case 5, 6: // a plain-SQL update
			if _, ok := truth[id]; ok {
				name := "s" + strconv.Itoa(step)
				h.sql(t, `UPDATE wt_rows SET name = ? WHERE id = ?`, name, id)
				truth[id] = name
				log = append(log, id)
			}
		case 7:
			judge(1, 2, 3)
		}
	}
	return stale
}

// truncateHarness is a WriteThrough writer of wt_rows, a reader in
// another process, and the change-data-capture apply of their table, as
// repo/cdc's applier makes it.
type truncateHarness struct {
	db             interface{ Exec(string, ...any) error }
	writer, reader *repo.Repository[wtRow, int64]
	queue          interface {
		Queue(*cacheaside.Effects, rowchange.Change) ([]rowchange.Undecoded, error)
	}
}

func newTruncateHarness(t *testing.T) *truncateHarness {
	pg := testcontainers.Postgres(t)
	rn := testcontainers.Redis(t)
	e := newEnvOn(t, pg.DB, rn.Client, rn.Namespace)
	h := &truncateHarness{writer: e.wtRows(t, e.cache)}
	h.db = gormExec{e}
	var err error
	h.reader, err = repo.New[wtRow, int64](e.db, newCacheOn(t, rn.NewClient(t), e.ns),
		&repo.Options{Ownership: repo.OwnershipShared, Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	found, _ := rowchange.TableOf(h.writer)
	var ok bool
	if h.queue, ok = found.(interface {
		Queue(*cacheaside.Effects, rowchange.Change) ([]rowchange.Undecoded, error)
	}); !ok {
		t.Fatal("the writer has no change-data-capture table")
	}
	return h
}

// gormExec runs SQL on an env's database.
type gormExec struct{ e *env }

func (g gormExec) Exec(q string, args ...any) error { return g.e.db.Exec(q, args...).Error }

func (h *truncateHarness) sql(t *testing.T, q string, args ...any) {
	t.Helper()
	if err := h.db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// applyRow applies a committed change of row id as repo/cdc does (the
// repository's Queue, one Run).
func (h *truncateHarness) applyRow(t *testing.T, id int64) {
	t.Helper()
	var w cacheaside.Effects
	ch := rowchange.Change{Kind: rowchange.Update, New: rowchange.Row{{Name: "id", Type: 20, Text: []byte(strconv.FormatInt(id, 10))}}}
	if _, err := h.queue.Queue(&w, ch); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err != nil {
		t.Fatalf("CDC apply of row %d: %v", id, err)
	}
}

// truncate applies a TRUNCATE of the table as repo/cdc does.
func (h *truncateHarness) truncate(t *testing.T) {
	t.Helper()
	if err := h.writer.InvalidateAll(context.Background()); err != nil {
		t.Fatalf("CDC apply of a TRUNCATE: %v", err)
	}
}
