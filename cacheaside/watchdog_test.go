package cacheaside

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// slowLockTTL is the lease lifetime of the slow-load tests: each test holds
// a load for twice as long, so that a lease that is not renewed has lapsed
// when the second process tries. The lease is renewed every third of it:
// a renewal may stall for 1.3 s (a busy machine) before the lease lapses.
const slowLockTTL = 2 * time.Second

// notRefreshing waits until e runs no background refresh of id.
func notRefreshing[T any](t *testing.T, e *Entity[T], id string) {
	t.Helper()
	waitFor(t, 10*time.Second, func() bool {
		_, busy := e.refreshing.Load(id)
		return !busy
	})
}

// A background refresh whose load outlives LockTTL (CPU starvation, GC, a
// slow query) keeps its lease: another process that finds the same stale
// entry does not load it a second time.
func TestLease_slowRefreshKeepsLease(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	p := Policy{TTL: 50 * time.Millisecond, Jitter: -1, Grace: time.Minute, Strategy: AsyncRefresh,
		LockTTL: slowLockTTL, RefreshTimeout: time.Minute}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	entered, gate := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, id string) (user, error) {
		n := loads.Add(1)
		if n == 2 { // the first refresh: held past LockTTL
			close(entered)
			<-gate
		}
		return user{ID: id, Ver: int(n)}, nil
	}
	ctx := context.Background()
	if _, err := a.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * p.TTL) // past the logical expiry
	if u, err := a.Get(ctx, "1", load); err != nil || u.Ver != 1 {
		t.Fatalf("a.Get = %+v, %v; want the stale value", u, err)
	}
	<-entered                   // a's refresh holds the lease
	time.Sleep(2 * slowLockTTL) // the lease, unless renewed, has lapsed
	if u, err := b.Get(ctx, "1", load); err != nil || u.Ver != 1 {
		t.Fatalf("b.Get = %+v, %v; want the stale value", u, err)
	}
	notRefreshing(t, b, "1")
	close(gate)
	notRefreshing(t, a, "1")
	if n := loads.Load() - 1; n != 1 {
		t.Fatalf("refresh loads = %d, want 1", n)
	}
	if u, err := b.Get(ctx, "1", load); err != nil || u.Ver != 2 {
		t.Fatalf("after the refresh b.Get = %+v, %v; want version 2", u, err)
	}
}

// A Mutex rebuild whose load outlives LockTTL keeps its lease: the waiter
// in another process waits for it instead of loading too.
func TestLease_slowLoadKeepsLease(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: slowLockTTL, WaitTimeout: time.Minute}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	entered, gate := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, id string) (user, error) {
		n := loads.Add(1)
		if n == 1 {
			close(entered)
			<-gate
		}
		return user{ID: id, Ver: int(n)}, nil
	}
	ctx := context.Background()
	type result struct {
		u   user
		err error
	}
	ra, rb := make(chan result, 1), make(chan result, 1)
	go func() { u, err := a.Get(ctx, "1", load); ra <- result{u, err} }()
	<-entered
	go func() { u, err := b.Get(ctx, "1", load); rb <- result{u, err} }()
	waitFor(t, 10*time.Second, func() bool { return b.Stats().LockWaits == 1 })
	time.Sleep(2 * slowLockTTL) // b re-checks the lease every 100 ms meanwhile
	close(gate)
	for _, ch := range []chan result{ra, rb} {
		if res := <-ch; res.err != nil || res.u.Ver != 1 {
			t.Errorf("Get = %+v, %v; want version 1", res.u, res.err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("loads = %d, want 1", n)
	}
}

// GetMany's batch refresh keeps the leases of all its ids while its load
// outlives LockTTL.
func TestLease_slowBatchRefreshKeepsLeases(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	p := Policy{TTL: 50 * time.Millisecond, Jitter: -1, Grace: time.Minute, Strategy: AsyncRefresh,
		LockTTL: slowLockTTL, RefreshTimeout: time.Minute}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	entered, gate := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, ids []string) (map[string]user, error) {
		n := loads.Add(1)
		if n == 2 {
			close(entered)
			<-gate
		}
		out := map[string]user{}
		for _, id := range ids {
			out[id] = user{ID: id, Ver: int(n)}
		}
		return out, nil
	}
	ctx := context.Background()
	ids := []string{"1", "2", "3"}
	if _, err := a.GetMany(ctx, ids, load); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * p.TTL) // every entry is past its logical expiry
	if _, err := a.GetMany(ctx, ids, load); err != nil || a.Stats().StaleServed != 3 {
		t.Fatalf("a.GetMany: %v, stale served %d, want 3", err, a.Stats().StaleServed)
	}
	<-entered
	time.Sleep(2 * slowLockTTL)
	if _, err := b.GetMany(ctx, ids, load); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		notRefreshing(t, b, id)
	}
	close(gate)
	for _, id := range ids {
		notRefreshing(t, a, id)
	}
	if n := loads.Load() - 1; n != 1 {
		t.Fatalf("refresh batch loads = %d, want 1", n)
	}
}
