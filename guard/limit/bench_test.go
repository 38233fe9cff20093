package limit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// The benchmarks allow (nearly) every call, so that each measures the
// common path: one script call that updates the state. They run on a
// private redis-server, so that its command statistics are theirs alone:
// besides the client's ns/op they report srv-µs/op, the time Redis spent
// running the scripts, which a loaded client machine does not distort.
// go-redis/redis_rate's GCRA is compared with this package's, side by
// side, by BenchmarkGCRA in the module benchmarks/peers (the library does
// not require redis_rate).

// benchServer starts a private redis-server and returns a client of it.
func benchServer(b *testing.B) *redis.Client {
	b.Helper()
	srv := testcontainers.NewRedisServer(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func BenchmarkAllow(b *testing.B) {
	c := benchServer(b)
	ns := &Options{Namespace: "bench"}
	const many = 1_000_000 // per second: never reached
	for _, bc := range []struct {
		name  string
		build func() (Limiter, error)
	}{
		{"fixed_window", func() (Limiter, error) {
			return NewFixedWindow(c, FixedWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_log", func() (Limiter, error) {
			return NewSlidingLog(c, SlidingLog{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_window", func() (Limiter, error) {
			return NewSlidingWindow(c, SlidingWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"gcra", func() (Limiter, error) {
			return NewGCRA(c, GCRA{Rate: PerSecond(many)}, ns)
		}},
		{"funnel", func() (Limiter, error) {
			return NewFunnel(c, Funnel{Capacity: many, Leak: PerSecond(many)}, ns)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim, err := bc.build()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			testkit.ScriptLoop(b, c, func() error {
				_, err := lim.Allow(ctx, "bench")
				return err
			})
		})
	}
	b.Run("concurrency", func(b *testing.B) {
		s, err := NewConcurrency(c, Concurrency{Limit: many}, ns)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		testkit.ScriptLoop(b, c, func() error { // TryAcquire and Release: two round trips
			l, err := s.TryAcquire(ctx, "bench")
			if err != nil {
				return err
			}
			return l.Release(ctx)
		})
	})
}

// BenchmarkAllow_redisDown measures a FailOpen limiter whose Redis is cut
// (behind a fault proxy), with default Options, once its breaker has
// opened: every call is answered at once, without a round trip. (The
// Options.BreakerThreshold calls that open it are not timed; each waits
// for its failure, at most Options.Timeout.)
func BenchmarkAllow_redisDown(b *testing.B) {
	srv := testcontainers.NewRedisServer(b)
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	c := redis.NewClient(&redis.Options{Addr: p.Addr()}) // go-redis defaults: 3 retries, 3 s reads
	b.Cleanup(func() { _ = c.Close() })
	lim, err := NewGCRA(c, GCRA{Rate: PerSecond(1_000_000)}, &Options{Namespace: "bench", FailOpen: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	p.Cut()
	// The calls that open the breaker each wait out a failure (up to
	// Timeout): made before the timer starts, so that ns/op is the cost
	// of a call with the breaker open.
	for lim.Stats().BreakerOpens == 0 {
		if _, err := lim.Allow(ctx, "bench"); !errors.Is(err, ErrFailedOpen) {
			b.Fatal(err)
		}
	}
	before := lim.Stats().Bypassed
	b.ResetTimer()
	for range b.N {
		if res, err := lim.Allow(ctx, "bench"); !res.Allowed || !errors.Is(err, ErrFailedOpen) {
			b.Fatalf("Allow with Redis cut = %+v, %v", res, err)
		}
	}
	b.StopTimer()
	st := lim.Stats()
	b.ReportMetric(float64(st.Bypassed-before)/float64(b.N), "bypassed/op")
}
