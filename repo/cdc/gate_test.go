package cdc_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// Two processes, A holding the slot and B standing by, each reaching
// Redis over a link of its own. Both links are cut, a row is changed with
// plain SQL, and B's link heals while A's stays cut: nobody can apply the
// change, and B must not read the row's old entry (its reads skip the
// cache until CatchUp passes). With B's gate off, B reads the old name as
// soon as its breaker lets reads through.
func TestInvalidator_recoveryGate(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{true, false} {
		name := "gate"
		if !gate {
			name = "noGate"
		}
		t.Run(name, func(t *testing.T) {
			pg := testcontainers.LogicalPostgres(t)
			rn := testcontainers.Redis(t)
			link := func() (*faultproxy.Proxy, *redis.Client) {
				px, err := faultproxy.New(rn.Addrs[0])
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = px.Close() })
				rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1,
					DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
				t.Cleanup(func() { _ = rdb.Close() })
				return px, rdb
			}
			pxA, rdbA := link()
			pxB, rdbB := link()
			a, b := newEnvOn(t, pg, rdbA, rn.Namespace), newEnvOn(t, pg, rdbB, rn.Namespace)
			a.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
			invA := a.invalidator(t, cdc.Options{StatusInterval: 100 * time.Millisecond})
			run(t, invA)
			waitFor(t, "A to hold the slot", func() bool { return invA.Stats().Active })
			// B's Invalidator is not dropped at cleanup: A's drops the slot.
			invB, err := cdc.New(b.dsn, &cdc.Options{Slot: a.slot, StatusInterval: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := invB.Register(b.users); err != nil {
				t.Fatal(err)
			}
			if !gate {
				cdc.NoRecoveryGate(invB)
			}
			run(t, invB)
			a.sync(t, invA)
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			for _, e := range []*env{a, b} {
				if err := e.cache.WaitRecovered(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// The links' 200 ms read timeout is for the cuts; on a busy
			// machine the warm-up may outlast it: try again.
			for err := b.users.WarmFilter(ctx); err != nil; err = b.users.WarmFilter(ctx) {
				if ctx.Err() != nil {
					t.Fatal(err)
				}
			}
			if got := b.name(t, 1); got != "Ada" {
				t.Fatalf("name = %q", got)
			}
			if got := b.name(t, 1); got != "Ada" || b.users.Stats().Hits == 0 {
				t.Fatalf("name = %q, hits %d: not cached", got, b.users.Stats().Hits)
			}

			before := invA.Stats()
			pxA.Cut()
			pxB.Cut()
			a.exec(t, "UPDATE users SET name = 'Bob' WHERE id = 1")
			waitFor(t, "a failed attempt to apply", func() bool { return invA.Stats().Errors > before.Errors })
			if got := b.name(t, 1); got != "Bob" {
				t.Fatalf("name during the outage = %q, want Bob", got)
			}
			pxB.Heal()
			defer pxA.Heal()
			if err := rdbB.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// Without the gate the old name comes back once B's breaker
			// (open since the outage) lets reads through, after its
			// cooldown; with it, reads over twice that long are fresh.
			deadline := time.Now().Add(2 * cacheaside.DefaultBreakerCooldown)
			if !gate {
				deadline = time.Now().Add(patience)
			}
			for time.Now().Before(deadline) {
				got := b.name(t, 1)
				if gate && got != "Bob" {
					t.Fatalf("name after B's link healed = %q, want Bob", got)
				}
				if !gate && got == "Ada" {
					return // the stale read the gate prevents
				}
			}
			if !gate {
				t.Fatal("without the gate the old name was never read: the test proves nothing")
			}
			if !b.cache.Recovering() {
				t.Error("B's gate opened while nobody could apply the outage's change")
			}
			pxA.Heal()
			if err := b.cache.WaitRecovered(ctx); err != nil {
				t.Fatalf("B's gate did not open once A applied the change: %v", err)
			}
			if got := b.name(t, 1); got != "Bob" {
				t.Errorf("name after the recovery = %q, want Bob", got)
			}
		})
	}
}
