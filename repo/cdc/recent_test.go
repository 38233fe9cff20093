package cdc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
)

// An ALTER TABLE that changes a column's type rewrites its values without
// a change in the log (its operator drops the cache: InvalidateAll); the
// next change of the table comes after a Relation message with the new
// type, and the Invalidator forgets the rows it remembered. A handle
// upper-cased by the ALTER and lower-cased back by an UPDATE is then a
// changed value: the absence of the lower-case handle, cached in between,
// is dropped.
func TestInvalidator_recentRowsForgottenOnNewType(t *testing.T) {
	t.Parallel()
	if err := recentRowsAlter(t); err != nil {
		t.Fatal(err)
	}
}

// With the remembered rows kept across the new type, the UPDATE that
// lower-cases the handle back looks like one that leaves it alone, and
// the cached absence outlives it: the check can fail. (Not parallel: the
// switch is process-wide.)
func TestInvalidator_recentRowsForgottenOnNewType_failsKept(t *testing.T) {
	testswitch.RecentRowsRelationOff.Store(true)
	defer testswitch.RecentRowsRelationOff.Store(false)
	if err := recentRowsAlter(t); err == nil {
		t.Fatal("the handle reads right with the remembered rows kept across ALTER TABLE: the test cannot fail")
	}
}

// recentRowsAlter runs the steps above and returns the stale read.
func recentRowsAlter(t *testing.T) error {
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&sample.Member{}); err != nil {
		t.Fatal(err)
	}
	members, inv := e.followMembers(t, e.slot, repo.Options{Name: "members", UniqueKey: []string{"handle"}})
	e.exec(t, "INSERT INTO members (id, email, handle, name) VALUES (1, 'ada@example.com', 'ada', 'Ada')")
	e.sync(t, inv) // the row is remembered
	if m, err := members.GetBy(ctx, "handle", "ada"); err != nil || m.ID != 1 {
		t.Fatalf("GetBy(ada) = %+v, %v; want row 1", m, err)
	}

	// The ALTER is not in the log: its operator drops the table's cache.
	e.exec(t, "ALTER TABLE members ALTER COLUMN handle TYPE text USING upper(handle)")
	if err := members.InvalidateAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := members.GetBy(ctx, "handle", "ada"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("GetBy(ada) after the ALTER: err = %v, want ErrNotFound", err) // and cached so
	}
	e.exec(t, "UPDATE members SET handle = lower(handle) WHERE id = 1")
	e.sync(t, inv)
	if m, err := members.GetBy(ctx, "handle", "ada"); err != nil || m.ID != 1 {
		return errors.Join(errors.New("GetBy(ada) after the UPDATE that lower-cased it back"), err)
	}
	return nil
}
