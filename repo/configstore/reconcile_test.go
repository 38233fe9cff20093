package configstore_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// beforeScript runs fn once, just before the first call of one of the
// package's scripts on the client it hooks.
type beforeScript struct {
	src, sha string
	once     sync.Once
	fn       func()
}

func hookScript(t *testing.T, file string, fn func()) *beforeScript {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return &beforeScript{src: string(src), sha: fmt.Sprintf("%x", sha1.Sum(src)), fn: fn}
}

func (h *beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && (args[1] == h.sha || args[1] == h.src) {
			h.once.Do(h.fn)
		}
		return next(ctx, cmd)
	}
}

func (h *beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Reconcile builds a missing hash from a table read; if a Delete commits
// after that read and the hash is deleted (evicted) again before the
// repair lands, the repair must not bring the deleted value back.
func TestStore_Reconcile_hashDeletedBeforeRepair(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	other := b.store(t, b.r.NewClient(t), b.openDB(t), nil)
	if err := other.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Client.Del(ctx, other.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	c := b.r.NewClient(t)
	c.AddHook(hookScript(t, "fix.lua", func() {
		if err := other.Delete(ctx, "b"); err != nil {
			t.Error(err)
		}
		if err := b.r.Client.Del(ctx, other.Key()).Err(); err != nil {
			t.Error(err)
		}
	}))
	s := b.store(t, c, b.pg.DB, nil)
	r, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Built || r.Fixes() != 0 || !slices.Equal(r.Skipped, []string{"a", "b"}) {
		t.Fatalf("Reconcile = %+v, want nothing repaired, a and b skipped", r)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("Get of the deleted key: %v", err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Fatalf("Get a = %q, %v", v, err)
	}
}
