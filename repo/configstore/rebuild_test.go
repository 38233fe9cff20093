package configstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/configstore"
)

// readAllConcurrently starts readers goroutines spread over stores, releases
// them at once, waits, and fails the test on any error or wrong result.
func readAllConcurrently(t *testing.T, stores []*configstore.Store, readers int, want map[string]string) {
	t.Helper()
	ctx := ctxT(t)
	start := make(chan struct{})
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		s := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			got, err := s.All(ctx)
			switch {
			case err != nil:
				errs <- err
			case !mapsEqual(got, want):
				errs <- fmt.Errorf("All = %d keys, want %d", len(got), len(want))
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Done when: the hash deleted, 50 concurrent readers (here in 5 processes:
// 5 Stores, each with its own Redis client) call All; the hash is rebuilt
// once, with one DB query.
func TestStore_All_missingHash_oneRebuild(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	opts := &configstore.Options{LockTTL: 30 * time.Second} // no expiry on a loaded machine
	writer := b.store(t, b.r.Client, b.pg.DB, opts)
	want := make(map[string]string)
	for i := range 20 {
		want[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("value %d", i)
	}
	if err := writer.SetMany(ctx, want); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.All(ctx); err != nil { // built
		t.Fatal(err)
	}
	if err := b.r.Client.Del(ctx, writer.Key()).Err(); err != nil {
		t.Fatal(err)
	}

	stores := make([]*configstore.Store, 5)
	for i := range stores {
		stores[i] = b.store(t, b.r.NewClient(t), b.pg.DB, opts)
	}
	queries := countStatements(t, b.pg.DB)
	readAllConcurrently(t, stores, 50, want)

	if n := queries.Load(); n != 1 {
		t.Errorf("%d SQL statements for 50 readers of a missing hash, want 1", n)
	}
	var rebuilds int64
	for _, s := range stores {
		rebuilds += s.Stats().Rebuilds
	}
	if rebuilds != 1 {
		t.Errorf("hash rebuilt %d times, want 1", rebuilds)
	}
	if h, db := hashState(t, b.r.Client, writer.Key()), dbState(t, b.pg.DB, writer.Scope()); !mapsEqual(h, db) {
		t.Errorf("rebuilt hash = %q, table = %q", h, db)
	}
}

// An empty configuration is a built, empty hash, not a missing one: it is
// built once and then costs no query.
func TestStore_All_emptyConfig_noRebuildStorm(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	stores := make([]*configstore.Store, 5)
	for i := range stores {
		stores[i] = b.store(t, b.r.NewClient(t), b.pg.DB, &configstore.Options{LockTTL: 30 * time.Second})
	}
	queries := countStatements(t, b.pg.DB)
	readAllConcurrently(t, stores, 50, map[string]string{})
	if n := queries.Load(); n != 1 {
		t.Errorf("%d SQL statements to build an empty hash, want 1", n)
	}
	readAllConcurrently(t, stores, 50, map[string]string{})
	for _, s := range stores {
		if _, err := s.Get(ctxT(t), "nothing"); !errors.Is(err, configstore.ErrNotFound) {
			t.Fatalf("Get in an empty config: %v", err)
		}
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("%d SQL statements after reading a built empty hash, want still 1", n)
	}
}

// A rebuild lock left by a process that died expires, and a waiting reader
// takes over.
func TestStore_Get_lockHolderDied(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{LockTTL: 30 * time.Second})
	if err := s.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	// The dead holder's lock: 300 ms left.
	if err := b.r.Client.Set(ctx, s.Key()+":lock", "dead-process", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "k"); err != nil || v != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if st := s.Stats(); st.Rebuilds != 1 {
		t.Errorf("Stats = %+v, want 1 rebuild after the lock expired", st)
	}
}

// A reader does not wait longer than WaitTimeout for another process's
// rebuild.
func TestStore_Get_waitTimeout(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s := b.store(t, b.r.Client, b.pg.DB, &configstore.Options{LockTTL: 30 * time.Second, WaitTimeout: 200 * time.Millisecond})
	if err := b.r.Client.Set(ctx, s.Key()+":lock", "stuck-process", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	queries := countStatements(t, b.pg.DB)
	if _, err := s.Get(ctx, "k"); !errors.Is(err, configstore.ErrTimeout) {
		t.Fatalf("Get while another holds the lock: %v, want ErrTimeout", err)
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("%d SQL statements while another process holds the lock", n)
	}
}
