package limit

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

const (
	forever   = time.Duration(math.MaxInt64) // about 292 years
	centuries = 100 * 365 * 24 * time.Hour
)

// Windows, lock times and leak periods of centuries are absurd but valid:
// each limiter either refuses them in its constructor or keeps limiting,
// with positive RetryAfter and ResetAfter.
func TestLimiter_badInput_hugeDurations(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	o := &Options{Namespace: r.Namespace}
	for _, tc := range []struct {
		name  string
		build func() (Limiter, error)
	}{
		{"fixed window", func() (Limiter, error) { return NewFixedWindow(r.Client, FixedWindow{Limit: 2, Window: forever}, o) }},
		{"fixed window, lockout", func() (Limiter, error) {
			return NewFixedWindow(r.Client, FixedWindow{Limit: 2, Window: time.Minute, LockTime: forever}, o)
		}},
		{"sliding log", func() (Limiter, error) { return NewSlidingLog(r.Client, SlidingLog{Limit: 2, Window: forever}, o) }},
		{"sliding window", func() (Limiter, error) {
			return NewSlidingWindow(r.Client, SlidingWindow{Limit: 2, Window: forever}, o)
		}},
		{"gcra", func() (Limiter, error) { return NewGCRA(r.Client, GCRA{Rate: Rate{Limit: 2, Period: forever}}, o) }},
		{"funnel", func() (Limiter, error) {
			return NewFunnel(r.Client, Funnel{Capacity: 2, Leak: Rate{Limit: 1, Period: forever}}, o)
		}},
	} {
		lim, err := tc.build()
		if errors.Is(err, ErrInvalid) {
			continue // refused up front: fine
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		key := strings.ReplaceAll(tc.name, " ", "_")
		for i := 0; i < 2; i++ {
			if res, err := lim.Allow(ctx, key); err != nil || !res.Allowed || res.ResetAfter <= 0 {
				t.Errorf("%s: call %d = %+v, %v; want allowed with a positive ResetAfter", tc.name, i+1, res, err)
			}
		}
		res, err := lim.Allow(ctx, key)
		if err != nil || res.Allowed || res.RetryAfter < centuries || res.ResetAfter < centuries {
			t.Errorf("%s: third call = %+v, %v; want refused for centuries", tc.name, res, err)
		}
		// Wait sees at once that the next attempt is past its deadline.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = lim.Wait(wctx, key)
		cancel()
		if !errors.Is(err, ErrLimited) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Wait = %v, want ErrLimited at once", tc.name, err)
		}
	}
	// Every key kept a positive expiry (a negative one deletes the key).
	ks, err := r.Client.Keys(ctx, r.Namespace+":*").Result()
	if err != nil || len(ks) == 0 {
		t.Fatalf("keys = %v, %v", ks, err)
	}
	for _, k := range ks {
		if ms := r.Client.Do(ctx, "PTTL", k).Val().(int64); ms < 1000 {
			t.Errorf("PTTL %s = %dms", k, ms)
		}
	}
}

