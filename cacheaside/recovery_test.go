package cacheaside

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// An invalidation that failed while Redis was cut leaves the old entry in
// Redis. When Redis answers again, a read of that id, in this process,
// must not return the old entry before the invalidation is applied: it
// loads instead (Get and GetMany). With the rule off (retrier.ignore), the
// same read returns the old value: the check fails without it.
func TestRecovery_pendingInvalidationNotServed(t *testing.T) {
	t.Parallel()
	for _, rule := range []bool{true, false} {
		name := "rule"
		if !rule {
			name = "noRule"
		}
		t.Run(name, func(t *testing.T) { testPendingInvalidation(t, rule) })
	}
}

func testPendingInvalidation(t *testing.T, rule bool) {
	r := testcontainers.Redis(t)
	proxy, dial := proxied(t, r)
	client := dial()
	c := newCache(t, client, r.Namespace, &Options{BreakerThreshold: 1000})
	c.retry.ignore = !rule && !testswitch.HealthBitsOff.Load() // see TestHealth_bitsOff_fails
	e := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	ctx := context.Background()

	var version atomic.Int64 // the database's row
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
	for _, id := range []string{"1", "2"} {
		if u, err := e.Get(ctx, id, load); err != nil || u.Ver != 1 {
			t.Fatalf("Get(%s) = %+v, %v", id, u, err)
		}
	}

	// The write: the database first, then the invalidation, which fails.
	// The retrier's loop is kept from starting (running) until the checks
	// are done, so that it cannot apply the invalidations first.
	c.retry.mu.Lock()
	c.retry.running = true
	c.retry.mu.Unlock()
	proxy.Cut()
	version.Store(2)
	if err := e.Invalidate(ctx, "1", "2"); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with Redis cut = %v, want ErrInvalidationPending", err)
	}
	proxy.Heal()

	u, err := e.Get(ctx, "1", load)
	got, gerr := e.GetMany(ctx, []string{"2"}, loadMany)
	// Let the retrier apply the invalidations now.
	c.retry.mu.Lock()
	c.retry.running = c.goBackground(c.retry.loop)
	c.retry.mu.Unlock()
	if err != nil || gerr != nil {
		t.Fatalf("after the cut: Get = %v, GetMany = %v", err, gerr)
	}
	stale := u.Ver != 2 || got["2"].Ver != 2
	switch {
	case rule && stale:
		t.Errorf("after the cut healed: Get = %+v, GetMany = %+v; want version 2 (an acknowledged write)", u, got)
	case !rule && !stale:
		t.Errorf("without the rule the old entry should have been served (version 1), got %+v, %+v", u, got)
	}
	// Either way the retrier then applies the invalidations.
	deadline := time.Now().Add(time.Minute)
	for c.retry.size() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pending invalidations were never applied")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if u, err := e.Get(ctx, "1", load); err != nil || u.Ver != 2 {
		t.Errorf("after the retry: Get = %+v, %v; want version 2", u, err)
	}
}

// proxied puts a fault proxy in front of r; dial returns a client that
// reaches r through it, with short timeouts and no retries so that a cut
// fails calls at once.
func proxied(t *testing.T, r *testcontainers.RedisNamespace) (*faultproxy.Proxy, func() *redis.Client) {
	t.Helper()
	proxy, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	return proxy, func() *redis.Client {
		c := redis.NewClient(&redis.Options{
			Addr: proxy.Addr(), DialTimeout: 200 * time.Millisecond,
			ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1,
		})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}
