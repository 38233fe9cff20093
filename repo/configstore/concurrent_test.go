package configstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/repo/configstore"
)

// Done when: 2 processes × 100 concurrent Sets on 10 keys; afterwards the
// DB and the hash agree on every key. Each process has its own Redis
// client and its own database pool. Both clients delay their script calls
// by a random 0–20 ms, as a busy network would, so that copies
// into the hash often arrive in another order than their commits.
func TestStore_Set_concurrentProcesses(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	c1, c2 := b.r.NewClient(t), b.r.NewClient(t)
	c1.AddHook(jitterScripts{})
	c2.AddHook(jitterScripts{})
	procs := []*configstore.Store{
		b.store(t, c1, b.openDB(t), nil),
		b.store(t, c2, b.openDB(t), nil),
	}
	if _, err := procs[0].All(ctx); err != nil { // build the (empty) hash
		t.Fatal(err)
	}
	const perProcess, keys = 100, 10
	start := make(chan struct{})
	errs := make(chan error, len(procs)*perProcess)
	var wg sync.WaitGroup
	for p, s := range procs {
		for i := range perProcess {
			wg.Go(func() {
				<-start
				key := fmt.Sprintf("key%d", i%keys)
				if err := s.Set(ctx, key, fmt.Sprintf("p%d-i%d", p, i)); err != nil {
					errs <- err
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	db := dbState(t, b.pg.DB, procs[0].Scope())
	hash := hashState(t, b.r.Client, procs[0].Key())
	if len(db) != keys {
		t.Fatalf("%d rows, want %d", len(db), keys)
	}
	for k, row := range db {
		// No update lost: every Set of the key bumped its version.
		if want := fmt.Sprintf("%d:", len(procs)*perProcess/keys); row[:len(want)] != want {
			t.Errorf("row %s = %q, want version %s", k, row, want)
		}
		if hash[k] != row {
			t.Errorf("key %s: hash %q, table %q", k, hash[k], row)
		}
	}
	if len(hash) != len(db) {
		t.Errorf("hash has %d keys, table %d", len(hash), len(db))
	}
	for _, s := range procs {
		if r, err := s.Reconcile(ctx); err != nil || r.Fixes() != 0 || len(r.Skipped) != 0 {
			t.Errorf("Reconcile after the writes = %+v, %v; want nothing to fix", r, err)
		}
	}
}

// jitterScripts delays every script call by 0–20 ms.
type jitterScripts struct{}

func (jitterScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (jitterScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		}
		return next(ctx, cmd)
	}
}

func (jitterScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Sets and Deletes of the same keys from two processes: a late copy of an
// older Set never brings back a deleted value, nor hides a newer one.
func TestStore_SetDelete_concurrentProcesses(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	c1, c2 := b.r.NewClient(t), b.r.NewClient(t)
	c1.AddHook(jitterScripts{})
	c2.AddHook(jitterScripts{})
	procs := []*configstore.Store{
		b.store(t, c1, b.openDB(t), nil),
		b.store(t, c2, b.openDB(t), nil),
	}
	const perProcess, keys = 100, 10
	start := make(chan struct{})
	errs := make(chan error, len(procs)*perProcess)
	var wg sync.WaitGroup
	for p, s := range procs {
		for i := range perProcess {
			wg.Go(func() {
				<-start
				key := fmt.Sprintf("key%d", i%keys)
				var err error
				if (i+p)%3 == 0 {
					err = s.Delete(ctx, key)
				} else {
					err = s.Set(ctx, key, fmt.Sprintf("p%d-i%d", p, i))
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	db := dbState(t, b.pg.DB, procs[0].Scope())
	if h := hashState(t, b.r.Client, procs[0].Key()); !mapsEqual(h, db) {
		t.Fatalf("hash = %q\ntable = %q", h, db)
	}
	live := 0
	for _, row := range db {
		if strings.Contains(row, ":") {
			live++
		}
	}
	for _, s := range procs {
		all, err := s.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != live {
			t.Errorf("All has %d keys, the table %d values", len(all), live)
		}
		for k, v := range all {
			if db[k] == "" || !strings.HasSuffix(db[k], ":"+v) {
				t.Errorf("All: %s = %q, table %q", k, v, db[k])
			}
		}
	}
}
