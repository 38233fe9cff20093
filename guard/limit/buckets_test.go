package limit

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// TestBuckets_areGCRAAndFunnel checks that the field's names are the same
// limiters: a token bucket shares its key's state with a GCRA of the same
// configuration, a leaky bucket with a Funnel, and bad configurations are
// refused the same way.
func TestBuckets_areGCRAAndFunnel(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	opts := &Options{Namespace: r.Namespace}
	pairs := []struct {
		name        string
		alias, orig func() (Limiter, error)
	}{
		{"token_bucket",
			func() (Limiter, error) {
				return NewTokenBucket(r.Client, TokenBucket{Rate: PerMinute(3), Burst: 2}, opts)
			},
			func() (Limiter, error) { return NewGCRA(r.Client, GCRA{Rate: PerMinute(3), Burst: 2}, opts) }},
		{"leaky_bucket",
			func() (Limiter, error) {
				return NewLeakyBucket(r.Client, LeakyBucket{Capacity: 2, Leak: PerMinute(3)}, opts)
			},
			func() (Limiter, error) { return NewFunnel(r.Client, Funnel{Capacity: 2, Leak: PerMinute(3)}, opts) }},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			alias, err := p.alias()
			if err != nil {
				t.Fatal(err)
			}
			orig, err := p.orig()
			if err != nil {
				t.Fatal(err)
			}
			key := "user:" + p.name
			if res, err := alias.AllowN(ctx, key, 2); err != nil || !res.Allowed || res.Limit != 2 || res.Remaining != 0 {
				t.Fatalf("AllowN(2) on the bucket = %+v, %v; want allowed, 0 of 2 remaining", res, err)
			}
			// The original sees the bucket's calls: the key is full.
			if res, err := orig.Allow(ctx, key); err != nil || res.Allowed || res.RetryAfter <= 0 {
				t.Fatalf("Allow on the original after the bucket filled the key = %+v, %v; want refused", res, err)
			}
		})
	}
	if _, err := NewTokenBucket(r.Client, TokenBucket{}, opts); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewTokenBucket with a zero rate: %v, want ErrInvalid", err)
	}
	if _, err := NewLeakyBucket(r.Client, LeakyBucket{Capacity: 1}, opts); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewLeakyBucket with no leak: %v, want ErrInvalid", err)
	}
}
