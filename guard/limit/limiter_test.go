package limit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/testcontainers"
)

// algos builds one limiter of each algorithm allowing 3 calls at once.
var algos = []struct {
	name  string
	build func(Client, *Options) (Limiter, error)
}{
	{"fixed_window", func(c Client, o *Options) (Limiter, error) {
		return NewFixedWindow(c, FixedWindow{Limit: 3, Window: time.Minute}, o)
	}},
	{"fixed_window_lockout", func(c Client, o *Options) (Limiter, error) {
		return NewFixedWindow(c, FixedWindow{Limit: 3, Window: time.Minute, LockTime: time.Hour}, o)
	}},
	{"sliding_log", func(c Client, o *Options) (Limiter, error) {
		return NewSlidingLog(c, SlidingLog{Limit: 3, Window: time.Minute}, o)
	}},
	{"sliding_window", func(c Client, o *Options) (Limiter, error) {
		return NewSlidingWindow(c, SlidingWindow{Limit: 3, Window: time.Minute}, o)
	}},
	{"gcra", func(c Client, o *Options) (Limiter, error) {
		return NewGCRA(c, GCRA{Rate: PerMinute(3)}, o)
	}},
	{"funnel", func(c Client, o *Options) (Limiter, error) {
		return NewFunnel(c, Funnel{Capacity: 3, Leak: PerMinute(3)}, o)
	}},
}

func TestLimiter_AllowN_thenRefuseThenReset(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	for _, a := range algos {
		t.Run(a.name, func(t *testing.T) {
			lim, err := a.build(r.Client, &Options{Namespace: r.Namespace})
			if err != nil {
				t.Fatal(err)
			}
			key := "user:" + a.name
			res, err := lim.AllowN(ctx, key, 2)
			if err != nil || !res.Allowed || res.Remaining != 1 || res.Limit != 3 || res.RetryAfter != 0 || res.ResetAfter <= 0 {
				t.Fatalf("AllowN(2) on a fresh key = %+v, %v; want allowed, 1 remaining of 3", res, err)
			}
			// 2 more do not fit, and asking changes nothing (but a lockout).
			res, err = lim.AllowN(ctx, key, 2)
			if err != nil || res.Allowed || res.RetryAfter <= 0 {
				t.Fatalf("AllowN(2) with 1 left = %+v, %v; want refused with a RetryAfter", res, err)
			}
			if !strings.Contains(a.name, "lockout") {
				if res.Remaining != 1 {
					t.Fatalf("refused AllowN(2) with 1 left says Remaining %d", res.Remaining)
				}
				res, err = lim.Allow(ctx, key)
				if err != nil || !res.Allowed || res.Remaining != 0 {
					t.Fatalf("Allow with 1 left = %+v, %v; want allowed, 0 remaining", res, err)
				}
			}
			res, err = lim.Allow(ctx, key)
			if err != nil || res.Allowed || res.Remaining != 0 || res.RetryAfter <= 0 || res.RetryAfter > time.Hour+time.Second {
				t.Fatalf("Allow on a full key = %+v, %v; want refused, 0 remaining", res, err)
			}
			if err := lim.Reset(ctx, key); err != nil {
				t.Fatal(err)
			}
			res, err = lim.AllowN(ctx, key, 3)
			if err != nil || !res.Allowed || res.Remaining != 0 {
				t.Fatalf("AllowN(3) after Reset = %+v, %v; want allowed", res, err)
			}
			// Another key is independent.
			res, err = lim.AllowN(ctx, key+"!", 3)
			if err != nil || !res.Allowed {
				t.Fatalf("AllowN(3) on another key = %+v, %v; want allowed", res, err)
			}
		})
	}
}

