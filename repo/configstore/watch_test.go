package configstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo/configstore"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

// follow keeps local up to date from s.Watch until ctx ends.
func follow(t *testing.T, ctx context.Context, s *configstore.Store, local *configstore.Local) <-chan struct{} {
	t.Helper()
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range ch {
			local.Apply(c)
		}
	}()
	return done
}

func converges(t *testing.T, local *configstore.Local, want func() map[string]string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !mapsEqual(local.All(), want()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the local copy to converge: it holds %v, want %v", local.All(), want())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A process keeps a local copy from Watch while another writes.
func TestStore_Watch_localCopyConverges(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	writer := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := writer.SetMany(ctx, map[string]string{"before": "1", "gone": "x"}); err != nil {
		t.Fatal(err)
	}
	reader := b.store(t, b.r.NewClient(t), b.pg.DB, nil)
	var local configstore.Local
	follow(t, ctx, reader, &local)
	converges(t, &local, func() map[string]string { return map[string]string{"before": "1", "gone": "x"} })

	if err := writer.Set(ctx, "after", "2"); err != nil {
		t.Fatal(err)
	}
	if err := writer.SetMany(ctx, map[string]string{"before": "1b", "many": "m"}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"before": "1b", "after": "2", "many": "m"}
	converges(t, &local, func() map[string]string { return want })
	if v, ok := local.Get("gone"); ok {
		t.Errorf("deleted key still in the local copy: %q", v)
	}
}

// A write whose copy into Redis was lost (here: made in the table behind
// the store's back) reaches the local copy through Reconcile.
func TestStore_Watch_missedChange_reconcileCatchesUp(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	var local configstore.Local
	follow(t, ctx, b.store(t, b.r.NewClient(t), b.pg.DB, nil), &local)
	converges(t, &local, func() map[string]string { return map[string]string{"a": "1", "b": "2"} })

	if err := b.pg.DB.Model(&schema.Config{}).Where("namespace = ? AND key = ?", s.Scope(), "a").
		Updates(map[string]any{"value": "1b", "version": gorm.Expr("version + 1")}).Error; err != nil {
		t.Fatal(err)
	}
	if err := b.pg.DB.Model(&schema.Config{}).Where("namespace = ? AND key = ?", s.Scope(), "b").
		Updates(map[string]any{"value": nil, "version": gorm.Expr("version + 1")}).Error; err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 2 {
		t.Fatalf("Reconcile = %+v, %v", r, err)
	}
	converges(t, &local, func() map[string]string { return map[string]string{"a": "1b"} })
}

// A value changed in Redis alone, under the same version, that a Watch
// snapshot handed to the copy, is repaired in the copy too when Reconcile
// repairs the hash (its repair has that same version).
func TestStore_Watch_snapshotOfDriftRepaired(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Client.HSet(ctx, s.Key(), "a", "1:drift").Err(); err != nil {
		t.Fatal(err)
	}
	var local configstore.Local
	follow(t, ctx, b.store(t, b.r.NewClient(t), b.pg.DB, nil), &local)
	converges(t, &local, func() map[string]string { return map[string]string{"a": "drift", "b": "2"} })
	if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 1 {
		t.Fatalf("Reconcile = %+v, %v", r, err)
	}
	converges(t, &local, func() map[string]string { return map[string]string{"a": "1", "b": "2"} })
}

// Notifications published while the subscription is down are lost; the
// snapshot Watch sends after reconnecting makes up for them.
func TestStore_Watch_reconnectResyncs(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	srv := newPrivateRedis(t)
	writer := b.store(t, srv.client, b.pg.DB, nil)
	if err := writer.Set(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	var local configstore.Local
	follow(t, ctx, b.store(t, srv.newClient(t), b.pg.DB, nil), &local)
	converges(t, &local, func() map[string]string { return map[string]string{"k": "v1"} })

	srv.Stop()
	if err := writer.Set(ctx, "k", "v2"); !errors.Is(err, configstore.ErrNotMirrored) {
		t.Fatalf("Set with Redis down: %v, want ErrNotMirrored", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The restarted server is empty: the watcher's resync rebuilds the
	// hash from the table, which has v2.
	converges(t, &local, func() map[string]string { return map[string]string{"k": "v2"} })
}

// The channel closes when the context ends, and the watcher's goroutines
// are gone.
func TestStore_Watch_closesOnCancel(t *testing.T) {
	b := newBackends(t)
	s := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := s.Set(ctxT(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-ch:
		if c.Key != "k" || c.Value != "v" || c.Version != 1 {
			t.Errorf("first change = %+v, want the snapshot of k", c)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no snapshot")
	}
	cancel()
	timeout := time.After(15 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-timeout:
			t.Fatal("channel not closed after cancel")
		}
	}
	goleak.VerifyNone(t, testcontainers.GoleakOptions(ignore)...)
}
