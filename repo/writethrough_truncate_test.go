package repo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// A TRUNCATE that commits after a WriteThrough Update, and that repo/cdc
// applies (InvalidateAll) between the Update's COMMIT and its store: the
// store must be refused, so that a read after the TRUNCATE's apply finds
// no row. InvalidateAll deletes versions (drop.lua), so the store is
// refused only if the version the Update read before its statement is a
// token of its own: Entity.Version starts one when the row has none. Two
// interleavings: nothing between the Update's read and the TRUNCATE (the
// version the Update started is the one deleted), and a load of the row
// in another process after the COMMIT (it finds the Update's version,
// stores the row, and InvalidateAll deletes both). With the version read
// a plain GET (the rule off), the Update compares with "" and stores its
// row over the truncated table in both; before InvalidateAll deleted
// versions, the second was refused (the load's version was replaced) and
// the first was not (no version to replace).
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
	pg := testcontainers.Postgres(t)
	rn := testcontainers.Redis(t)
	e := newEnvOn(t, pg.DB, rn.Client, rn.Namespace)
	writer := e.wtRows(t, e.cache)
	reader, err := repo.New[wtRow, int64](e.db, newCacheOn(t, rn.NewClient(t), e.ns),
		&repo.Options{Ownership: repo.OwnershipShared, Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.db.Exec(`INSERT INTO wt_rows (id, name, at) VALUES (1, 'inserted', now())`).Error; err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	repo.SetBeforeUpkeep(t, func() { // after the Update's COMMIT, before its store
		if !once.CompareAndSwap(false, true) {
			return
		}
		if load { // another process caches the row, starting a version if none is there
			if _, err := reader.Get(ctx, 1); err != nil {
				t.Error(err)
			}
		}
		if err := e.db.Exec(`TRUNCATE wt_rows`).Error; err != nil {
			t.Error(err)
		}
		if err := writer.InvalidateAll(ctx); err != nil { // as repo/cdc applies the TRUNCATE
			t.Error(err)
		}
	})
	v := wtRow{ID: 1, Name: "updated", At: time.Now()}
	if err := writer.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	if !once.Load() {
		t.Fatal("the Update ran no upkeep")
	}
	got, err := reader.Get(ctx, 1)
	switch {
	case errors.Is(err, repo.ErrNotFound):
		return nil
	case err != nil:
		t.Fatal(err)
	}
	return errors.New("a read after the TRUNCATE was applied returned " + got.Name + ": the row the Update stored after it")
}