func TestLimiter_badInput_hugeLimits(t *testing.T) {
	r := testcontainers.Redis(t)
	c := r.Client
	for name, build := range map[string]func() (any, error){
		"fixed window": func() (any, error) {
			return NewFixedWindow(c, FixedWindow{Limit: math.MaxInt, Window: time.Second}, nil)
		},
		"sliding log": func() (any, error) { return NewSlidingLog(c, SlidingLog{Limit: math.MaxInt, Window: time.Second}, nil) },
		"sliding window": func() (any, error) {
			return NewSlidingWindow(c, SlidingWindow{Limit: math.MaxInt, Window: time.Second}, nil)
		},
		"gcra":        func() (any, error) { return NewGCRA(c, GCRA{Rate: PerSecond(1), Burst: math.MaxInt}, nil) },
		"funnel":      func() (any, error) { return NewFunnel(c, Funnel{Capacity: math.MaxInt, Leak: PerSecond(1)}, nil) },
		"concurrency": func() (any, error) { return NewConcurrency(c, Concurrency{Limit: math.MaxInt}, nil) },
		"gcra, rate":  func() (any, error) { return NewGCRA(c, GCRA{Rate: Rate{Limit: math.MaxInt, Period: forever}}, nil) },
	} {
		if _, err := build(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s with a limit past 2^53: %v, want ErrInvalid", name, err)
		}
	}
	// The largest exact limit still counts right.
	lim, err := NewFixedWindow(c, FixedWindow{Limit: 1 << 53, Window: time.Minute}, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := lim.AllowN(context.Background(), "k", 1<<52); err != nil || !res.Allowed || res.Remaining != 1<<52 {
		t.Errorf("AllowN(2^52) of 2^53 = %+v, %v; want allowed, 2^52 remaining", res, err)
	}
}

// A sliding log logs each call: one AllowN of a million calls would block
// the Redis server for seconds, so n is capped below a large Limit.
func TestSlidingLog_badInput_hugeN(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	// The largest call logs MaxSlidingLogN entries in one script: under
	// the race detector on a busy machine that outlasts DefaultTimeout.
	lim, err := NewSlidingLog(r.Client, SlidingLog{Limit: 1_000_000, Window: time.Minute}, &Options{Namespace: r.Namespace, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{MaxSlidingLogN + 1, 1_000_000} {
		res, err := lim.AllowN(ctx, "k", n)
		if !errors.Is(err, ErrInvalid) || res.Allowed || res.Limit != 1_000_000 {
			t.Errorf("AllowN(%d) = %+v, %v; want ErrInvalid", n, res, err)
		}
	}
	if n := r.Client.Exists(ctx, r.Namespace+":rl:{sl:k}").Val(); n != 0 {
		t.Fatal("a refused AllowN wrote the log")
	}
	res, err := lim.AllowN(ctx, "k", MaxSlidingLogN)
	if err != nil || !res.Allowed || res.Remaining != 1_000_000-MaxSlidingLogN {
		t.Fatalf("AllowN(MaxSlidingLogN) = %+v, %v", res, err)
	}
	// A small Limit is the bound, as for every limiter.
	small, err := NewSlidingLog(r.Client, SlidingLog{Limit: 3, Window: time.Minute}, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.AllowN(ctx, "s", 4); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "want 1 to 3") {
		t.Errorf("AllowN(4) of 3 = %v", err)
	}
}

func TestLimiter_badInput_resetCancelled(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, a := range algos {
		lim, err := a.build(r.Client, &Options{Namespace: r.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lim.AllowN(ctx, a.name, 3); err != nil {
			t.Fatal(err)
		}
		if err := lim.Reset(cancelled, a.name); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Reset(cancelled) = %v, want context.Canceled", a.name, err)
		}
		if res, err := lim.Allow(ctx, a.name); err != nil || res.Allowed {
			t.Errorf("%s: after a cancelled Reset, Allow = %+v, %v; want still refused", a.name, res, err)
		}
		if err := lim.Reset(ctx, strings.Repeat("k", 1<<20)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Reset(1 MB key) = %v, want ErrInvalid", a.name, err)
		}
	}
}

func TestSemaphore_badInput(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	// FailOpen must not apply to bad input or a cancelled context.
	s, err := NewConcurrency(r.Client, Concurrency{Limit: 1, LeaseTTL: forever}, &Options{Namespace: r.Namespace, FailOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", strings.Repeat("k", 1<<20)} {
		if l, err := s.TryAcquire(ctx, key); !errors.Is(err, ErrInvalid) || l != nil {
			t.Errorf("TryAcquire(%d-byte key) = %v, %v; want ErrInvalid", len(key), l, err)
		}
		if l, err := s.Acquire(ctx, key); !errors.Is(err, ErrInvalid) || l != nil {
			t.Errorf("Acquire(%d-byte key) = %v, %v; want ErrInvalid", len(key), l, err)
		}
		if err := s.Reset(ctx, key); !errors.Is(err, ErrInvalid) {
			t.Errorf("Reset(%d-byte key) = %v; want ErrInvalid", len(key), err)
		}
	}
	for op, f := range map[string]func() (*Lease, error){
		"TryAcquire": func() (*Lease, error) { return s.TryAcquire(cancelled, "k") },
		"Acquire":    func() (*Lease, error) { return s.Acquire(cancelled, "k") },
	} {
		if l, err := f(); !errors.Is(err, context.Canceled) || errors.Is(err, ErrFailedOpen) || l != nil {
			t.Errorf("%s(cancelled) = %v, %v; want context.Canceled and no lease", op, l, err)
		}
	}

	// A lease of a ttl of centuries holds its slot.
	l, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if other, err := s.TryAcquire(ctx, "k"); !errors.Is(err, ErrLimited) || other != nil {
		t.Fatalf("second TryAcquire of 1 slot = %v, %v; want ErrLimited", other, err)
	}
	for op, err := range map[string]error{"Release": l.Release(cancelled), "Refresh": l.Refresh(cancelled)} {
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s(cancelled) = %v, want context.Canceled", op, err)
		}
	}
	if err := l.Refresh(ctx); err != nil {
		t.Fatalf("Refresh after the cancelled calls = %v; the lease should still be held", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if l, err := s.TryAcquire(ctx, "k"); err != nil {
		t.Fatalf("TryAcquire after the release = %v", err)
	} else {
		_ = l.Release(ctx)
	}
}
