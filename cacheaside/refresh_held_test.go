package cacheaside

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// While one process refreshes an entry (its loader held), another that
// reads the entry many times asks for the lease once: having found it
// held, it leaves the refresh to the holder for a recheck period instead
// of sending a lease call (and starting a goroutine) on every read. For
// AsyncRefresh through Get and GetMany, and EarlyRefresh's picked readers.
func TestRefresh_heldElsewhereAskedOnce(t *testing.T) {
	t.Parallel()
	const reads = 200
	for _, tc := range []struct {
		name     string
		strategy Strategy
		many     bool
	}{
		{"async/Get", AsyncRefresh, false},
		{"async/GetMany", AsyncRefresh, true},
		{"early/Get", EarlyRefresh, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := refreshTestPolicy
			p.Strategy = tc.strategy
			p.LockTTL = time.Minute // a's lease must not lapse on a starved machine: b would take it
			r := testcontainers.Redis(t)
			a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p) // refreshes
			hook := &scriptCalls{only: isLeaseCall}
			bc := newCache(t, r.NewClient(t), r.Namespace, nil) // reads
			// A second lease call would be this test's failure, not a re-check.
			bc.recheck = time.Hour
			bc.client.AddHook(hook)
			b := newEntity[user](t, bc, "user", p)
			if tc.strategy == EarlyRefresh {
				// Due at every read: XFetch picks a reader when the time left
				// is under loadUS·β·(−ln rand), and an hour of load dwarfs it.
				putEntry(t, r, a, time.Now().Add(10*time.Second), math.MaxUint32, "1")
			} else {
				putStale(t, r, a, "1")
			}
			entered, gate := make(chan struct{}), make(chan struct{})
			hold := func(ctx context.Context, id string) (user, error) {
				close(entered)
				<-gate
				return user{ID: id, Name: "new"}, nil
			}
			ctx := context.Background()
			go func() { _, _ = a.Get(ctx, "1", hold) }()
			<-entered // a holds the lease, inside its loader
			var loads counter
			for i := 0; i < reads; i++ {
				var v user
				var err error
				if tc.many {
					var m map[string]user
					m, err = b.GetMany(ctx, []string{"1"}, func(ctx context.Context, ids []string) (map[string]user, error) {
						loads.calls.Add(1)
						return nil, nil
					})
					v = m["1"]
				} else {
					v, err = b.Get(ctx, "1", loads.load)
				}
				if err != nil || v.Name != "old" {
					t.Fatalf("read %d on b = %+v, %v; want the old value", i, v, err)
				}
			}
			_ = bc.Close() // waits for b's refreshes
			close(gate)
			if n := hook.n.Load(); n != 1 {
				t.Fatalf("b sent %d lease calls in %d reads while a held the lease; want 1", n, reads)
			}
			if n := loads.calls.Load(); n != 0 {
				t.Fatalf("b loaded %d times; want 0", n)
			}
		})
	}
}