func TestLimiter_badInput(t *testing.T) {
	r := testcontainers.Redis(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, a := range algos {
		t.Run(a.name, func(t *testing.T) {
			// FailOpen must not apply to bad input or a cancelled context.
			lim, err := a.build(r.Client, &Options{Namespace: r.Namespace, FailOpen: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, tc := range []struct {
				name string
				key  string
				n    int
				want error
			}{
				{"empty key", "", 1, keys.ErrInvalid},
				{"huge key", strings.Repeat("k", keys.MaxPart+1), 1, keys.ErrInvalid},
				{"n = 0", "k", 0, ErrInvalid},
				{"n < 0", "k", -1, ErrInvalid},
				{"n > limit", "k", 4, ErrInvalid},
			} {
				res, err := lim.AllowN(ctx, tc.key, tc.n)
				if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalid) || res.Allowed {
					t.Errorf("%s: AllowN = %+v, %v; want refused, %v", tc.name, res, err, tc.want)
				}
			}
			if err := lim.Reset(ctx, ""); !errors.Is(err, ErrInvalid) {
				t.Errorf("Reset(\"\") = %v, want ErrInvalid", err)
			}
			res, err := lim.Allow(canceled, "k")
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrFailedOpen) || res.Allowed {
				t.Errorf("Allow(cancelled ctx) = %+v, %v; want refused, context.Canceled", res, err)
			}
			if err := lim.Wait(canceled, "k"); !errors.Is(err, context.Canceled) {
				t.Errorf("Wait(cancelled ctx) = %v; want context.Canceled", err)
			}
		})
	}
}

func TestNew_badConfig(t *testing.T) {
	r := testcontainers.Redis(t)
	c := r.Client
	for name, build := range map[string]func() (any, error){
		"fixed window, no limit":  func() (any, error) { return NewFixedWindow(c, FixedWindow{Window: time.Second}, nil) },
		"fixed window, no window": func() (any, error) { return NewFixedWindow(c, FixedWindow{Limit: 1}, nil) },
		"fixed window, lock < 0": func() (any, error) {
			return NewFixedWindow(c, FixedWindow{Limit: 1, Window: time.Second, LockTime: -1}, nil)
		},
		"sliding log, no window":    func() (any, error) { return NewSlidingLog(c, SlidingLog{Limit: 1}, nil) },
		"sliding window, no limit":  func() (any, error) { return NewSlidingWindow(c, SlidingWindow{Window: time.Second}, nil) },
		"sliding window, too large": func() (any, error) { return NewSlidingWindow(c, SlidingWindow{Limit: 1 << 40, Window: time.Hour}, nil) },
		"gcra, no rate":             func() (any, error) { return NewGCRA(c, GCRA{}, nil) },
		"gcra, rate under 1µs":      func() (any, error) { return NewGCRA(c, GCRA{Rate: Rate{Limit: 10, Period: 5 * time.Microsecond}}, nil) },
		"gcra, burst < 0":           func() (any, error) { return NewGCRA(c, GCRA{Rate: PerSecond(1), Burst: -1}, nil) },
		"funnel, no capacity":       func() (any, error) { return NewFunnel(c, Funnel{Leak: PerSecond(1)}, nil) },
		"funnel, no leak":           func() (any, error) { return NewFunnel(c, Funnel{Capacity: 1}, nil) },
		"concurrency, no limit":     func() (any, error) { return NewConcurrency(c, Concurrency{}, nil) },
		"nil client":                func() (any, error) { return NewGCRA(nil, GCRA{Rate: PerSecond(1)}, nil) },
		"bad namespace": func() (any, error) {
			return NewGCRA(c, GCRA{Rate: PerSecond(1)}, &Options{Namespace: "a:b"})
		},
	} {
		if _, err := build(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestLimiter_keyLayout(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	lim, err := NewGCRA(r.Client, GCRA{Rate: PerSecond(5)}, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	// Keys that differ only by escaping stay apart, and none breaks out of
	// its hash tag.
	for _, key := range []string{"user:{42}", "user%3A%7B42%7D", "a b\n"} {
		res, err := lim.AllowN(ctx, key, 5)
		if err != nil || !res.Allowed {
			t.Fatalf("AllowN(%q, 5) = %+v, %v; want allowed (a fresh key)", key, res, err)
		}
	}
	for _, k := range []string{
		r.Namespace + ":rl:{gcra:user%3A%7B42%7D}",
		r.Namespace + ":rl:{gcra:user%253A%257B42%257D}",
		r.Namespace + ":rl:{gcra:a%20b%0A}",
	} {
		ttl, err := r.Client.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 2*time.Second {
			t.Errorf("key %s: PTTL %v, %v; want an expiry within 2s", k, ttl, err)
		}
	}
}

func TestOptions_defaultNamespace(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	lim, err := NewFixedWindow(r.Client, FixedWindow{Limit: 1, Window: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := r.Namespace // unique to this test
	if _, err := lim.Allow(ctx, key); err != nil {
		t.Fatal(err)
	}
	k := "ak:rl:{fw:" + key + "}"
	t.Cleanup(func() { r.Client.Del(context.Background(), k) })
	if n, err := r.Client.Exists(ctx, k).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS %s = %d, %v; want 1", k, n, err)
	}
}
