package configstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/configstore"
	"github.com/asidekit/asidekit/schema"
)

// Done when: drift of two kinds, a field changed in Redis only and a row
// added in the DB only; Reconcile fixes both and reports 2 fixes.
func TestStore_Reconcile_twoKindsOfDrift(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2", "c": "3"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 0 {
		t.Fatalf("Reconcile of a synced store = %+v, %v; want no fixes", r, err)
	}

	// Changed in Redis only: same version, another value.
	if err := b.r.Client.HSet(ctx, s.Key(), "a", "1:changed in redis").Err(); err != nil {
		t.Fatal(err)
	}
	// Added in the DB only.
	row := schema.Config{Namespace: s.Scope(), Key: "d", Value: ptr("4"), Version: 1, UpdatedAt: time.Now()}
	if err := b.pg.DB.Create(&row).Error; err != nil {
		t.Fatal(err)
	}

	r, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fixes() != 2 || !slices.Equal(r.Stale, []string{"a"}) || !slices.Equal(r.Missing, []string{"d"}) ||
		len(r.Extra) != 0 || len(r.Skipped) != 0 {
		t.Fatalf("Reconcile = %+v, want Stale [a], Missing [d]: 2 fixes", r)
	}
	if h, db := hashState(t, b.r.Client, s.Key()), dbState(t, b.pg.DB, s.Scope()); !mapsEqual(h, db) {
		t.Fatalf("after Reconcile hash = %q, table = %q", h, db)
	}
	for k, want := range map[string]string{"a": "1", "d": "4"} {
		if v, err := s.Get(ctx, k); err != nil || v != want {
			t.Errorf("Get(%s) = %q, %v; want %q", k, v, err, want)
		}
	}
	if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 0 {
		t.Fatalf("second Reconcile = %+v, %v; want no fixes", r, err)
	}
	if st := s.Stats(); st.Reconciles != 3 || st.Fixes != 2 {
		t.Errorf("Stats = %+v, want 3 reconciles, 2 fixes", st)
	}
}

// The other kinds: a value left in Redis after a delete, one that was never
// in the table, a foreign entry, a stale version, and a missing hash.
func TestStore_Reconcile_otherDrift(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.SetMany(ctx, map[string]string{"deleted": "x", "old": "v1", "foreign": "f", "kept": "k"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "old", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Client.HSet(ctx, s.Key(),
		"deleted", "1:x", // the delete's copy was lost
		"old", "1:v1", // an older version
		"foreign", "not an entry",
		"stray", "7:never in the table",
	).Err(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Stale, []string{"foreign", "old"}) || !slices.Equal(r.Extra, []string{"deleted", "stray"}) ||
		len(r.Missing) != 0 || !r.Built {
		t.Fatalf("Reconcile = %+v", r)
	}
	if h, db := hashState(t, b.r.Client, s.Key()), dbState(t, b.pg.DB, s.Scope()); !mapsEqual(h, db) {
		t.Fatalf("after Reconcile hash = %q, table = %q", h, db)
	}

	// A missing hash: everything is missing, and Reconcile builds it.
	if err := b.r.Client.Del(ctx, s.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	r, err = s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Missing, []string{"foreign", "kept", "old"}) || !r.Built || r.Fixes() != 3 {
		t.Fatalf("Reconcile of a missing hash = %+v", r)
	}
	queries := countStatements(t, b.pg.DB)
	if _, err := s.All(ctx); err != nil {
		t.Fatal(err)
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("All after Reconcile built the hash ran %d statements", n)
	}
}

func TestStore_Run(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	var calls, fixes atomic.Int64
	s := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{OnReconcile: func(r configstore.Report, err error) {
		if err == nil {
			fixes.Add(int64(r.Fixes()))
		}
		calls.Add(1)
	}})
	if err := s.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Client.HSet(ctx, s.Key(), "k", "1:drifted").Err(); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx, 10*time.Millisecond) }()
	eventually(t, "two reconciliations", func() bool { return calls.Load() >= 2 })
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if fixes.Load() != 1 {
		t.Errorf("Run reported %d fixes, want 1", fixes.Load())
	}
	if v, err := s.Get(ctx, "k"); err != nil || v != "v" {
		t.Errorf("Get after Run = %q, %v", v, err)
	}
	if err := s.Run(ctx, 0); !errors.Is(err, configstore.ErrInvalid) {
		t.Errorf("Run with interval 0: %v, want ErrInvalid", err)
	}
}

func TestStore_Run_callbackPanics(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	s := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{OnReconcile: func(configstore.Report, error) {
		panic("boom")
	}})
	err := s.Run(ctxT(t), 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "OnReconcile panicked: boom") {
		t.Fatalf("Run = %v, want the panic as an error", err)
	}
}
