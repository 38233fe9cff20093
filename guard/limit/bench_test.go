package limit

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/go-redis/redis_rate/v10"
)

// The benchmarks allow (nearly) every call, so that each measures the
// common path: one script call that updates the state.

func BenchmarkAllow(b *testing.B) {
	r := testcontainers.Redis(b)
	ns := &Options{Namespace: r.Namespace}
	const many = 1_000_000 // per second: never reached
	for _, bc := range []struct {
		name  string
		build func() (Limiter, error)
	}{
		{"fixed_window", func() (Limiter, error) {
			return NewFixedWindow(r.Client, FixedWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_log", func() (Limiter, error) {
			return NewSlidingLog(r.Client, SlidingLog{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_window", func() (Limiter, error) {
			return NewSlidingWindow(r.Client, SlidingWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"gcra", func() (Limiter, error) {
			return NewGCRA(r.Client, GCRA{Rate: PerSecond(many)}, ns)
		}},
		{"funnel", func() (Limiter, error) {
			return NewFunnel(r.Client, Funnel{Capacity: many, Leak: PerSecond(many)}, ns)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim, err := bc.build()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				if _, err := lim.Allow(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("concurrency", func(b *testing.B) {
		s, err := NewConcurrency(r.Client, Concurrency{Limit: many}, ns)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for b.Loop() { // one TryAcquire and one Release: two round trips
			l, err := s.TryAcquire(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRedisRate_Allow is go-redis/redis_rate v10's GCRA on the same
// server, for comparison.
func BenchmarkRedisRate_Allow(b *testing.B) {
	r := testcontainers.Redis(b)
	lim := redis_rate.NewLimiter(r.Client)
	limit := redis_rate.PerSecond(1_000_000)
	key := r.Namespace + ":redis_rate" // redis_rate prefixes it with "rate:"
	ctx := context.Background()
	b.Cleanup(func() { _ = lim.Reset(context.Background(), key) })
	for b.Loop() {
		if _, err := lim.Allow(ctx, key, limit); err != nil {
			b.Fatal(err)
		}
	}
}
