package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func newSemaphore(t *testing.T, c Client, ns string, cfg Concurrency) *Semaphore {
	t.Helper()
	s, err := NewConcurrency(c, cfg, &Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSemaphore_exact(t *testing.T) {
	backends(t, true, func(t *testing.T, r *testcontainers.RedisNamespace) {
		const limit = 5
		ctx := context.Background()
		run, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		var inFlight, most, acquired atomic.Int64
		var wg sync.WaitGroup
		for range hammerInstances {
			s, err := NewConcurrency(r.NewClient(t), Concurrency{Limit: limit, Poll: 20 * time.Millisecond}, hammerOptions(r.Namespace))
			if err != nil {
				t.Fatal(err)
			}
			for range hammerGoroutines {
				wg.Go(func() {
					for {
						l, err := s.Acquire(run, "db")
						if errors.Is(err, context.DeadlineExceeded) {
							return // the run is over
						}
						if err != nil {
							t.Errorf("Acquire: %v", err)
							return
						}
						// Counted only while the lease is surely held:
						// after Acquire returned, before Release is sent.
						n := inFlight.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						acquired.Add(1)
						time.Sleep(100 * time.Millisecond)
						inFlight.Add(-1)
						if err := l.Release(ctx); err != nil {
							t.Errorf("Release: %v", err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		t.Logf("%d leases, at most %d in flight", acquired.Load(), most.Load())
		if most.Load() > limit {
			t.Fatalf("%d in flight at once, the limit is %d", most.Load(), limit)
		}
		if most.Load() < limit {
			t.Fatalf("never more than %d in flight under load, the limit is %d", most.Load(), limit)
		}
	})
}

func TestSemaphore_crashedHolder(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	s := newSemaphore(t, r.Client, r.Namespace, Concurrency{Limit: 2, LeaseTTL: ttl})
	var crashed []*Lease
	for range 2 {
		l, err := s.TryAcquire(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		crashed = append(crashed, l) // never released: the holder "crashed"
	}
	start := time.Now()
	if l, err := s.TryAcquire(ctx, "job"); !errors.Is(err, ErrLimited) || l != nil {
		t.Fatalf("TryAcquire with both slots taken = %v, %v; want ErrLimited", l, err)
	}
	// The slots come back when the leases expire.
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := s.Acquire(wait, "job")
	if err != nil {
		t.Fatalf("Acquire after the leases expire = %v", err)
	}
	if d := time.Since(start); d < ttl-50*time.Millisecond {
		t.Fatalf("a slot came back after %v, before the lease time %v", d, ttl)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Both crashed leases have surely expired now; Acquire may have seen
	// only the first one go.
	time.Sleep(ttl)
	for _, c := range crashed {
		if err := c.Release(ctx); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Release of an expired lease = %v, want ErrLeaseLost", err)
		}
		if err := c.Refresh(ctx); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Refresh of an expired lease = %v, want ErrLeaseLost", err)
		}
	}
}

func TestLease_Refresh_keepsTheSlot(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	// Refreshed every ttl/4: one round may stall for 1.5 s before the
	// lease lapses.
	const ttl = 2 * time.Second
	s := newSemaphore(t, r.Client, r.Namespace, Concurrency{Limit: 1, LeaseTTL: ttl})
	l, err := s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	for range 6 { // 3 s, past the lease time
		time.Sleep(ttl / 4)
		if err := l.Refresh(ctx); err != nil {
			t.Fatalf("Refresh = %v", err)
		}
		if other, err := s.TryAcquire(ctx, "job"); !errors.Is(err, ErrLimited) {
			t.Fatalf("TryAcquire while a refreshed lease holds the slot = %v, %v; want ErrLimited", other, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second Release = %v, want ErrLeaseLost", err)
	}
	other, err := s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatalf("TryAcquire after Release = %v", err)
	}
	_ = other.Release(ctx)
}

func TestSemaphore_Acquire_waitsForRelease(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	s := newSemaphore(t, r.Client, r.Namespace, Concurrency{Limit: 1, Poll: 10 * time.Millisecond})
	held, err := s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s.Acquire(ctx, "job")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v while the only slot was held", err)
	default:
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not get the released slot")
	}

	// A context that ends first ends Acquire.
	held, err = s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if l, err := s.Acquire(short, "job"); l != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v, %v; want DeadlineExceeded", l, err)
	}
	_ = held.Release(ctx)
}

func TestSemaphore_Reset(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	s := newSemaphore(t, r.Client, r.Namespace, Concurrency{Limit: 1})
	l, err := s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Release after Reset = %v, want ErrLeaseLost", err)
	}
	l, err = s.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatalf("TryAcquire after Reset = %v", err)
	}
	_ = l.Release(ctx)
	if _, err := s.TryAcquire(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("TryAcquire(\"\") = %v, want ErrInvalid", err)
	}
	if err := s.Reset(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reset(\"\") = %v, want ErrInvalid", err)
	}
}
