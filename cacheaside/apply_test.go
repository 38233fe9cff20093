package cacheaside

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// syncFilter is a FilterWriter that fails while down is set; safe for the
// retrier's goroutine.
type syncFilter struct {
	mu   sync.Mutex // guards down and keys
	down bool
	keys []string
}

func (f *syncFilter) AddMany(_ context.Context, keys []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("dial tcp: connection refused")
	}
	f.keys = append(f.keys, keys...)
	return nil
}

func (f *syncFilter) Distrust(context.Context) error { return nil }

func (f *syncFilter) set(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *syncFilter) added() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// Apply queues every kind of failed effect in one retrier, the Cache's:
// the invalidation once (its entity queued it, and holds its reads), the
// bump and the filter add behind it; all are applied once Redis is back,
// and counted in RetryStats.
func TestCache_Apply_retriesEveryKind(t *testing.T) {
	t.Parallel()
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	// The breaker opens at the first failure and stays open (holding the
	// retries back) until the test closes it.
	c := newCache(t, client, "apply", &Options{BreakerThreshold: 1, BreakerCooldown: time.Hour})
	e := newEntity[user](t, c, "user", Policy{})
	g, err := NewListGenerations(c, "user.lists")
	if err != nil {
		t.Fatal(err)
	}
	f := &syncFilter{down: true}
	ctx := context.Background()
	if err := e.Set(ctx, "1", user{ID: "1", Name: "old"}); err != nil {
		t.Fatal(err)
	}
	before := GetRetryStats()
	srv.Stop()
	var w Effects
	w.Add(Invalidate(e, "1"), Bump(g, "a"), AddToFilter(f, "users", "k"))
	if err := c.Apply(ctx, &w); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Apply with Redis down = %v, want ErrInvalidationPending among its errors", err)
	}
	if n, m := c.retry.size(), c.retry.m.Load(); n != 1 || m != 2 {
		t.Fatalf("queued: %d invalidations, %d other ids and keys; want 1 and 2", n, m)
	}
	if s := GetRetryStats(); s.Failures < before.Failures+1 || s.Pending < 3 {
		t.Fatalf("RetryStats %+v (before %+v): want a failure and 3 pending", s, before)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	f.set(false)
	c.br.Success() // Redis is back: close the breaker
	waitFor(t, 20*time.Second, func() bool { return c.retry.size() == 0 && c.retry.m.Load() == 0 })
	if got := f.added(); len(got) != 1 || got[0] != "k" {
		t.Fatalf("filter adds %v, want [k]", got)
	}
	if s := g.Stats(); s.Bumps != 1 {
		t.Fatalf("list stats %+v, want 1 bump", s)
	}
	if s := GetRetryStats(); s.Retried < before.Retried+3 {
		t.Fatalf("RetryStats %+v (before %+v): want 3 more retried", s, before)
	}
}

// Past maxPendingUpkeep ids and keys queued in the process, failed work
// is dropped and counted: an invalidation's keys one by one, Apply's
// other effects as a whole. Serial: it lowers the process-wide limit.
func TestCache_Apply_dropsPastTheLimit(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := newCache(t, client, "drop", &Options{BreakerThreshold: 1, BreakerCooldown: time.Hour})
	e := newEntity[user](t, c, "user", Policy{})
	f := &syncFilter{down: true}
	srv.Stop()
	before := GetRetryStats()
	limit := maxPendingUpkeep
	t.Cleanup(func() { maxPendingUpkeep = limit })
	maxPendingUpkeep = int64(before.Pending) + 1

	var w Effects
	w.Add(Invalidate(e, "1", "2"), AddToFilter(f, "users", "a", "b"))
	if err := c.Apply(context.Background(), &w); err == nil {
		t.Fatal("Apply with Redis down = nil")
	}
	if n, m := c.retry.size(), c.retry.m.Load(); n != 1 || m != 0 {
		t.Fatalf("queued: %d invalidations, %d other ids and keys; want 1 and 0", n, m)
	}
	if s := GetRetryStats(); s.Dropped != before.Dropped+3 || s.Pending != before.Pending+1 {
		t.Fatalf("RetryStats %+v (before %+v): want 3 dropped, 1 more pending", s, before)
	}
}
