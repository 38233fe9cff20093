package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestLock_AutoRefresh_keepsAlive(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	// Refreshed every ttl/3: a refresh may stall for 1.3 s before the lock
	// lapses.
	const ttl = 2 * time.Second
	lk := mustObtain(t, l, "r", ttl)
	wctx, stop := lk.AutoRefresh(ctx)
	defer stop()
	time.Sleep(2 * ttl) // time must pass: the lock outlives its ttl
	if err := wctx.Err(); err != nil {
		t.Fatalf("watchdog context ended: %v (cause %v)", err, context.Cause(wctx))
	}
	if d, err := lk.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL after 2 ttls under the watchdog = %v, %v", d, err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Release stops the watchdog and ends its context.
	select {
	case <-wctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("watchdog context still open after Release")
	}
	if cause := context.Cause(wctx); isNotHeld(cause) {
		t.Errorf("cause after Release = %v, want a plain cancellation", cause)
	}
}

func TestLock_AutoRefresh_lostOwnership(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	lk := mustObtain(t, l, "r", 600*time.Millisecond)
	wctx, stop := lk.AutoRefresh(ctx)
	defer stop()
	// Someone else takes over the key (an operator, or a failover that
	// lost it and a new holder).
	if err := rn.Client.Set(ctx, lockKey(rn.Namespace, "r"), "intruder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("watchdog did not notice the lost lock")
	}
	if cause := context.Cause(wctx); !isNotHeld(cause) {
		t.Fatalf("cause = %v, want ErrLockNotHeld", cause)
	}
	if got := rn.Client.Get(ctx, lockKey(rn.Namespace, "r")).Val(); got != "intruder" {
		t.Errorf("the watchdog changed the new holder's key: %q", got)
	}
}

func TestLock_AutoRefresh_redisDown(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	l := mustNew(t, client, nil)
	defer l.Close()
	ctx := context.Background()

	lk := mustObtain(t, l, "r", 600*time.Millisecond)
	wctx, stop := lk.AutoRefresh(ctx)
	defer stop()
	srv.Stop()
	// Refreshes fail; once the ttl has run out the lock must count as lost.
	select {
	case <-wctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("watchdog did not give up on an unreachable Redis")
	}
	if cause := context.Cause(wctx); !isNotHeld(cause) {
		t.Fatalf("cause = %v, want ErrLockNotHeld", cause)
	}
}

func TestLock_AutoRefresh_replaced(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	lk := mustObtain(t, l, "r", time.Minute)
	first, stopFirst := lk.AutoRefresh(ctx)
	second, stopSecond := lk.AutoRefresh(ctx)
	if first.Err() == nil {
		t.Error("the first watchdog's context is open after a second AutoRefresh")
	}
	stopFirst() // a stale stop leaves the second watchdog alone
	if second.Err() != nil {
		t.Error("stopping the first watchdog ended the second")
	}
	stopSecond()
	if second.Err() == nil {
		t.Error("stop did not end the watchdog's context")
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLocker_Close_noGoroutineLeak(t *testing.T) {
	rn := testcontainers.Redis(t) // resolve the server before the snapshot
	defer goleak.VerifyNone(t, testcontainers.GoleakOptions(goleak.IgnoreCurrent())...)
	ctx := context.Background()
	a := redis.NewClient(&redis.Options{Addr: rn.Addrs[0]})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: rn.Addrs[0]})
	defer b.Close()
	la := mustNew(t, a, &lock.Options{Namespace: rn.Namespace})
	lb := mustNew(t, b, &lock.Options{Namespace: rn.Namespace})

	held := mustObtain(t, la, "r", time.Minute)
	_, stop := held.AutoRefresh(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		lk, err := lb.Obtain(ctx, "r", time.Minute, nil)
		if err == nil {
			_, _ = lk.AutoRefresh(ctx)
			err = lk.Release(ctx)
		}
		done <- err
	}()
	waitFor(t, "the waiter", func() bool { return lb.Stats().Subscriptions == 1 })
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := la.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Obtain(ctx, "r", time.Minute, nil); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Obtain after Close = %v", err)
	}
}
