package cacheaside

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// Each condition of the health word sets its bit while it lasts and clears
// it when it ends: a Redis failure (failing, until a success finds the
// breaker clean), a pending invalidation (holding, until the retrier
// applied it) and a closed recovery gate (recovering, until it opens).
// With every condition gone the word is zero again: the hit path's one
// load.
func TestHealth_bits(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	proxy, dial := proxied(t, r)
	c := newCache(t, dial(), r.Namespace, &Options{BreakerThreshold: 1000})
	e := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	ctx := context.Background()
	load := func(_ context.Context, id string) (user, error) { return user{ID: id}, nil }
	word := func(want uint32, when string) {
		t.Helper()
		if got := c.health.Load(); got != want {
			t.Fatalf("%s: health = %03b, want %03b", when, got, want)
		}
	}
	word(0, "a new Cache")

	// A failure, then a success.
	proxy.Cut()
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	word(failing, "after a failed GET")
	proxy.Heal()
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	word(0, "after a GET Redis answered")

	// A pending invalidation, until the retrier applied it.
	c.retry.mu.Lock()
	c.retry.running = true // its loop starts when the test says so
	c.retry.mu.Unlock()
	proxy.Cut()
	if err := e.Invalidate(ctx, "1"); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with Redis cut = %v, want ErrInvalidationPending", err)
	}
	word(failing|holding, "with an invalidation pending, Redis cut")
	proxy.Heal()
	c.retry.mu.Lock()
	c.retry.running = c.goBackground(c.retry.loop)
	c.retry.mu.Unlock()
	waitFor(t, time.Minute, func() bool { return c.PendingInvalidations() == 0 })
	word(0, "once the invalidation was applied")

	// A recovery gate, closed by a failure, open once it passed.
	pass := make(chan struct{})
	remove := c.AddRecoveryGate(func(ctx context.Context) error {
		select {
		case <-pass:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	t.Cleanup(remove)
	word(recovering, "with a new recovery gate")
	close(pass)
	if err := c.WaitRecovered(ctx); err != nil {
		t.Fatal(err)
	}
	word(0, "once the gate passed")
	proxy.Cut()
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	if c.health.Load()&recovering == 0 {
		t.Fatal("a failure with a gate did not set recovering")
	}
	proxy.Heal()
	if err := c.WaitRecovered(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	word(0, "after the recovery")
}

// An open breaker keeps reads from calling Redis: once it opened, a read
// goes to the loader without a Redis call (no cache error counted). With
// the rule off (the health word's bits, testswitch.HealthBitsOff) the gate
// never asks the breaker, and every read pays its failed Redis call.
func TestHealth_openBreakerAsked(t *testing.T) {
	t.Parallel()
	testOpenBreakerAsked(t, true)
}

func testOpenBreakerAsked(t *testing.T, rule bool) {
	r := testcontainers.Redis(t)
	proxy, dial := proxied(t, r)
	c := newCache(t, dial(), r.Namespace, &Options{BreakerThreshold: 2, BreakerCooldown: time.Hour})
	e := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	ctx := context.Background()
	load := func(_ context.Context, id string) (user, error) { return user{ID: id}, nil }
	proxy.Cut()
	for range 2 { // the failures that open it
		if _, err := e.Get(ctx, "1", load); err != nil {
			t.Fatal(err)
		}
	}
	if !c.br.Open() {
		t.Fatal("two failures did not open the breaker")
	}
	before := e.Stats()
	for range 3 {
		if _, err := e.Get(ctx, "1", load); err != nil {
			t.Fatal(err)
		}
		if _, err := e.GetMany(ctx, []string{"2", "3"}, func(_ context.Context, ids []string) (map[string]user, error) {
			m := map[string]user{}
			for _, id := range ids {
				m[id] = user{ID: id}
			}
			return m, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	after := e.Stats()
	errs, bypassed := after.CacheErrors-before.CacheErrors, after.Bypassed-before.Bypassed
	switch {
	case rule && (errs != 0 || bypassed != 6):
		t.Errorf("reads with the breaker open: %d cache errors, %d bypassed; want 0 and 6 (no Redis call)", errs, bypassed)
	case !rule && errs == 0:
		t.Errorf("without the rule the reads should have called Redis (cache errors), got %d", errs)
	}
}

// With the health word's bits off (testswitch.HealthBitsOff) the read
// gate thinks all is well: it serves an entry whose invalidation is
// pending, an entry a closed recovery gate holds, and calls Redis through
// an open breaker. The three checks above find it.
func TestHealth_bitsOff_fails(t *testing.T) {
	testswitch.HealthBitsOff.Store(true)
	defer testswitch.HealthBitsOff.Store(false)
	t.Run("pending", func(t *testing.T) { testPendingInvalidation(t, false) })
	t.Run("recovery", func(t *testing.T) { testRecoveryGate(t, false) })
	t.Run("breaker", func(t *testing.T) { testOpenBreakerAsked(t, false) })
}
