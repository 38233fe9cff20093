package cacheaside

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// refreshTestPolicy is lapseTestPolicy for AsyncRefresh: short leases, a
// long Grace, and refreshes that never time out in a test.
var refreshTestPolicy = Policy{Strategy: AsyncRefresh, LockTTL: 300 * time.Millisecond, Grace: time.Hour,
	WaitTimeout: time.Minute, RefreshTimeout: time.Minute}

// putEntry stores, for each of ids, an entry of e (a value named "old")
// with logical expiry expiry and a last load of loadUS, living a minute
// past it in Redis.
func putEntry(t *testing.T, r *testcontainers.RedisNamespace, e *Entity[user], expiry time.Time, loadUS uint32, ids ...string) {
	t.Helper()
	for _, id := range ids {
		key, err := e.Key(id)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := e.c.codec.Marshal(user{ID: id, Name: "old"})
		if err != nil {
			t.Fatal(err)
		}
		b := encodeEntry(header{expiry: expiry.UnixMilli(), loadUS: loadUS}, payload)
		if err := r.Client.Set(context.Background(), key, b, time.Until(expiry)+time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// putStale stores entries of ids past their logical expiry, within Grace:
// AsyncRefresh serves them and refreshes them.
func putStale(t *testing.T, r *testcontainers.RedisNamespace, e *Entity[user], ids ...string) {
	t.Helper()
	putEntry(t, r, e, time.Now().Add(-time.Second), 1000, ids...)
}

// An AsyncRefresh whose holder stalls between taking its lease and
// loading, until the lease lapsed and another process refreshed the entry,
// does not load: it finds the lease lost (counted) and leaves the entry to
// the other refresh.
func TestRefresh_leaseLapsedBeforeLoad(t *testing.T) {
	t.Parallel()
	s := newLapseScene(t, refreshTestPolicy)
	putStale(t, s.r, s.a, "1")
	ctx := context.Background()
	var loads counter
	s.run(t, []string{"1"}, func() {
		if v, err := s.a.Get(ctx, "1", loads.load); err != nil || v.Name != "old" {
			t.Errorf("stalled caller's Get = %v, %v; want the stale value", v, err)
		}
	}, func() {
		if v, err := s.b.Get(ctx, "1", loads.load); err != nil || v.Name != "old" {
			t.Errorf("second caller's Get = %v, %v; want the stale value", v, err)
		}
		notRefreshing(t, s.b, "1")
	})
	notRefreshing(t, s.a, "1")
	if n := loads.calls.Load(); n != 1 {
		t.Fatalf("id 1 loaded %d times, want 1 (the second caller's refresh)", n)
	}
	if st := s.a.Stats(); st.LeasesLost != 1 || st.Loads != 0 || st.Refreshes != 0 {
		t.Fatalf("stalled caller's stats = %+v; want its lease lost and no load", st)
	}
	if st := s.b.Stats(); st.Refreshes != 1 {
		t.Fatalf("second caller's stats = %+v; want one refresh", st)
	}
}

// The same for GetMany's batch refresh: the stalled caller loads none of
// its ids, neither the one another process refreshed meanwhile nor the
// one whose lease lapsed with nobody taking it (the next reader refreshes
// it).
func TestRefreshMany_leaseLapsedBeforeLoad(t *testing.T) {
	t.Parallel()
	s := newLapseScene(t, refreshTestPolicy)
	ids := []string{"1", "2"}
	putStale(t, s.r, s.a, ids...)
	ctx := context.Background()
	lost := lostLeases(t, s.a, ids)
	bl := &batchLoader{}
	s.run(t, ids, func() {
		if got, err := s.a.GetMany(ctx, ids, bl.load); err != nil || len(got) != 2 {
			t.Errorf("stalled caller's GetMany = %v, %v; want the stale values", got, err)
		}
	}, func() {
		if got, err := s.b.GetMany(ctx, []string{"1"}, bl.load); err != nil || got["1"].Name != "old" {
			t.Errorf("second caller's GetMany = %v, %v; want the stale value", got, err)
		}
		notRefreshing(t, s.b, "1")
	})
	for _, id := range ids {
		notRefreshing(t, s.a, id)
	}
	bl.checkLoads(t, []string{"1"}, 1)
	bl.checkLoads(t, []string{"2"}, 0)
	if st := s.a.Stats(); st.LeasesLost != 2 || st.Loads != 0 || st.Refreshes != 0 {
		t.Fatalf("stalled caller's stats = %+v; want both leases lost and no load", st)
	}
	if l := lost(); l["1"] != 1 || l["2"] != 1 {
		t.Fatalf("lost leases by id = %v", l)
	}
}

// A refresh whose loader calls runtime.Goexit gives its lease up: once the
// entry is gone, the next miss loads at once instead of waiting for
// LockTTL. AsyncRefresh refreshes on a goroutine of its own, EarlyRefresh
// on the reader's (which the Goexit ends).
func TestRefresh_loaderGoexitReleasesLease(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s   Strategy
		put func(*testing.T, *testcontainers.RedisNamespace, *Entity[user], ...string)
	}{
		{AsyncRefresh, putStale},
		{EarlyRefresh, putDue},
	} {
		t.Run(c.s.String(), func(t *testing.T) {
			r := testcontainers.Redis(t)
			p := Policy{Strategy: c.s, LockTTL: time.Minute, WaitTimeout: time.Minute, Grace: time.Hour,
				RefreshTimeout: time.Minute, Beta: 1e4}
			e := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
			c.put(t, r, e, "1")
			var calls atomic.Int64
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				_, _ = e.Get(context.Background(), "1", func(context.Context, string) (user, error) {
					calls.Add(1)
					runtime.Goexit()
					return user{}, nil
				})
			}()
			<-ended
			notRefreshing(t, e, "1")
			if n := calls.Load(); n != 1 {
				t.Fatalf("loader called %d times, want once (by the refresh)", n)
			}
			dropEntries(t, r, e, "1")
			checkLeaseFreed(t, r, e, "1")
		})
	}
}

// The same for GetMany's batch refresh.
func TestRefreshMany_loaderGoexitReleasesLeases(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user",
		Policy{Strategy: AsyncRefresh, LockTTL: time.Minute, WaitTimeout: time.Minute, Grace: time.Hour, RefreshTimeout: time.Minute})
	ids := []string{"1", "2"}
	putStale(t, r, e, ids...)
	got, err := e.GetMany(context.Background(), ids, func(context.Context, []string) (map[string]user, error) {
		runtime.Goexit()
		return nil, nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("GetMany = %v, %v; want the stale values", got, err)
	}
	for _, id := range ids {
		notRefreshing(t, e, id)
	}
	dropEntries(t, r, e, ids...)
	for _, id := range ids {
		checkLeaseFreed(t, r, e, id)
	}
}

// putDue stores entries of ids that EarlyRefresh with a Beta of 1e4 finds
// due: fresh for a minute, last loaded in over an hour, so XFetch picks
// them with probability 1 − 1.4e-6.
func putDue(t *testing.T, r *testcontainers.RedisNamespace, e *Entity[user], ids ...string) {
	t.Helper()
	putEntry(t, r, e, time.Now().Add(time.Minute), maxDurationUS, ids...)
}

// dropEntries deletes the entries of ids (not their leases).
func dropEntries(t *testing.T, r *testcontainers.RedisNamespace, e *Entity[user], ids ...string) {
	t.Helper()
	for _, id := range ids {
		key, _ := e.Key(id)
		if err := r.Client.Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
