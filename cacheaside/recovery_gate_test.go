package cacheaside

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// Two processes over one Redis, behind one link that is cut. Process A's
// write commits and its invalidation fails (pending in A only); process B
// sees a Redis failure too. When the link heals, B must not serve its old
// entry before its recovery gate (the invalidator's catch-up, here the
// test's) returned: its reads load instead, by id and in batches. With the
// rule off (recovery.ignore), B serves the old value: the check fails
// without it.
func TestRecoveryGate_otherProcessNotStale(t *testing.T) {
	t.Parallel()
	for _, rule := range []bool{true, false} {
		name := "rule"
		if !rule {
			name = "noRule"
		}
		t.Run(name, func(t *testing.T) { testRecoveryGate(t, rule) })
	}
}

func testRecoveryGate(t *testing.T, rule bool) {
	r := testcontainers.Redis(t)
	proxy, dial := proxied(t, r)
	opts := &Options{BreakerThreshold: 1000}
	ca, cb := newCache(t, dial(), r.Namespace, opts), newCache(t, dial(), r.Namespace, opts)
	// The invalidator reaches Redis on a link of its own.
	ci := newCache(t, r.Client, r.Namespace, opts)
	cb.rec.ignore = !rule && !testswitch.HealthBitsOff.Load() // see TestHealth_bitsOff_fails
	p := Policy{TTL: time.Hour}
	ea, eb := newEntity[user](t, ca, "user", p), newEntity[user](t, cb, "user", p)
	ei := newEntity[user](t, ci, "user", p)
	ctx := context.Background()

	var version atomic.Int64 // the database's rows
	version.Store(1)
	load := func(_ context.Context, id string) (user, error) {
		return user{ID: id, Ver: int(version.Load())}, nil
	}
	loadMany := func(_ context.Context, ids []string) (map[string]user, error) {
		m := map[string]user{}
		for _, id := range ids {
			m[id] = user{ID: id, Ver: int(version.Load())}
		}
		return m, nil
	}

	// B's gate passes once per token: the invalidator caught up.
	caughtUp := make(chan struct{}, 1)
	var calls atomic.Int64
	remove := cb.AddRecoveryGate(func(ctx context.Context) error {
		calls.Add(1)
		select {
		case <-caughtUp:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	t.Cleanup(remove)
	if !cb.Recovering() {
		t.Fatal("a new gate does not hold reads until it passed")
	}
	caughtUp <- struct{}{}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cb.WaitRecovered(wctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2"} {
		if u, err := eb.Get(ctx, id, load); err != nil || u.Ver != 1 {
			t.Fatalf("Get(%s) = %+v, %v", id, u, err)
		}
	}
	loads := eb.Stats().Loads

	// The outage: A's write commits, its invalidation fails and stays
	// pending in A (its retrier kept from starting); B's read fails over
	// to the loader.
	ca.retry.mu.Lock()
	ca.retry.running = true
	ca.retry.mu.Unlock()
	proxy.Cut()
	version.Store(2)
	if err := ea.Invalidate(ctx, "1", "2"); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with Redis cut = %v, want ErrInvalidationPending", err)
	}
	if u, err := eb.Get(ctx, "3", load); err != nil || u.Ver != 2 {
		t.Fatalf("Get during the cut = %+v, %v", u, err)
	}
	proxy.Heal()

	// Redis answers again, the invalidator has not applied the write yet.
	u, err := eb.Get(ctx, "1", load)
	got, gerr := eb.GetMany(ctx, []string{"2"}, loadMany)
	if err != nil || gerr != nil {
		t.Fatalf("after the cut: Get = %v, GetMany = %v", err, gerr)
	}
	stale := u.Ver != 2 || got["2"].Ver != 2
	switch {
	case rule && stale:
		t.Errorf("after the cut healed: Get = %+v, GetMany = %+v; want version 2 (a committed write)", u, got)
	case !rule && !stale:
		t.Errorf("without the rule the old entries should have been served (version 1), got %+v, %+v", u, got)
	}
	if rule && !cb.Recovering() {
		t.Error("the gate opened before the invalidator caught up")
	}

	// The invalidator applies the write, then the gate passes: B caches
	// again.
	if err := ei.Invalidate(ctx, "1", "2"); err != nil {
		t.Fatal(err)
	}
	caughtUp <- struct{}{}
	if err := cb.WaitRecovered(wctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if u, err := eb.Get(ctx, "1", load); err != nil || u.Ver != 2 {
			t.Fatalf("after the catch-up: Get = %+v, %v; want version 2", u, err)
		}
	}
	if rule {
		// 3 during the cut, 1 and 2 held, then 1 once more, cached.
		if n := eb.Stats().Loads - loads; n != 4 {
			t.Errorf("loads after the outage = %d, want 4", n)
		}
		if calls.Load() < 2 {
			t.Errorf("gate called %d times, want a call per recovery", calls.Load())
		}
	}
}
