package limit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// downClient returns a client of a private redis-server, and the server.
func downClient(t *testing.T) (*redis.Client, *testcontainers.RedisServer) {
	t.Helper()
	srv := testcontainers.NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

func TestLimiter_redisDown(t *testing.T) {
	c, srv := downClient(t)
	ctx := context.Background()
	type pair struct{ closed, open Limiter }
	lims := map[string]pair{}
	for _, a := range algos {
		closed, err := a.build(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		open, err := a.build(c, &Options{FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := closed.Allow(ctx, a.name); err != nil || !res.Allowed {
			t.Fatalf("%s: Allow with Redis up = %+v, %v", a.name, res, err)
		}
		lims[a.name] = pair{closed, open}
	}
	srv.Stop()
	for name, l := range lims {
		// Fail closed (the default): refused, with the error.
		res, err := l.closed.Allow(ctx, name)
		if err == nil || res.Allowed || errors.Is(err, ErrFailedOpen) {
			t.Errorf("%s, fail closed: Allow with Redis down = %+v, %v; want refused and an error", name, res, err)
		}
		if err := l.closed.Wait(ctx, name); err == nil || errors.Is(err, ErrFailedOpen) {
			t.Errorf("%s, fail closed: Wait with Redis down = %v; want an error", name, err)
		}
		// Fail open: allowed, and the error still says what happened.
		res, err = l.open.Allow(ctx, name)
		if !res.Allowed || !errors.Is(err, ErrFailedOpen) {
			t.Errorf("%s, fail open: Allow with Redis down = %+v, %v; want allowed and ErrFailedOpen", name, res, err)
		}
		if err := l.open.Wait(ctx, name); !errors.Is(err, ErrFailedOpen) {
			t.Errorf("%s, fail open: Wait with Redis down = %v; want ErrFailedOpen at once", name, err)
		}
		if err := l.closed.Reset(ctx, name); err == nil {
			t.Errorf("%s: Reset with Redis down = nil, want an error", name)
		}
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// Back up (and empty: the server keeps no data): counting again, once
	// the client's pool has noticed (go-redis backs off after failed dials).
	for name, l := range lims {
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err := l.closed.Allow(ctx, name)
			if err == nil && res.Allowed && res.Remaining == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Allow with Redis back = %+v, %v", name, res, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestSemaphore_redisDown(t *testing.T) {
	c, srv := downClient(t)
	ctx := context.Background()
	closed, err := NewConcurrency(c, Concurrency{Limit: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewConcurrency(c, Concurrency{Limit: 1}, &Options{FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	held, err := closed.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if l, err := closed.TryAcquire(ctx, "k2"); err == nil || l != nil || errors.Is(err, ErrFailedOpen) {
		t.Errorf("fail closed: TryAcquire with Redis down = %v, %v; want no lease and an error", l, err)
	}
	if l, err := closed.Acquire(ctx, "k2"); err == nil || l != nil {
		t.Errorf("fail closed: Acquire with Redis down = %v, %v; want no lease and an error", l, err)
	}
	l, err := open.Acquire(ctx, "k2")
	if l == nil || !errors.Is(err, ErrFailedOpen) {
		t.Fatalf("fail open: Acquire with Redis down = %v, %v; want a lease and ErrFailedOpen", l, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release of a fail-open lease = %v, want nil", err)
	}
	if err := held.Release(ctx); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Errorf("Release with Redis down = %v; want the Redis error", err)
	}
}
