package limit

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// A refused call that waits its RetryAfter, with nothing else happening
// meanwhile, is allowed: RetryAfter is never too short.
func TestLimiter_RetryAfter_isEnough(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	ns := &Options{Namespace: r.Namespace}
	const w = 200 * time.Millisecond
	for name, build := range map[string]func() (Limiter, error){
		"fixed_window": func() (Limiter, error) { return NewFixedWindow(r.Client, FixedWindow{Limit: 3, Window: w}, ns) },
		"fixed_window_lockout": func() (Limiter, error) {
			return NewFixedWindow(r.Client, FixedWindow{Limit: 3, Window: w, LockTime: w}, ns)
		},
		"sliding_log":    func() (Limiter, error) { return NewSlidingLog(r.Client, SlidingLog{Limit: 3, Window: w}, ns) },
		"sliding_window": func() (Limiter, error) { return NewSlidingWindow(r.Client, SlidingWindow{Limit: 3, Window: w}, ns) },
		"gcra":           func() (Limiter, error) { return NewGCRA(r.Client, GCRA{Rate: Rate{Limit: 3, Period: w}}, ns) },
		"funnel": func() (Limiter, error) {
			return NewFunnel(r.Client, Funnel{Capacity: 3, Leak: Rate{Limit: 3, Period: w}}, ns)
		},
	} {
		t.Run(name, func(t *testing.T) {
			lim, err := build()
			if err != nil {
				t.Fatal(err)
			}
			key := "retry:" + name
			for round := range 3 {
				var res Result
				for {
					if res, err = lim.Allow(ctx, key); err != nil {
						t.Fatal(err)
					}
					if !res.Allowed {
						break
					}
				}
				if res.RetryAfter <= 0 || res.RetryAfter > 2*w {
					t.Fatalf("round %d: refused with RetryAfter %v, want in (0, %v]", round, res.RetryAfter, 2*w)
				}
				time.Sleep(res.RetryAfter)
				if res, err = lim.Allow(ctx, key); err != nil || !res.Allowed {
					t.Fatalf("round %d: after sleeping RetryAfter, Allow = %+v, %v; want allowed", round, res, err)
				}
			}
		})
	}
}

// The n members one AllowN adds to the log share one microsecond, and the
// calls of separate instances may too: each stays a member of its own.
func TestSlidingLog_sameMicrosecond(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	cfg := SlidingLog{Limit: 10, Window: time.Minute}
	a, err := NewSlidingLog(r.Client, cfg, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSlidingLog(r.NewClient(t), cfg, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.AllowN(ctx, "k", 6); err != nil || !res.Allowed || res.Remaining != 4 {
		t.Fatalf("AllowN(6) = %+v, %v; want allowed, 4 remaining", res, err)
	}
	if res, err := b.AllowN(ctx, "k", 4); err != nil || !res.Allowed || res.Remaining != 0 {
		t.Fatalf("AllowN(4) from another instance = %+v, %v; want allowed, 0 remaining", res, err)
	}
	key := r.Namespace + ":rl:{sl:k}"
	if n, err := r.Client.ZCard(ctx, key).Result(); err != nil || n != 10 {
		t.Fatalf("ZCARD %s = %d, %v; want 10 members", key, n, err)
	}
	if res, err := a.Allow(ctx, "k"); err != nil || res.Allowed {
		t.Fatalf("Allow on a full log = %+v, %v; want refused", res, err)
	}
}
